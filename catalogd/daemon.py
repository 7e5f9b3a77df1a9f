"""``catalogd serve``: load the catalog from HMS and publish it until told to stop.

A boring daemon (STYLE.md habit 14): no self-daemonizing, no pidfile, logs to
stderr for journald. Signal handlers only set flags; the main thread runs a
small supervision loop that pings the systemd watchdog, updates ``STATUS=`` and
the metrics, and applies a reload (SIGHUP) or a graceful stop (SIGTERM).

Start-up order: (embedded HMS) → names of every database and table, committed
before any socket is bound (so the first snapshot is never empty) → sockets →
``READY=1`` → background table loads, admin endpoint, change detection.

With ``ha.enabled`` (:mod:`catalogd.ha.node`) a standby does all of that except
binding the subscriber sockets, sends ``READY=1`` once loaded, and waits for the
lease; on taking it over it renumbers its catalog above the shared high-water mark
and only then binds and publishes.
"""

from __future__ import annotations

import datetime
import functools
import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from catalogd import logs
from catalogd.admin.barrier import SubscriberBarrier
from catalogd.admin.endpoint import AdminServer
from catalogd.admin.handlers import RuntimeInfo, handlers
from catalogd.config import Config, ConfigError, diff, load_config
from catalogd.core import cache_pools as caching
from catalogd.files.metadata import FileMetadata
from catalogd.freshness.detector import ChangeDetector
from catalogd.freshness.files import FileWatcher
from catalogd.freshness.operations import Operations
from catalogd.freshness.progress import LoadProgress
from catalogd.freshness.sql_detection import SqlPoller
from catalogd.freshness.table_loader import TableLoader
from catalogd.ha import node as ha_node
from catalogd.ha.keeper import LeaseKeeper
from catalogd.metastore.client import MetastoreClient
from catalogd.metastore.source import MetastoreSource, ThriftSource
from catalogd.metastore.sql import SqlSource
from catalogd.metastore.sql.fingerprints import partition_count
from catalogd.metrics import Metrics
from catalogd.notify import Notifier
from catalogd.security.authenticator import ADMIN, SUBSCRIBERS
from catalogd.security.runtime import Security
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.state.store import StateStore
from catalogd.status import read_shape, status_line
from subscriber.protocol.errors import CatalogError

log = logging.getLogger("catalogd")

STOP_TIMEOUT_S = 20.0


def open_metastore(
    stack: ExitStack,
    uris: tuple[str, ...],
    data_dir: Path,
    *,
    supervised: Callable[[Callable[[], dict[str, Any]]], None] | None = None,
) -> str:
    """The HMS address to use: the first configured one, or an embedded HMS in ``data_dir``.

    With ``supervised``, an embedded HMS is restarted when its JVM dies, and
    ``supervised`` is given the supervisor's ``report`` (for status and metrics).
    """
    if uris:
        return uris[0]
    from catalogd.metastore.embedded import EmbeddedMetastore
    from catalogd.metastore.listener import find_javac
    from subscriber.protocol.errors import MetastoreUnavailableError

    try:
        find_javac("java")
        events = True  # our listener makes the embedded HMS log notification events
    except MetastoreUnavailableError as exc:
        log.warning("%s; change detection falls back to polling", exc)
        events = False
    log.info("no HMS configured: starting the embedded Hive Metastore in %s", data_dir / "hms")
    metastore = stack.enter_context(
        EmbeddedMetastore(
            data_dir / "hms", cache_dir=data_dir / "cache", notification_events=events
        )
    )
    log.info("embedded Hive Metastore listening at %s", metastore.uri)
    if supervised is not None:
        from catalogd.metastore.embedded.supervisor import MetastoreSupervisor

        supervised(stack.enter_context(MetastoreSupervisor(metastore)).report)
    return metastore.uri


class _InstrumentedClient(MetastoreClient):
    """A MetastoreClient that times every HMS call into the metrics."""

    def __init__(self, uri: str, metrics: Metrics, **kwargs: Any) -> None:
        super().__init__(uri, **kwargs)
        self._metrics = metrics

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            result = super().call(method, *args, **kwargs)
        except CatalogError as exc:
            self._metrics.observe_hms_call(method, time.monotonic() - started, type(exc).__name__)
            raise
        self._metrics.observe_hms_call(method, time.monotonic() - started)
        return result


