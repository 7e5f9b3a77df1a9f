"""Read-your-writes for one endpoint: the pending objects, shared by its connections.

:class:`ReadBack` wraps the pure :class:`~subscriber.metastore.pending.Pending`
with what it leaves out: a lock (every connection thread asks it), the clock,
the reload requests to catalogd, the counters and the warnings. After a write
(or a forwarded read that showed the cache behind) the endpoint calls
:meth:`ReadBack.mark`; before answering a read from the cache it asks
:meth:`ReadBack.is_pending`, and forwards the read when it is.

Thread-safe; never blocks beyond its own lock (reload requests are one-way).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from subscriber.cache import CacheView
from subscriber.metastore import pending
from subscriber.metastore.counters import EndpointStats
from subscriber.metastore.writes import ALL_DATABASES, Target

log = logging.getLogger(__name__)

__all__ = ["ReadBack"]


class ReadBack:
    """The pending objects of one endpoint (see the module docstring).

    Args:
        bound_s: how long an object stays pending at most (``write_wait_s``).
        stats: the endpoint's counters.
        followed: the databases cached (None: all); others are not marked.
        reload: ``(db, table or None)`` -> ask catalogd to reload it (one-way).
        clock: monotonic seconds.
        limit: objects pending at most (:class:`~subscriber.metastore.pending.Pending`).
    """

    def __init__(
        self,
        bound_s: float,
        stats: EndpointStats,
        followed: tuple[str, ...] | None,
        reload: Callable[[str, str | None], None],
        clock: Callable[[], float] = time.monotonic,
        limit: int = pending.DEFAULT_LIMIT,
    ) -> None:
        self._pending = pending.Pending(bound_s, limit)
        self._lock = threading.Lock()
        self._stats = stats
        self._followed = followed
        self._reload = reload
        self._clock = clock

    def is_pending(self, view: CacheView, name: str, args: object) -> bool:
        """Whether the cached read ``name`` (decoded ``args``), answered from ``view``,
        could show a pending object: then forward it."""
        if not self._pending:  # nothing pending: no lock, no work
            return False
        read = pending.read_of(name, args)
        with self._lock:
            found = self._pending.is_pending(view, read, self._clock())
            cleared, expired = self._pending.take_cleared(), self._pending.take_expired()
        self._report(cleared, expired)
        return found

    def mark(
        self,
        why: str,
        targets: tuple[Target, ...],
        before: CacheView,
        now_view: CacheView,
        stale: bool = False,
    ) -> tuple[Target, ...]:
        """Ask catalogd to reload every target and keep each pending until the cache
        shows it changed from ``before`` (guesses at what an unknown method touched:
        reloaded, not pending). ``now_view``: the current view. ``stale``: after a
        forwarded read; a target already pending (its reload asked for) is skipped.
        Returns the targets reloaded."""
        followed = self._followed
        targets = tuple(t for t in targets if followed is None or t.db in followed)
        now = self._clock()
        with self._lock:
            if stale:
                targets = tuple(t for t in targets if not self._pending.holds(now_view, t, now))
            marks = {t: pending.mark(before, t) for t in targets if not t.guess}
            fitted = self._pending.add(now_view, marks, now)
            cleared, expired = self._pending.take_cleared(), self._pending.take_expired()
        self._stats.count_pending(marked=len(marks), overflow=not fitted)
        if not fitted:
            log.warning(
                "HMS endpoint: more than %d objects pending; every read is forwarded for %gs",
                self._pending.limit,
                self._pending.bound_s,
            )
        self._report(cleared, expired)
        for target in targets:  # not cached here otherwise: nothing to reload
            self._reload(target.db, target.table)
        if marks:
            log.debug("HMS endpoint: %s: pending %s", why, ", ".join(map(_named, marks)))
        return targets

    def _report(self, cleared: list[float], expired: list[Target]) -> None:
        if cleared:
            self._stats.count_pending(cleared=cleared)
        if not expired:
            return
        self._stats.count_pending(expired=len(expired))
        shown = ", ".join(_named(t) for t in expired[:8])
        more = f" and {len(expired) - 8} more" if len(expired) > 8 else ""
        log.warning(
            "HMS endpoint: the cache did not show a write to %s%s within %gs; serving "
            "it from the cache again (a read may not show the write yet)",
            shown,
            more,
            self._pending.bound_s,
        )


def _named(target: Target) -> str:
    if target == ALL_DATABASES:
        return "every object (overflow)"
    return target.db if target.table is None else f"{target.db}.{target.table}"
