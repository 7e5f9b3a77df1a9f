"""The daemon's start-up steps, in order: one :class:`Startup` method per step.

:func:`catalogd.daemon.serve` calls the methods in the order they are written
here; each uses only what earlier ones made, and registers what it opens on the
``ExitStack``, so the stack closes everything in reverse order (subscriber
sockets after a last heartbeat, before the HA lease is released).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import ExitStack
from typing import Any

from catalogd.admin.audit import admin_done, record_refusal
from catalogd.admin.barrier import SubscriberBarrier
from catalogd.admin.endpoint import AdminServer
from catalogd.admin.handlers import handlers
from catalogd.config import Config
from catalogd.core import cache_pools as caching
from catalogd.files.metadata import FileMetadata
from catalogd.freshness.detector import ChangeDetector
from catalogd.freshness.files import FileWatcher
from catalogd.freshness.order_learner import TableOrderLearner
from catalogd.freshness.sql_detection import SqlPoller
from catalogd.ha import node as ha_node
from catalogd.ha.keeper import LeaseKeeper
from catalogd.hms.connection import InstrumentedClient, create_demo, open_metastore
from catalogd.loading.progress import LoadProgress
from catalogd.loading.table_loader import TableLoader
from catalogd.loading.workers import LoadWorkers
from catalogd.metrics import Metrics
from catalogd.notify import Notifier
from catalogd.runtime_info import Facts, Health, Reports, RuntimeInfo
from catalogd.security.authenticator import ADMIN, SUBSCRIBERS
from catalogd.security.runtime import Security
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import MetastoreSource, ThriftSource
from catalogd.sources.sql import SqlSource
from catalogd.sources.sql.fingerprints import partition_count
from catalogd.state.schema import private_sqlite_file
from catalogd.state.store import StateStore
from catalogd.status import read_shape, status_line
from catalogd.supervision import Signals, Supervised, take_over
from catalogd.web.daemon import start_web
from catalogd.writes.operations import Operations
from subscriber.protocol.errors import CatalogError

log = logging.getLogger("catalogd")


class Startup:
    """The parts of a running daemon, made by one method per step (see the module
    docstring). An attribute exists once the step that makes it has run; the main
    thread alone calls the steps.

    Args:
        stack: where every part that must be closed is registered.
        workers: the load worker processes, started before any thread (or None).
    """

    def __init__(
        self,
        config: Config,
        stack: ExitStack,
        security: Security,
        notifier: Notifier,
        signals: Signals,
        workers: LoadWorkers | None,
    ) -> None:
        self.config, self.stack, self.security = config, stack, security
        self.notifier, self.signals, self.workers = notifier, signals, workers
        self.metrics = Metrics()
        stack.callback(notifier.close)
        self.started = time.monotonic()  # set again when the names start loading

    def serve_metrics(self) -> None:
        """The Prometheus endpoint, when configured."""
        bind = self.config.metrics.bind
        if bind:
            port = self.metrics.start_http(bind)
            self.stack.callback(self.metrics.close)
            log.info("metrics at http://%s:%d/metrics", bind.rpartition(":")[0], port)

    def open_metastore(self, demo: bool) -> None:
        """Which HMS to read (an embedded one started here, supervised), plus the demo."""
        hms = self.config.hms
        self.embedded: list[Callable[[], dict[str, Any]]] = []
        self.hms_thrift: str | None = None  # what subscribers are told (the welcome)
        if hms.db_url and not hms.uris:
            self.uri = SqlSource(hms.db_url).address  # no HMS needed to read the catalog
        else:
            self.uri = open_metastore(
                self.stack,
                hms.uris,
                self.config.data_dir,
                supervised=self.embedded.append,
                port=hms.embedded_port,
                version=hms.embedded_version,
            )
            self.hms_thrift = self.uri
        if demo:
            create_demo(self.uri, self.config.data_dir, hms.timeout_s)

    def open_state(self) -> None:
        """The state store (versions, pools, audit) and, with HA, the lease keeper."""
        config = self.config
        private_sqlite_file(config.state.url)
        store = self.stack.enter_context(StateStore.open(config.state.url))
        # Another catalogd on this store without HA (or this one without): refused.
        self.stack.callback(store.claim_writer(ha=config.ha.enabled).release)
        self.security.on_refused = lambda domain, address, name, reason: record_refusal(
            store, domain, address, name, reason
        )
        self.store = store
        self.high_water = store.high_water_mark()
        log.info("state store %s: versions continue after %d", store.url, self.high_water)
        self.keeper = (
            ha_node.open_keeper(config, store, self.signals.wake) if config.ha.enabled else None
        )
        if self.keeper is not None:
            self.stack.callback(self.keeper.release)  # runs after server.close (LIFO)

    def make_server(self) -> None:
        """The server thread's object (not started: its catalog fills first)."""
        config, keeper, store = self.config, self.keeper, self.store
        self.server = CatalogServer(
            ServerConfig(
                bind=config.server.bind,
                pub_bind=config.server.pub_bind,
                advertise_host=config.server.advertise_host,
                heartbeat_interval_s=config.server.heartbeat_interval_s,
                start_version=self.high_water,
                curve=self.security.server_curve,
                hms_uri=self.hms_thrift,
            ),
            context=self.security.context,
            on_load_request=self._load_request,
            on_reload_request=self._reload_request,
            reserve=store.reserve if keeper is None else ha_node.fenced_reserve(keeper, store),
        )

    # The server calls these on its thread, only once started; the loader (made over
    # the Operations, made over the server) exists by then.
    def _load_request(self, db: str, table: str) -> None:
        self.loader.request_urgent(db, table)

    def _reload_request(self, db: str, table: str) -> Future[int]:
        return self.loader.request_reload(db, table)

    def make_operations(self) -> None:
        """The write path (its sources, file metadata, load workers, cache marks) and
        the table loader over it."""
        config = self.config

        def source() -> MetastoreSource:
            if config.hms.db_url:
                return SqlSource(config.hms.db_url)
            return ThriftSource(self._hms_client())

        files = FileMetadata(
            config.files.tables, spark_threshold=config.files.spark_listing_threshold
        )
        self.ops = Operations(
            self.server,
            source,
            files=files,
            workers=self.workers,
            cache_marks=caching.marks_by_table(self.store.list_cached()),
        )
        self.stack.callback(self.ops.close)
        self.stack.callback(files.close)  # a Spark session, if listing started one
        self.loader = TableLoader(
            self.ops,
            pool_size=config.loader.pool_size,
            on_loaded=lambda seconds: self.metrics.observe_load("table", seconds),
        )

    def note_detection_baseline(self) -> None:
        """Where change detection starts, read before loading so nothing is missed."""
        detect = self.config.detector.mode != "off"
        self.start_event = _current_event_id(self.ops) if detect else 0
        self.sql_poller = SqlPoller(self.ops) if self.config.hms.db_url else None
        if self.sql_poller is not None and detect:
            self.sql_poller.baseline()  # before loading, like start_event

    def publish_names(self) -> None:
        """Pools, names, functions and privileges, committed before any socket is bound
        (the first snapshot has the names); then what status reports about us."""
        ops, config, keeper = self.ops, self.config, self.keeper
        self.started = time.monotonic()
        ops.publish_pools(self.store.list_pools())
        self.version = ops.load_names()
        try:
            self.version = ops.load_functions()
        except CatalogError as exc:
            log.warning("loading functions failed: %s", exc)
        try:
            self.version = ops.load_privileges()
        except CatalogError as exc:
            log.warning("loading privileges failed (retried by the poller): %s", exc)
        names_s = time.monotonic() - self.started
        self.progress = LoadProgress(_partition_counter(ops) if config.hms.db_url else None)
        self.info = RuntimeInfo(
            facts=Facts(hms_address=self.uri, names_published_s=names_s),
            health=Health.at_start(config.detector.mode),
            reports=Reports(
                security=self.security.status,
                ha=None if keeper is None else functools.partial(ha_node.describe, keeper),
                embedded_hms=self.embedded[0] if self.embedded else None,
                loading=self.progress.report,
            ),
        )
        self.metrics.observe_load("names", names_s)

    def start_serving(self) -> None:
        """Bind and publish (an HA standby waits for the lease), load in the background."""
        if self.keeper is None:
            self.server.start()
        self.stack.callback(self.server.close)
        self.loader.start()
        self.stack.callback(self.loader.close)
        self.queued = self.loader.enqueue_unloaded()

    def start_admin(self) -> None:
        """The admin endpoint (commands guarded by the lease with HA)."""
        server, config, metrics, store = self.server, self.config, self.metrics, self.store
        dead_after = 3 * config.server.heartbeat_interval_s + 1.0
        barrier = SubscriberBarrier(
            lambda: dict(server.stats.subscribers),
            dead_after_s=dead_after,
            ask=server.request_reports,
        )
        table = handlers(server, self.ops, self.loader, self.info, barrier.live, store)
        self.admin = AdminServer(
            config.server.admin_bind,
            _guard(table, self.keeper),
            barrier,
            on_done=lambda request, response, seconds: admin_done(
                metrics, store, request, response, seconds
            ),
            context=self.security.context,
            curve=self.security.admin_curve,
        ).start()
        self.stack.callback(self.admin.close)
        self.security.on_revoked = {
            SUBSCRIBERS: server.drop_connections,
            ADMIN: self.admin.drop_connections,
        }

    def start_detection(self) -> None:
        """Change detection (events or polling) and, for opted-in tables, file watching."""
        config = self.config
        self.detector = ChangeDetector(
            self.ops,
            self.loader,
            self.info,
            interval_s=config.detector.poll_interval_s,
            mode=config.detector.mode,
            max_calls_per_s=config.detector.poll_max_calls_per_s,
            start_event_id=self.start_event,
            privileges_interval_s=config.detector.privileges_poll_interval_s,
            poller=self.sql_poller,
        ).start()
        self.stack.callback(self.detector.close)
        if config.detector.mode != "off":
            # Files copied into partitions behind HMS's back (opted-in tables only).
            files = FileWatcher(
                self.ops,
                interval_s=config.detector.poll_interval_s,
                max_listings=config.files.max_listings_per_interval,
            ).start()
            self.stack.callback(files.close)

    def start_learning(self) -> None:
        """HMS's row order of each database's tables, learnt for every endpoint (an
        active catalogd with a Thrift HMS: :mod:`catalogd.freshness.order_learner`)."""
        max_tables = self.config.detector.table_order_max_tables
        if self.hms_thrift is None or not max_tables:
            return
        learner = TableOrderLearner(self.ops, self._hms_client, max_tables=max_tables).start()
        self.stack.callback(learner.close)

    def _hms_client(self) -> InstrumentedClient:
        """A new Thrift client of the HMS (``self.uri``), its calls timed in the metrics."""
        hms = self.config.hms
        return InstrumentedClient(
            self.uri, self.metrics, timeout_s=hms.timeout_s, retries=hms.retries
        )

    def start_web(self) -> None:
        """The web status page (``--web-bind``), before a standby waits: a standby's
        page answers ``/healthz`` (healthy) and ``/readyz`` (not ready)."""
        self.web = start_web(self.config, self.stack, self)

    def take_over_if_standby(self) -> int:
        """With HA: wait as a standby until active. Returns the version published
        first, or -1 when stopped as a standby."""
        if self.keeper is None:
            return self.version
        refresh = functools.partial(ha_node.refresh_from_store, self.ops, self.store)
        return take_over(
            self.keeper,
            self.server,
            self.admin.endpoint,
            self.metrics,
            self.notifier,
            self.signals,
            refresh,
        )

    def announce(self, version: int) -> None:
        """Log the start and send ``READY=1`` (not when stopped as a standby)."""
        if version < 0:
            return
        server = self.server
        log.info(
            "initial catalog published: version %d (names of %d tables; loading them in "
            "the background) in %.2fs; serving at %s (publisher %s, admin %s, service id %s)",
            version,
            self.queued,
            self.info.facts.names_published_s,
            server.endpoint,
            server.pub_endpoint,
            self.admin.endpoint,
            server.service_id,
        )
        self.notifier.ready(status_line(read_shape(server), len(server.stats.subscribers)))

    def supervised(self, reload_config: Callable[[], Config] | None) -> Supervised:
        """What the main loop watches."""
        return Supervised(
            config=self.config,
            server=self.server,
            loader=self.loader,
            detector=self.detector,
            info=self.info,
            metrics=self.metrics,
            notifier=self.notifier,
            signals=self.signals,
            reload_config=reload_config,
            started=self.started,
            security=self.security,
            progress=self.progress,
        )

    def stop_accepting(self) -> None:
        """The graceful stop's first step; the stack closes the rest in reverse."""
        log.info("stopping: no new admin commands; closing sockets after a last heartbeat")
        self.notifier.stopping("stopping")
        self.admin.stop_accepting()


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
