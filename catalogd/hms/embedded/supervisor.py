"""Supervision of the embedded HMS: when its JVM dies, start it again, with backoff.

One thread (``catalogd-hms-supervisor``) checks every ``check_interval_s``
whether the JVM still runs. When it died, the supervisor restarts it on the same
port (clients keep their address); a failed restart, or a death within
``CRASH_LOOP_S`` of the last start, waits ``min_backoff_s``, doubling up to
``max_backoff_s``, before the next try. :meth:`MetastoreSupervisor.report`
says what happened (for ``admin status`` and the metrics).

The supervisor starts every replacement JVM from its own thread, which lives as
long as the supervision, so the parent-death signal (:mod:`.lifeline`) still
ties the JVM to catalogd.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from catalogd.hms.embedded.process import EmbeddedMetastore
from subscriber.protocol.errors import CatalogError

log = logging.getLogger(__name__)
CRASH_LOOP_S = 60.0
"""A JVM that dies sooner than this after a start is restarted only after a backoff."""


class MetastoreSupervisor:
    """Keeps an :class:`EmbeddedMetastore` running (see the module docstring).

    Args:
        metastore: a started metastore.
        on_restart: called (on the supervisor thread) after each successful restart.
    """

    def __init__(
        self,
        metastore: EmbeddedMetastore,
        *,
        check_interval_s: float = 1.0,
        min_backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        on_restart: Callable[[], None] | None = None,
    ) -> None:
        self.metastore = metastore
        self._interval = check_interval_s
        self._min_backoff, self._max_backoff = min_backoff_s, max_backoff_s
        self._on_restart = on_restart
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="catalogd-hms-supervisor", daemon=True
        )
        self.restarts = 0
        self.failed_restarts = 0
        self.state = "running"
        self.last_exit_code: int | None = None
        self.last_error: str | None = None
        self.next_attempt_in_s: float | None = None

    def start(self) -> MetastoreSupervisor:
        self._thread.start()
        return self

    def close(self, timeout: float = 60.0) -> None:
        """Stop supervising (the metastore itself is stopped by its owner). Idempotent."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def __enter__(self) -> MetastoreSupervisor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def report(self) -> dict[str, Any]:
        """A JSON-able summary: version, state, restarts, the last exit code and error."""
        return {
            "version": self.metastore.version,
            "notification_events": self.metastore.notification_events,
            "state": self.state,
            "restarts": self.restarts,
            "failed_restarts": self.failed_restarts,
            "last_exit_code": self.last_exit_code,
            "last_error": self.last_error,
            "next_attempt_in_s": self.next_attempt_in_s,
        }

    def _run(self) -> None:
        backoff = self._min_backoff
        started = time.monotonic()
        while not self._stop.wait(self._interval):
            if self.metastore.running:
                continue
            self.last_exit_code = self.metastore.exit_code
            self.state = "restarting"
            log.error(
                "the embedded Hive Metastore exited (code %s); restarting it",
                self.last_exit_code,
            )
            if time.monotonic() - started < CRASH_LOOP_S:
                # It died soon after its last start: back off, do not spin.
                self.next_attempt_in_s = backoff
                if self._stop.wait(backoff):
                    break
                backoff = min(backoff * 2, self._max_backoff)
            else:
                backoff = self._min_backoff
            while not self._stop.is_set():
                try:
                    self.metastore.restart()
                except CatalogError as exc:
                    self.failed_restarts += 1
                    self.last_error = str(exc)[:2000]
                    self.next_attempt_in_s = backoff
                    log.error("restarting the embedded Hive Metastore failed: %s", exc)
                    if self._stop.wait(backoff):
                        return
                    backoff = min(backoff * 2, self._max_backoff)
                    continue
                self.restarts += 1
                self.state, self.next_attempt_in_s = "running", None
                started = time.monotonic()
                log.warning(
                    "embedded Hive Metastore restarted at %s (restart %d, %.1f s)",
                    self.metastore.uri,
                    self.restarts,
                    self.metastore.startup_seconds or 0.0,
                )
                if self._on_restart is not None:
                    self._on_restart()
                break
        self.state = "stopped"
