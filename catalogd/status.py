"""What a running catalogd reports about itself.

One shape of the catalog (:func:`catalog_shape`: version, delta log, objects by
type, tables loaded and still to load) feeds all three reports:

* :func:`status_detail`: the dict the admin ``status`` command answers;
* :func:`status_line`: the systemd ``STATUS=`` line;
* the metrics (``Metrics.set_catalog``), set by the daemon from the same shape.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from catalogd.core import plans
from catalogd.core.catalog import Catalog
from catalogd.runtime_info import RuntimeInfo

if TYPE_CHECKING:
    from catalogd.loading.table_loader import TableLoader
    from catalogd.server.thread import CatalogServer


@dataclass(frozen=True)
class CatalogShape:
    """Counts describing the catalog at one version."""

    version: int
    delta_log_floor: int
    objects_by_type: dict[str, int]
    tables_loaded: int
    tables_not_loaded: int


def catalog_shape(catalog: Catalog) -> CatalogShape:
    """The shape of ``catalog``; run it on the server thread (``server.submit``)."""
    counts = catalog.counts_by_type()
    unloaded = len(plans.unloaded_tables(catalog))
    tables = counts.get("TABLE", 0) + counts.get("VIEW", 0)
    return CatalogShape(
        version=catalog.version,
        delta_log_floor=catalog.floor,
        objects_by_type=dict(counts),
        tables_loaded=tables - unloaded,
        tables_not_loaded=unloaded,
    )


def read_shape(server: CatalogServer) -> CatalogShape:
    """The catalog's current shape (one round trip to the server thread)."""
    return server.submit(catalog_shape).result()


def status_line(shape: CatalogShape, subscribers: int) -> str:
    """The one-line summary systemd shows (``STATUS=``)."""
    counts = shape.objects_by_type
    return (
        f"version {shape.version}: {counts.get('DATABASE', 0)} databases, "
        f"{shape.tables_loaded} tables loaded, {shape.tables_not_loaded} to load, "
        f"{counts.get('HDFS_PARTITION', 0)} partitions, "
        f"{subscribers} subscribers"
    )


def status_detail(
    server: CatalogServer,
    loader: TableLoader,
    info: RuntimeInfo,
    barrier_live: dict[str, tuple[int, float]],
) -> dict[str, Any]:
    """What the admin ``status`` command answers (JSON-ready)."""
    shape = read_shape(server)
    now = time.time()
    stats = server.stats
    keys = server.subscriber_keys()  # client id -> CURVE key name (empty without keys)
    follows = server.subscriber_databases()  # client id -> databases it follows
    return {
        "version": shape.version,
        "delta_log": {"from": shape.delta_log_floor, "to": shape.version},
        "objects": dict(sorted(shape.objects_by_type.items())),
        "tables_loaded": shape.tables_loaded,
        "tables_not_loaded": shape.tables_not_loaded,
        "service_id": server.service_id,
        "endpoint": server.endpoint,
        "pub_endpoint": server.pub_endpoint,
        "uptime_s": round(now - info.facts.started_at, 3),
        "names_published_s": info.facts.names_published_s,
        "all_loaded_s": info.health.all_loaded_s,
        "loading": info.reports.loading() if info.reports.loading else None,
        "loader": {
            "queued": loader.queued,
            "loaded": loader.stats.loaded,
            "skipped": loader.stats.skipped,
            "failed": loader.stats.failed,
            "slowest": [
                {"db": db, "table": table, "seconds": round(seconds, 3)}
                for seconds, db, table in loader.stats.slowest_first()
            ],
        },
        "hms": {
            "address": info.facts.hms_address,
            "healthy": info.health.hms_healthy,
            "error": info.health.hms_error,
            "embedded": info.reports.embedded_hms() if info.reports.embedded_hms else None,
        },
        "change_detection": info.health.detector,
        "published": {"messages": stats.published_messages, "bytes": stats.published_bytes},
        "snapshots": stats.snapshots,
        "catch_ups": stats.catch_ups,
        "garbage_messages": stats.garbage,
        "refused": {
            "reports": stats.reports_refused,
            "hellos_of_older_subscribers": stats.hellos_refused,
            "loads_of_unknown_tables": stats.load_requests_unknown,
            "busy": stats.busy,
            "snapshots_replaced": stats.snapshot_jobs_replaced,
        },
        "snapshot_jobs": stats.snapshot_jobs,
        "subscribers": {
            client: {
                "applied_version": version,
                "last_report_age_s": round(now - seen, 3),
                "live": client in barrier_live,
                "key": keys.get(client),
                "databases": follows.get(client),
            }
            for client, (version, seen) in sorted(dict(stats.subscribers).items())
        },
        "security": info.reports.security()
        if info.reports.security
        else {"mode": "plain (loopback only)"},
    }