class Signals:
    """Flags set by signal handlers (and nothing else happens in a handler)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.reload = threading.Event()
        self.wake = threading.Event()

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGHUP, self._on_reload)

    def _on_stop(self, *_: object) -> None:
        self.stop.set()
        self.wake.set()

    def _on_reload(self, *_: object) -> None:
        self.reload.set()
        self.wake.set()


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
    security = Security.open(config)  # first: an exposed address without keys starts nothing
    signals = signals or Signals()
    signals.install()
    notifier = Notifier(environ)
    metrics = Metrics()
    config.data_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
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
            _create_demo(uri, config)
        _private_sqlite_file(config.state.url)
        store = stack.enter_context(StateStore.open(config.state.url))
        security.on_refused = lambda domain, address, name, reason: _refused(
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
            client = _InstrumentedClient(
                uri, metrics, timeout_s=config.hms.timeout_s, retries=config.hms.retries
            )
            return ThriftSource(client)

        ops = Operations(server, source)
        ops.files = FileMetadata(config.files.tables)
        stack.callback(ops.close)
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
            on_done=lambda request, response, seconds: _admin_done(
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
            version = _take_over(
                keeper, server, admin.endpoint, metrics, notifier, signals, refresh
            )
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
        _supervise(
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


def _take_over(
    keeper: LeaseKeeper,
    server: CatalogServer,
    admin_endpoint: str,
    metrics: Metrics,
    notifier: Notifier,
    signals: Signals,
    refresh: Callable[[], None],
) -> int:
    """HA: wait as a standby (loaded, kept fresh, serving nothing) until active, then
    serve. Returns the version published first, or -1 when stopped as a standby."""
    shape = read_shape(server)
    if keeper.state.role is not ha_node.Role.ACTIVE:
        log.info(
            "standby: catalog loaded: version %d; service id %s; admin %s; the active is %s",
            shape.version,
            server.service_id,
            admin_endpoint,
            keeper.state.lease.endpoint or "none yet",
        )
        notifier.ready(ha_node.status_prefix(ha_node.describe(keeper)) + status_line(shape, 0))

    def tick() -> None:
        notifier.watchdog()
        metrics.set_role(keeper.state.role.value)
        prefix = ha_node.status_prefix(ha_node.describe(keeper))
        notifier.status(prefix + status_line(read_shape(server), 0))

    after = ha_node.await_active(keeper, signals.stop, signals.wake, tick)
    if after is None:
        return -1
    refresh()
    server.start(after_version=after)
    metrics.set_role(keeper.state.role.value)
    return read_shape(server).version


def _partition_counter(ops: Operations) -> Callable[[], int | None]:
    """How many partitions the SQL source's metastore holds (for load progress)."""
    return lambda: ops.source().run(partition_count)  # type: ignore[attr-defined, no-any-return]


def _supervise(
    config: Config,
    server: CatalogServer,
    loader: TableLoader,
    detector: ChangeDetector,
    info: RuntimeInfo,
    metrics: Metrics,
    notifier: Notifier,
    signals: Signals,
    reload_config: Callable[[], Config] | None,
    started: float,
    security: Security,
    progress: LoadProgress | None = None,
) -> None:
    """The main loop: watchdog, status, metrics, reload; returns on stop."""
    watchdog = notifier.watchdog_interval_s()
    tick = min(1.0, watchdog) if watchdog else 1.0
    while not signals.stop.is_set():
        signals.wake.wait(tick)
        signals.wake.clear()
        if signals.stop.is_set():
            return
        notifier.watchdog()  # proves this loop is alive, not just a thread
        if info.all_loaded_s is None and not loader.queued:
            info.all_loaded_s = time.monotonic() - started
            log.info(
                "background load done: %d tables loaded, %d failed, in %.2fs",
                loader.stats.loaded,
                loader.stats.failed,
                info.all_loaded_s,
            )
        shape = read_shape(server)
        if progress is not None:
            progress.observe(shape)
        metrics.set_catalog(
            version=shape.version,
            objects_by_type=shape.objects_by_type,
            tables_loaded=shape.tables_loaded,
            tables_not_loaded=shape.tables_not_loaded,
            delta_log_floor=shape.delta_log_floor,
        )
        metrics.update_from(server.stats, version=shape.version, now=time.time())
        ha = info.ha() if info.ha else None
        if ha is not None:
            metrics.set_role(ha["role"])
        line = status_line(shape, len(server.stats.subscribers))
        notifier.status(ha_node.status_prefix(ha) + line)
        metrics.set_auth_failures(security.failures())
        if info.embedded_hms is not None:
            metrics.set_embedded_hms(info.embedded_hms())
        if signals.reload.is_set():
            signals.reload.clear()
            config = _reload(config, server, detector, notifier, reload_config)
            security.reload()  # revoked keys lose their live sessions now (on_revoked)


