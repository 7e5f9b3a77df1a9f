"""Admin command handlers: invalidate, refresh, status.

Each handler takes a ``TAdminRequest`` and returns an
:class:`~catalogd.admin.AdminResult`; errors are our exceptions, which the
admin endpoint maps to status codes. Handlers run on admin worker threads.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import idl
from catalogd import plans
from catalogd.admin import AdminResult, Handler, table_name
from catalogd.catalog import Catalog
from catalogd.lazy import TableLoader
from catalogd.operations import Operations
from catalogd.server import CatalogServer
from subscriber.errors import InvalidRequestError
from subscriber.keys import object_type_of

svc = idl.catalog_service
Cmd = svc.TAdminCommand


@dataclass
class RuntimeInfo:
    """Facts about this process that status reports (set by the daemon)."""

    started_at: float = field(default_factory=time.time)
    names_published_s: float | None = None
    all_loaded_s: float | None = None
    hms_address: str = ""
    hms_healthy: bool = True
    hms_error: str | None = None
    detector: str = "off"


def invalidate(ops: Operations, loader: TableLoader, request: Any) -> AdminResult:
    """``invalidate`` (all), ``invalidate DB`` or ``invalidate DB.TABLE``."""
    if request.tbl_name:
        name = table_name(request)
        version = ops.invalidate_table(name.db, name.table)
        queued = loader.enqueue_unloaded(name.db)
        return AdminResult(version, {"target": str(name), "queued_for_load": queued})
    if request.db_name:
        version = ops.load_names(request.db_name, reset=True)
        queued = loader.enqueue_unloaded(request.db_name.lower())
        return AdminResult(version, {"target": request.db_name.lower(), "queued_for_load": queued})
    version = ops.load_names(reset=True)
    queued = loader.enqueue_unloaded()
    return AdminResult(version, {"target": "*", "queued_for_load": queued})


def refresh(ops: Operations, request: Any) -> AdminResult:
    """``refresh DB.TABLE [--partition k=v/k2=v2 ...]``: reload now, publish the difference."""
    name = table_name(request)
    before = ops.version()
    if request.partitions:
        version = ops.refresh_partitions(name.db, name.table, request.partitions)
    else:
        version = ops.load_table(name.db, name.table)
    detail = {"target": str(name), "changes": version - before}
    if request.partitions:
        detail["partitions"] = list(request.partitions)
    return AdminResult(version, detail)


def status_detail(
    server: CatalogServer,
    loader: TableLoader,
    info: RuntimeInfo,
    barrier_live: dict[str, tuple[int, float]],
) -> dict[str, Any]:
    def read(catalog: Catalog) -> dict[str, Any]:
        counts = Counter(object_type_of(e.key) for e in catalog.live_entries())
        unloaded = len(plans.unloaded_tables(catalog))
        tables = counts.get("TABLE", 0) + counts.get("VIEW", 0)
        return {
            "version": catalog.version,
            "delta_log": {"from": catalog.floor, "to": catalog.version},
            "objects": dict(sorted(counts.items())),
            "tables_loaded": tables - unloaded,
            "tables_not_loaded": unloaded,
        }

    detail = server.submit(read).result()
    now = time.time()
    stats = server.stats
    detail.update(
        service_id=server.service_id,
        endpoint=server.endpoint,
        pub_endpoint=server.pub_endpoint,
        uptime_s=round(now - info.started_at, 3),
        names_published_s=info.names_published_s,
        all_loaded_s=info.all_loaded_s,
        loader={
            "queued": loader.queued,
            "loaded": loader.stats.loaded,
            "failed": loader.stats.failed,
        },
        hms={"address": info.hms_address, "healthy": info.hms_healthy, "error": info.hms_error},
        change_detection=info.detector,
        published={"messages": stats.published_messages, "bytes": stats.published_bytes},
        snapshots=stats.snapshots,
        catch_ups=stats.catch_ups,
        garbage_messages=stats.garbage,
        subscribers={
            client: {
                "applied_version": version,
                "last_report_age_s": round(now - seen, 3),
                "live": client in barrier_live,
            }
            for client, (version, seen) in sorted(dict(stats.subscribers).items())
        },
    )
    return detail


def handlers(
    server: CatalogServer,
    ops: Operations,
    loader: TableLoader,
    info: RuntimeInfo,
    live: Any,
) -> dict[int, Handler]:
    """The handler table for :class:`~catalogd.admin.AdminServer`."""

    def status(request: Any) -> AdminResult:
        detail = status_detail(server, loader, info, live())
        return AdminResult(None, detail)

    def refresh_handler(request: Any) -> AdminResult:
        return refresh(ops, request)

    def invalidate_handler(request: Any) -> AdminResult:
        if request.partitions:
            raise InvalidRequestError("invalidate takes no partitions; use refresh")
        return invalidate(ops, loader, request)

    return {
        Cmd.STATUS: status,
        Cmd.INVALIDATE: invalidate_handler,
        Cmd.REFRESH: refresh_handler,
    }
