"""``catalogd serve``: load the catalog from HMS and publish it until told to stop.

A boring daemon: no self-daemonizing, no pidfile, logs to stderr. Signal
handlers only set a flag; the main thread does the work. With no HMS address
it starts the embedded HMS (Derby, from the pyspark jars) in its data directory.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from catalogd.admin import DEFAULT_ADMIN_PORT, AdminServer, SubscriberBarrier
from catalogd.commands import RuntimeInfo, handlers
from catalogd.detector import ChangeDetector
from catalogd.lazy import TableLoader
from catalogd.loader import ThriftSource
from catalogd.metastore.client import MetastoreClient
from catalogd.operations import Operations
from catalogd.server import CatalogServer, ServerConfig
from subscriber.errors import CatalogError

log = logging.getLogger("catalogd")


@dataclass(frozen=True)
class ServeOptions:
    hms_uri: str | None
    data_dir: Path
    server: ServerConfig = field(default_factory=ServerConfig)
    admin_bind: str = f"tcp://127.0.0.1:{DEFAULT_ADMIN_PORT}"
    demo: bool = False
    hms_timeout_s: float = 60.0
    loader_pool_size: int = 4
    change_detection: str = "auto"
    poll_interval_s: float = 5.0
    poll_max_calls_per_s: float = 100.0
    sync_dead_after_s: float | None = None  # default: 3 heartbeats + 1 s


def open_metastore(stack: ExitStack, hms_uri: str | None, data_dir: Path) -> str:
    """The HMS address to use: the given one, or an embedded HMS started in ``data_dir``."""
    if hms_uri:
        return hms_uri
    from catalogd.metastore.embedded import EmbeddedMetastore

    log.info("no --hms given: starting the embedded Hive Metastore in %s", data_dir / "hms")
    metastore = stack.enter_context(EmbeddedMetastore(data_dir / "hms"))
    log.info("embedded Hive Metastore listening at %s", metastore.uri)
    return metastore.uri


def serve(
    options: ServeOptions,
    *,
    stop: threading.Event | None = None,
    on_ready: Callable[[CatalogServer], None] | None = None,
) -> int:
    """Run until SIGTERM/SIGINT (or ``stop`` is set). Returns the exit code."""
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
    options.data_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        uri = open_metastore(stack, options.hms_uri, options.data_dir)
        if options.demo:
            from catalogd.metastore.demo import create_demo_warehouse

            with MetastoreClient(uri, timeout_s=options.hms_timeout_s) as client:
                warehouse = (options.data_dir / "warehouse").resolve().as_uri()
                if create_demo_warehouse(client, warehouse):
                    log.info("created the demo warehouse (database 'demo')")
        loader_ref: list[TableLoader] = []
        server = CatalogServer(
            options.server,
            on_load_request=lambda db, table: (
                loader_ref[0].request(db, table, urgent=True) if loader_ref else None
            ),
        )

        def source() -> ThriftSource:
            return ThriftSource(MetastoreClient(uri, timeout_s=options.hms_timeout_s))

        ops = Operations(server, source)
        stack.callback(ops.close)
        # Read the event id before loading, so no event after it can be missed.
        start_event = _current_event_id(ops) if options.change_detection != "off" else 0
        started = time.monotonic()
        version = ops.load_names()  # before start(): the first snapshot has the names
        info = RuntimeInfo(hms_address=uri, names_published_s=time.monotonic() - started)
        server.start()
        stack.callback(server.close)
        table_loader = TableLoader(ops, pool_size=options.loader_pool_size).start()
        loader_ref.append(table_loader)
        stack.callback(table_loader.close)
        queued = table_loader.enqueue_unloaded()
        dead_after = options.sync_dead_after_s or 3 * options.server.heartbeat_interval_s + 1.0
        barrier = SubscriberBarrier(lambda: dict(server.stats.subscribers), dead_after_s=dead_after)
        admin = AdminServer(
            options.admin_bind, handlers(server, ops, table_loader, info, barrier.live), barrier
        ).start()
        stack.callback(admin.close)
        detector = ChangeDetector(
            ops,
            table_loader,
            info,
            interval_s=options.poll_interval_s,
            mode=options.change_detection,
            max_calls_per_s=options.poll_max_calls_per_s,
            start_event_id=start_event,
        ).start()
        stack.callback(detector.close)
        log.info(
            "initial catalog published: version %d (names of %d tables; loading them in the "
            "background) in %.2fs; serving at %s (publisher %s, admin %s, service id %s)",
            version,
            queued,
            info.names_published_s,
            server.endpoint,
            server.pub_endpoint,
            admin.endpoint,
            server.service_id,
        )
        threading.Thread(
            target=_report_loaded,
            args=(table_loader, info, started, stop),
            name="catalogd-load-watch",
            daemon=True,
        ).start()
        if on_ready is not None:
            on_ready(server)
        stop.wait()
        log.info("stopping")
        admin.stop_accepting()
    return 0


def _current_event_id(ops: Operations) -> int:
    try:
        return ops.source().client.get_current_notification_event_id()  # type: ignore[attr-defined]
    except CatalogError as exc:
        log.warning("cannot read the HMS notification event id: %s", exc)
        return 0


def _report_loaded(
    loader: TableLoader, info: RuntimeInfo, started: float, stop: threading.Event
) -> None:
    while not stop.is_set():
        if loader.wait_idle(1.0):
            info.all_loaded_s = time.monotonic() - started
            log.info(
                "background load done: %d tables loaded, %d failed, in %.2fs",
                loader.stats.loaded,
                loader.stats.failed,
                info.all_loaded_s,
            )
            return
