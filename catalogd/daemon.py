"""``catalogd serve``: load the catalog from HMS and publish it until told to stop.

A boring daemon: no self-daemonizing, no pidfile, logs to stderr for journald.
:func:`serve` wires the parts together in start-up order; then the main thread
runs :func:`catalogd.supervision.supervise` (signal flags, systemd watchdog,
``STATUS=``, metrics, SIGHUP reload) until a graceful stop (SIGTERM). Which HMS
to use: :mod:`catalogd.hms.connection`; what an admin command leaves
behind: :mod:`catalogd.admin.audit`.

Start-up order: (embedded HMS) → names of every database and table, committed
before any socket is bound (so the first snapshot is never empty) → sockets →
``READY=1`` → background table loads, admin endpoint, change detection.

With ``ha.enabled`` (:mod:`catalogd.ha.node`) a standby does all of that except
binding the subscriber sockets, sends ``READY=1`` once loaded, and waits for the
lease; on taking it over it renumbers its catalog above the shared high-water mark
and only then binds and publishes.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import Any

from catalogd.admin.audit import admin_done, record_refusal
from catalogd.admin.barrier import SubscriberBarrier
from catalogd.admin.endpoint import AdminServer
from catalogd.admin.handlers import RuntimeInfo, handlers
from catalogd.config import Config, load_config
from catalogd.core import cache_pools as caching
from catalogd.files.metadata import FileMetadata
from catalogd.freshness.detector import ChangeDetector
from catalogd.freshness.files import FileWatcher
from catalogd.freshness.sql_detection import SqlPoller
from catalogd.ha import node as ha_node
from catalogd.ha.keeper import LeaseKeeper
from catalogd.hms.connection import InstrumentedClient, create_demo, open_metastore
from catalogd.loading.progress import LoadProgress
from catalogd.loading.table_loader import TableLoader
from catalogd.loading.workers import LoadWorkers
from catalogd.metrics import Metrics
from catalogd.notify import Notifier
from catalogd.security.authenticator import ADMIN, SUBSCRIBERS
from catalogd.security.runtime import Security
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import MetastoreSource, ThriftSource
from catalogd.sources.sql import SqlSource
from catalogd.sources.sql.fingerprints import partition_count
from catalogd.state.schema import private_sqlite_file
from catalogd.state.store import StateStore
from catalogd.status import read_shape, status_line
from catalogd.supervision import Signals, supervise, take_over
from catalogd.writes.operations import Operations
from subscriber.protocol.errors import CatalogError

log = logging.getLogger("catalogd")

STOP_TIMEOUT_S = 20.0


def serve(
    config: Config,
    *,
    environ: Mapping[str, str],
    reload_config: Callable[[], Config] | None = None,
    demo: bool = False,
    signals: Signals | None = None,
) -> int:
    """Run until SIGTERM/SIGINT (or ``signals.stop``). Returns the exit code.

    Args:
        config: the resolved configuration.
        environ: the process environment, for the systemd notify protocol only.
        reload_config: re-reads the configuration on SIGHUP (None: reload off).
        demo: create a small demo warehouse in HMS first.
    """
    # Before anything starts a thread: the load workers are then forked from this
    # process, which has imported all they run (LoadWorkers.start).
    workers: LoadWorkers | None = None
    if config.hms.db_url and config.loader.processes:
        factory = functools.partial(SqlSource, config.hms.db_url)
        workers = LoadWorkers(factory, config.loader.processes).start()
    try:
        security = Security.open(config)  # an exposed address without keys starts nothing
    except BaseException:
        if workers is not None:
            workers.close()
        raise
    signals = signals or Signals()
    signals.install()
    notifier = Notifier(environ)
    metrics = Metrics()
    config.data_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        if workers is not None:
            stack.callback(workers.close)
        stack.callback(security.close)
        stack.callback(notifier.close)
        if config.metrics.bind:
            port = metrics.start_http(config.metrics.bind)
            stack.callback(metrics.close)
            log.info(
                "metrics at http://%s:%d/metrics", config.metrics.bind.rpartition(":")[0], port
            )
        embedded: list[Callable[[], dict[str, Any]]] = []
        if config.hms.db_url and not config.hms.uris:
            uri = SqlSource(config.hms.db_url).address  # no HMS needed to read the catalog
        else:
            uri = open_metastore(
                stack, config.hms.uris, config.data_dir, supervised=embedded.append
            )
        if demo:
            create_demo(uri, config.data_dir, config.hms.timeout_s)
        private_sqlite_file(config.state.url)
        store = stack.enter_context(StateStore.open(config.state.url))
        security.on_refused = lambda domain, address, name, reason: record_refusal(
            store, domain, address, name, reason
        )
        high_water = store.high_water_mark()
        log.info("state store %s: versions continue after %d", store.url, high_water)
        keeper = ha_node.open_keeper(config, store, signals.wake) if config.ha.enabled else None
        if keeper is not None:
            stack.callback(keeper.release)  # runs after server.close (LIFO): hand over now
        # The loader exists before the server (whose load requests it takes) and
        # gets the Operations, made over the server, when it starts.
        table_loader = TableLoader(
            pool_size=config.loader.pool_size,
            on_loaded=lambda seconds: metrics.observe_load("table", seconds),
        )
        server = CatalogServer(
            ServerConfig(
                bind=config.server.bind,
                pub_bind=config.server.pub_bind,
                advertise_host=config.server.advertise_host,
                heartbeat_interval_s=config.server.heartbeat_interval_s,
                start_version=high_water,
                curve=security.server_curve,
            ),
            context=security.context,
            on_load_request=table_loader.request_urgent,
            on_reload_request=table_loader.request_reload,
            reserve=store.reserve if keeper is None else ha_node.fenced_reserve(keeper, store),
        )

        def source() -> MetastoreSource:
            if config.hms.db_url:
                return SqlSource(config.hms.db_url)
            client = InstrumentedClient(
                uri, metrics, timeout_s=config.hms.timeout_s, retries=config.hms.retries
            )
            return ThriftSource(client)

        ops = Operations(server, source)
        ops.files = FileMetadata(
            config.files.tables, spark_threshold=config.files.spark_listing_threshold
        )
        stack.callback(ops.close)
        stack.callback(ops.files.close)  # a Spark session, if listing started one
        ops.workers = workers
        # Read the event id before loading, so no event after it can be missed.
        start_event = _current_event_id(ops) if config.detector.mode != "off" else 0
        sql_poller = SqlPoller(ops) if config.hms.db_url else None
        if sql_poller is not None and config.detector.mode != "off":
            sql_poller.baseline()  # before loading, like start_event
        started = time.monotonic()
        ops.cache_marks = caching.marks_by_table(store.list_cached())
        ops.publish_pools(store.list_pools())
        version = ops.load_names()  # before start(): the first snapshot has the names
        try:
            version = ops.load_functions()
        except CatalogError as exc:
            log.warning("loading functions failed: %s", exc)
        try:
            version = ops.load_privileges()
        except CatalogError as exc:
            log.warning("loading privileges failed (retried by the poller): %s", exc)
        info = RuntimeInfo(hms_address=uri, names_published_s=time.monotonic() - started)
        info.security = security.status
        info.ha = None if keeper is None else lambda: ha_node.describe(keeper)
        info.embedded_hms = embedded[0] if embedded else None
        progress = LoadProgress(_partition_counter(ops) if config.hms.db_url else None)
        info.loading = progress.report
        metrics.observe_load("names", time.monotonic() - started)
        if keeper is None:
            server.start()
        stack.callback(server.close)
        table_loader.start(ops)
        stack.callback(table_loader.close)
        queued = table_loader.enqueue_unloaded()
        dead_after = 3 * config.server.heartbeat_interval_s + 1.0
        barrier = SubscriberBarrier(lambda: dict(server.stats.subscribers), dead_after_s=dead_after)
        admin = AdminServer(
            config.server.admin_bind,
            _guard(handlers(server, ops, table_loader, info, barrier.live, store), keeper),
            barrier,
            on_done=lambda request, response, seconds: admin_done(
                metrics, store, request, response, seconds
            ),
            context=security.context,
            curve=security.admin_curve,
        ).start()
        stack.callback(admin.close)
        security.on_revoked = {SUBSCRIBERS: server.drop_connections, ADMIN: admin.drop_connections}
        detector = ChangeDetector(
            ops,
            table_loader,
            info,
            interval_s=config.detector.poll_interval_s,
            mode=config.detector.mode,
            max_calls_per_s=config.detector.poll_max_calls_per_s,
            start_event_id=start_event,
            privileges_interval_s=config.detector.privileges_poll_interval_s,
            poller=sql_poller,
        ).start()
        stack.callback(detector.close)
        if config.detector.mode != "off":
            # Files copied into partitions behind HMS's back (opted-in tables only).
            files = FileWatcher(
                ops,
                interval_s=config.detector.poll_interval_s,
                max_listings=config.files.max_listings_per_interval,
            ).start()
            stack.callback(files.close)
        if keeper is not None:
            refresh = functools.partial(ha_node.refresh_from_store, ops, store)
            version = take_over(keeper, server, admin.endpoint, metrics, notifier, signals, refresh)
        if version >= 0:  # -1: stopped while a standby
            log.info(
                "initial catalog published: version %d (names of %d tables; loading them in "
                "the background) in %.2fs; serving at %s (publisher %s, admin %s, service id %s)",
                version,
                queued,
                info.names_published_s,
                server.endpoint,
                server.pub_endpoint,
                admin.endpoint,
                server.service_id,
            )
            notifier.ready(status_line(read_shape(server), len(server.stats.subscribers)))
        supervise(
            config,
            server,
            table_loader,
            detector,
            info,
            metrics,
            notifier,
            signals,
            reload_config,
            started,
            security,
            progress,
        )
        log.info("stopping: no new admin commands; closing sockets after a last heartbeat")
        notifier.stopping("stopping")
        admin.stop_accepting()
    log.info("stopped")
    return 0


def _guard(table: dict[int, Any], keeper: LeaseKeeper | None) -> dict[int, Any]:
    return table if keeper is None else ha_node.admin_handlers(table, keeper)


def _partition_counter(ops: Operations) -> Callable[[], int | None]:
    """How many partitions the SQL source's metastore holds (for load progress)."""

    def count() -> int | None:
        source = ops.source()
        return source.run(partition_count) if isinstance(source, SqlSource) else None

    return count


def _current_event_id(ops: Operations) -> int:
    try:
        return ops.source().current_notification_id()
    except CatalogError as exc:
        log.warning("cannot read the HMS notification event id: %s", exc)
        return 0


def config_loader(
    path: str | None, environ: Mapping[str, str], flags: Mapping[str, Any]
) -> Callable[[], Config]:
    """A function that (re)reads the configuration from the same sources."""
    return lambda: load_config(path, environ, flags)[0]
