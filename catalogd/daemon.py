"""``catalogd serve``: load the catalog from HMS and publish it until told to stop.

A boring daemon: no self-daemonizing, no pidfile, logs to stderr for journald.
:func:`serve` wires the parts together in start-up order; then the main thread
runs :func:`catalogd.supervision.supervise` (signal flags, systemd watchdog,
``STATUS=``, metrics, SIGHUP reload) until a graceful stop (SIGTERM). Which HMS
to use: :mod:`catalogd.hms.connection`; what an admin command leaves
behind: :mod:`catalogd.admin.audit`.

Start-up order (one :class:`~catalogd.startup.Startup` method per step): the
data directory lock (:mod:`catalogd.data_dir`) and a check that every listen
address is free (:mod:`catalogd.preflight`), both in milliseconds → load
worker processes (before any thread) → security → metrics → (embedded) HMS →
state store (and HA lease) → server, operations, table loader → detection
baseline → names of every database and table, committed before any socket is
bound (so the first snapshot is never empty) → sockets and background table
loads → admin endpoint → change detection → web page → ``READY=1`` → learning
HMS's row order of tables (:mod:`catalogd.freshness.order_learner`; an active node).

With ``ha.enabled`` (:mod:`catalogd.ha.node`) a standby does all of that except
binding the subscriber sockets, sends ``READY=1`` once loaded, and waits for the
lease; on taking it over it renumbers its catalog above the shared high-water mark
and only then binds and publishes.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import Any

from catalogd.config import Config, load_config
from catalogd.data_dir import DataDirLock
from catalogd.loading.workers import LoadWorkers
from catalogd.notify import Notifier
from catalogd.preflight import check_addresses
from catalogd.security.runtime import Security
from catalogd.sources.sql import SqlSource
from catalogd.startup import Startup
from catalogd.supervision import Signals, supervise

log = logging.getLogger("catalogd")


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
    # First: one catalogd per data directory, and every address free (milliseconds).
    lock = DataDirLock(config.data_dir)
    try:
        check_addresses(config)
        # Before anything starts a thread: the load workers are then forked from this
        # process, which has imported all they run (LoadWorkers.start).
        workers = _start_workers(config)
    except BaseException:
        lock.release()
        raise
    try:
        security = Security.open(config)  # an exposed address without keys starts nothing
    except BaseException:
        if workers is not None:
            workers.close()
        lock.release()
        raise
    signals = signals or Signals()
    signals.install()
    signals.interrupting = True  # Ctrl-C or SIGTERM while starting: stop at once
    try:
        return _serve(config, environ, reload_config, demo, signals, security, workers, lock)
    except KeyboardInterrupt:
        if not signals.stop.is_set():
            raise
        log.info("stopped during start-up")
        return 0


def _serve(
    config: Config,
    environ: Mapping[str, str],
    reload_config: Callable[[], Config] | None,
    demo: bool,
    signals: Signals,
    security: Security,
    workers: LoadWorkers | None,
    lock: DataDirLock,
) -> int:
    with ExitStack() as stack:
        stack.callback(lock.release)
        if workers is not None:
            stack.callback(workers.close)
        stack.callback(security.close)
        daemon = Startup(config, stack, security, Notifier(environ), signals, workers)
        daemon.serve_metrics()
        daemon.open_metastore(demo)
        daemon.open_state()
        daemon.make_server()
        daemon.make_operations()
        daemon.note_detection_baseline()
        daemon.publish_names()
        daemon.start_serving()
        daemon.start_admin()
        daemon.start_detection()
        daemon.start_web()
        signals.interrupting = False  # started: from here a stop is graceful
        version = daemon.take_over_if_standby()
        daemon.announce(version)
        if version >= 0:
            daemon.start_learning()
        supervise(daemon.supervised(reload_config))
        daemon.stop_accepting()
    log.info("stopped")
    return 0


def _start_workers(config: Config) -> LoadWorkers | None:
    """The load worker processes (SQL source only), or None."""
    if not (config.hms.db_url and config.loader.processes):
        return None
    factory = functools.partial(SqlSource, config.hms.db_url)
    return LoadWorkers(factory, config.loader.processes).start()


def config_loader(
    path: str | None, environ: Mapping[str, str], flags: Mapping[str, Any]
) -> Callable[[], Config]:
    """A function that (re)reads the configuration from the same sources."""
    return lambda: load_config(path, environ, flags)[0]