def _reload(
    config: Config,
    server: CatalogServer,
    detector: ChangeDetector,
    notifier: Notifier,
    reload_config: Callable[[], Config] | None,
) -> Config:
    """SIGHUP: re-read the configuration and apply what can change live."""
    notifier.reloading("reloading configuration")
    try:
        if reload_config is None:
            log.warning("reload requested, but this catalogd was started without reload support")
            return config
        try:
            new = reload_config()
        except ConfigError as exc:
            log.error("reload: the configuration no longer validates, keeping the old one: %s", exc)
            return config
        changes = diff(config, new)
        if new.log != config.log:
            logs.configure(new.log.level, new.log.format)
        if new.server.heartbeat_interval_s != config.server.heartbeat_interval_s:
            server.set_heartbeat_interval(new.server.heartbeat_interval_s)
        detector.interval_s = new.detector.poll_interval_s
        detector.privileges_interval_s = new.detector.privileges_poll_interval_s
        log.info(
            "reloaded configuration: applied %s; needs a restart: %s",
            ", ".join(changes.live) or "nothing",
            ", ".join(changes.restart) or "nothing",
        )
        # Keys that need a restart keep their running values.
        return _merge_live(config, new, changes.live)
    finally:
        notifier.ready()


def _merge_live(old: Config, new: Config, live: tuple[str, ...]) -> Config:
    import dataclasses

    result = old
    for key in live:
        section, _, field_name = key.partition(".")
        if not field_name:
            continue
        part = dataclasses.replace(
            getattr(result, section), **{field_name: getattr(getattr(new, section), field_name)}
        )
        result = dataclasses.replace(result, **{section: part})
    return result


def _private_sqlite_file(url: str) -> None:
    """Make a SQLite state file (it holds the audit log) readable by its owner only."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or url == prefix or ":memory:" in url:
        return
    path = Path(url[len(prefix) :].partition("?")[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)  # SQLite gives its journal files the database file's mode
    path.chmod(0o600)


def _escaped(value: Any) -> Any:
    """An audit argument with control characters escaped in every string it holds."""
    if isinstance(value, str):
        return logs.escape(value)
    if isinstance(value, list):
        return [_escaped(v) for v in value]
    if isinstance(value, dict):
        return {logs.escape(k): _escaped(v) for k, v in value.items()}
    return value


def _admin_done(
    metrics: Metrics, store: StateStore, request: Any, response: Any, seconds: float
) -> None:
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
                {k: _escaped(v) for k, v in args.items() if v},
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


def _refused(store: StateStore, domain: str, address: str, name: str, reason: str) -> None:
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


def _current_event_id(ops: Operations) -> int:
    try:
        return ops.source().current_notification_id()
    except CatalogError as exc:
        log.warning("cannot read the HMS notification event id: %s", exc)
        return 0


def _create_demo(uri: str, config: Config) -> None:
    from catalogd.metastore.demo import create_demo_warehouse

    with MetastoreClient(uri, timeout_s=config.hms.timeout_s) as client:
        warehouse = (config.data_dir / "warehouse").resolve().as_uri()
        if create_demo_warehouse(client, warehouse):
            log.info("created the demo warehouse (database 'demo')")


def config_loader(
    path: str | None, environ: Mapping[str, str], flags: Mapping[str, Any]
) -> Callable[[], Config]:
    """A function that (re)reads the configuration from the same sources."""
    return lambda: load_config(path, environ, flags)[0]
