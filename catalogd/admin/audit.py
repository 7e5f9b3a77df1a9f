"""What each admin command leaves behind: the audit log row, the metrics, the log line.

Requests are recorded as the client sent them but with control characters
escaped (a newline in a name must not forge a line); with CURVE keys the
requester is the key's name. Refused admin connections are recorded too.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from catalogd import logs
from catalogd.metrics import Metrics
from catalogd.security.authenticator import ADMIN
from catalogd.state.store import StateStore
from subscriber.protocol.errors import CatalogError

log = logging.getLogger("catalogd")


def escaped(value: Any) -> Any:
    """An audit argument with control characters escaped in every string it holds."""
    if isinstance(value, str):
        return logs.escape(value)
    if isinstance(value, list):
        return [escaped(v) for v in value]
    if isinstance(value, dict):
        return {logs.escape(k): escaped(v) for k, v in value.items()}
    return value


def admin_done(
    metrics: Metrics, store: StateStore, request: Any, response: Any, seconds: float
) -> None:
    """Count, audit and log one answered admin command (the admin endpoint's ``on_done``)."""
    import idl

    svc = idl.catalog_service
    command = svc.TAdminCommand._VALUES_TO_NAMES.get(request.command, str(request.command)).lower()
    outcome = svc.TStatusCode._VALUES_TO_NAMES.get(response.status.code, "?").lower()
    metrics.count_admin(command, outcome)
    if request.command not in (svc.TAdminCommand.AUDIT, svc.TAdminCommand.STATUS):
        args = {
            "db": request.db_name,
            "table": request.tbl_name,
            "partitions": request.partitions,
            "sync": request.sync,
            "options": request.options,
        }
        try:
            store.record_admin(
                command,
                {k: escaped(v) for k, v in args.items() if v},
                logs.escape(request.requester) if request.requester is not None else None,
                outcome
                if response.status.code == 0
                else logs.escape(f"{outcome}: {response.status.message}"),
                response.version,
                datetime.datetime.now(datetime.timezone.utc),
            )
        except CatalogError as exc:
            log.warning("could not write the audit log: %s", exc)
    target = ".".join(p for p in (request.db_name, request.tbl_name) if p) or "*"
    log.info(
        "admin %s %s by %s: %s%s in %.3fs",
        command,
        target,
        request.requester or "unknown",
        outcome,
        f" at version {response.version}" if response.version is not None else "",
        seconds,
    )


def record_refusal(store: StateStore, domain: str, address: str, name: str, reason: str) -> None:
    """An admin connection refused by ZAP goes into the audit log under the key's name."""
    if domain != ADMIN:
        return
    try:
        store.record_admin(
            "connect",
            {"address": address},
            name,
            f"refused: {reason} (not an admin key)",
            None,
            datetime.datetime.now(datetime.timezone.utc),
        )
    except CatalogError as exc:
        log.warning("could not write the audit log: %s", exc)
