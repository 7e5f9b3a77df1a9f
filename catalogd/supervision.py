"""The daemon's main thread after start-up: signals, watchdog, status, reload, HA wait.

Signal handlers only set flags (:class:`Signals`); :func:`supervise` wakes on
them or every second, pings the systemd watchdog, refreshes ``STATUS=`` and the
metrics, and applies a SIGHUP reload (the keys that can change live; the rest
are logged as needing a restart). :func:`take_over` is the standby's wait for
the HA lease.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from catalogd import logs
from catalogd.config import Config, ConfigError, diff
from catalogd.freshness.detector import ChangeDetector
from catalogd.ha import node as ha_node
from catalogd.ha.keeper import LeaseKeeper
from catalogd.loading.progress import LoadProgress
from catalogd.loading.table_loader import TableLoader
from catalogd.metrics import Metrics
from catalogd.notify import Notifier
from catalogd.runtime_info import RuntimeInfo
from catalogd.security.runtime import Security
from catalogd.server.thread import CatalogServer
from catalogd.status import read_shape, status_line

log = logging.getLogger("catalogd")


class Signals:
    """Flags set by signal handlers (and nothing else happens in a handler)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.reload = threading.Event()
        self.wake = threading.Event()
        self.interrupting = False
        """While True (start-up), a stop signal also raises KeyboardInterrupt in the
        main thread, so a start waiting on the HMS or the first publish stops at
        once; the daemon clears it once started."""

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGHUP, self._on_reload)

    def _on_stop(self, *_: object) -> None:
        self.stop.set()
        self.wake.set()
        if self.interrupting:
            self.interrupting = False  # once: the clean-up itself is not interrupted
            raise KeyboardInterrupt("stopped during start-up")

    def _on_reload(self, *_: object) -> None:
        self.reload.set()
        self.wake.set()


def take_over(
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


@dataclass(frozen=True)
class Supervised:
    """What :func:`supervise` watches: the running parts and how to reload.

    ``started`` is the monotonic time the names started loading (for ``all_loaded_s``).
    """

    config: Config
    server: CatalogServer
    loader: TableLoader
    detector: ChangeDetector
    info: RuntimeInfo
    metrics: Metrics
    notifier: Notifier
    signals: Signals
    reload_config: Callable[[], Config] | None
    started: float
    security: Security
    progress: LoadProgress | None = None


def supervise(parts: Supervised) -> None:
    """The main loop: watchdog, status, metrics, reload; returns on stop."""
    config, signals, notifier = parts.config, parts.signals, parts.notifier
    server, metrics, health = parts.server, parts.metrics, parts.info.health
    reports = parts.info.reports
    watchdog = notifier.watchdog_interval_s()
    tick = min(1.0, watchdog) if watchdog else 1.0
    while not signals.stop.is_set():
        signals.wake.wait(tick)
        signals.wake.clear()
        if signals.stop.is_set():
            return
        notifier.watchdog()  # proves this loop is alive, not just a thread
        if health.all_loaded_s is None and not parts.loader.queued:
            health.all_loaded_s = time.monotonic() - parts.started
            log.info(
                "background load done: %d tables loaded, %d failed, in %.2fs",
                parts.loader.stats.loaded,
                parts.loader.stats.failed,
                health.all_loaded_s,
            )
            # The loaded catalog is long-lived and holds no reference cycles (entries
            # are freed by reference counting when replaced): out of the cyclic GC's
            # full collections, which would otherwise walk all of it, holding the GIL
            # for hundreds of ms at 100k partitions (measured by bench/web_bench.py).
            gc.freeze()
        shape = read_shape(server)
        if parts.progress is not None:
            parts.progress.observe(shape)
        metrics.set_catalog(
            version=shape.version,
            objects_by_type=shape.objects_by_type,
            tables_loaded=shape.tables_loaded,
            tables_not_loaded=shape.tables_not_loaded,
            delta_log_floor=shape.delta_log_floor,
        )
        metrics.update_from(server.stats, version=shape.version, now=time.time())
        ha = reports.ha() if reports.ha else None
        if ha is not None:
            metrics.set_role(ha["role"])
        line = status_line(shape, len(server.stats.subscribers))
        notifier.status(ha_node.status_prefix(ha) + line)
        metrics.set_auth_failures(parts.security.failures())
        if reports.embedded_hms is not None:
            metrics.set_embedded_hms(reports.embedded_hms())
        if signals.reload.is_set():
            signals.reload.clear()
            config = reload_live(config, server, parts.detector, notifier, parts.reload_config)
            parts.security.reload()  # revoked keys lose their live sessions now (on_revoked)


def reload_live(
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
