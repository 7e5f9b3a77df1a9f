"""The admin audit log in the state database: one row per admin command.

:func:`args_json` checks a record's arguments before any transaction starts;
:func:`append` and :func:`newest` run inside a connection or transaction the
caller holds (:class:`~catalogd.state.store.StateStore`, which fences writes and
maps driver errors). Times are stored as microseconds since the epoch, UTC; the
records read back are :class:`~catalogd.state.values.AuditRecord` s. Used only by
:mod:`catalogd.state.store`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa

from catalogd.state.schema import admin_audit
from catalogd.state.values import AuditRecord
from subscriber.protocol.errors import InvalidRequestError

__all__ = ["append", "args_json", "newest"]


def args_json(command: str, args: Mapping[str, Any]) -> str:
    """``args`` as the JSON text the log stores (keys sorted).

    Raises:
        InvalidRequestError: empty command, or ``args`` not JSON-serializable.
    """
    if not command:
        raise InvalidRequestError("an audit record needs a command name")
    try:
        return json.dumps(dict(args), sort_keys=True, default=_reject)
    except (TypeError, ValueError) as exc:
        raise InvalidRequestError(f"audit args of {command!r} are not JSON: {exc}") from exc


def append(
    conn: sa.Connection,
    command: str,
    args_text: str,
    requester: str | None,
    outcome: str,
    version: int | None,
    at: datetime,
) -> int:
    """Insert one record (``at`` naive: taken as UTC); its id."""
    result = conn.execute(
        admin_audit.insert().values(
            at_us=_to_epoch_us(at),
            command=command,
            args=args_text,
            requester=requester,
            outcome=outcome,
            version=version,
        )
    )
    key = result.inserted_primary_key
    assert key is not None  # a single-row insert always has one
    return int(key[0])


def newest(conn: sa.Connection, limit: int) -> list[AuditRecord]:
    """The newest ``limit`` records, newest first."""
    query = sa.select(admin_audit).order_by(admin_audit.c.id.desc()).limit(limit)
    return [AuditRecord.from_row(r) for r in conn.execute(query)]


def _to_epoch_us(at: datetime) -> int:
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    delta = at - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _reject(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not JSON-serializable")
