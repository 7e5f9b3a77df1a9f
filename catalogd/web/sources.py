"""What the web pages read from the running daemon, each read bounded in time and cost.

:class:`DaemonSources` is the adapter between the pages (:mod:`catalogd.web.app`) and
the daemon's parts:

* catalog reads go to the server thread through ``server.submit``, at most
  ``max_reads`` at a time from all HTTP clients together; a read that cannot get a
  slot, or whose answer takes over ``timeout_s``, fails as :class:`Busy` (503).
  Fifty clients looping over a big table's page therefore queue in the web, not
  in front of the server thread;
* the status (the dict ``admin status`` answers: one catalog shape, a scan the
  main loop already makes once a second) is computed at most once per
  ``status_ttl_s`` for all clients together, and served from that copy;
* everything else (HA role, census, audit log, metrics) is read from the part
  that owns it, none on the server thread.
"""

from __future__ import annotations

import resource
import threading
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from prometheus_client import generate_latest

from catalogd.web.app import Busy
from catalogd.web.census import Census, Counted

__all__ = ["DaemonSources", "rss_bytes"]


def rss_bytes() -> int | None:
    """This process's resident set size (Linux ``/proc``), or None elsewhere."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * resource.getpagesize()


class DaemonSources:
    """The pages' view of a running daemon (see the module docstring). Thread-safe.

    Args:
        server: the :class:`~catalogd.server.thread.CatalogServer`.
        status: builds the ``admin status`` dict (blocking: one server round trip).
        ha: the HA report, or None without HA.
        audit: the newest ``limit`` audit records.
        registry: the Prometheus registry to render at ``/metrics``.
    """

    def __init__(
        self,
        server: Any,
        status: Callable[[], dict[str, Any]],
        *,
        ha: Callable[[], dict[str, Any]] | None,
        audit: Callable[[int], list[Any]],
        registry: Any,
        last_event_id: Callable[[], int | None] = lambda: None,
        last_checked: Callable[[], float | None] = lambda: None,
        max_reads: int = 4,
        timeout_s: float = 2.0,
        status_ttl_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._server, self._status, self._ha, self._audit = server, status, ha, audit
        self._registry, self._last_event = registry, last_event_id
        self._last_checked = last_checked
        self._slots = threading.BoundedSemaphore(max_reads)
        self._timeout, self._ttl, self._clock = timeout_s, status_ttl_s, clock
        self._status_lock = threading.Lock()
        self._cached: tuple[float, dict[str, Any]] | None = None
        self.census_of: Census | None = None

    def read(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(catalog)`` on the server thread (bounded; see the module docstring).

        Raises:
            Busy: no slot or no answer within ``timeout_s``, or the server is closed.
        """
        deadline = self._clock() + self._timeout
        if not self._slots.acquire(timeout=self._timeout):
            raise Busy("too many catalog reads at once; try again")
        try:
            future = self._server.submit(fn)
            try:
                return future.result(timeout=max(0.0, deadline - self._clock()))
            except FutureTimeout as exc:
                future.cancel()
                raise Busy("the catalog did not answer in time; try again") from exc
        finally:
            self._slots.release()

    def status(self) -> dict[str, Any]:
        """The ``admin status`` dict, at most ``status_ttl_s`` old."""
        with self._status_lock:
            now = self._clock()
            if self._cached is None or now - self._cached[0] >= self._ttl:
                detail = self._status()
                detail["last_event_id"] = self._last_event()
                checked = self._last_checked()
                detail["hms_checked_s_ago"] = (
                    None if checked is None else round(max(0.0, time.time() - checked), 1)
                )
                self._cached = (now, detail)
            return self._cached[1]

    def ha(self) -> dict[str, Any] | None:
        return self._ha() if self._ha is not None else None

    def census(self) -> Counted:
        return self.census_of.latest if self.census_of is not None else Counted()

    def audit(self, limit: int) -> list[Any]:
        return self._audit(limit)

    def metrics_text(self) -> bytes:
        return bytes(generate_latest(self._registry))

    def memory(self) -> dict[str, int | None]:
        return {"rss": rss_bytes()}

    def started(self) -> bool:
        return bool(self._server.started)
