"""Read-your-writes for one endpoint: the pending objects, shared by its connections.

:class:`ReadBack` wraps the pure :class:`~subscriber.metastore.pending.Pending`
with what it leaves out: a lock (every connection thread asks it, and the
subscriber's thread with catalogd's answers), the clock, the reload requests to
catalogd with their tickets, the counters and the warnings. After a write (or a
forwarded read that showed the cache behind) the endpoint calls
:meth:`ReadBack.mark`; before answering a read from the cache it asks
:meth:`ReadBack.is_pending`, and forwards the read when it is.

Thread-safe; never blocks beyond its own lock (reload requests are queued, their
answers arrive as callbacks).
"""

from __future__ import annotations

import itertools
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
        reload: ``(db, table or None, on_loaded)`` -> ask catalogd to reload it;
            ``on_loaded(version or None)`` is called (on another thread) once
            catalogd published it (see ``CatalogSubscriber.request_reload``).
        clock: monotonic seconds.
        limit: objects pending at most (:class:`~subscriber.metastore.pending.Pending`).
    """

    def __init__(
        self,
        bound_s: float,
        stats: EndpointStats,
        followed: tuple[str, ...] | None,
        reload: Callable[[str, str | None, Callable[[int | None], None]], None],
        clock: Callable[[], float] = time.monotonic,
        limit: int = pending.DEFAULT_LIMIT,
    ) -> None:
        self._pending = pending.Pending(bound_s, limit)
        self._lock = threading.Lock()
        self._stats = stats
        self._followed = followed
        self._reload = reload
        self._clock = clock
        self._tickets = itertools.count(1)

    def is_pending(self, view: CacheView, name: str, args: object) -> bool:
        """Whether the cached read ``name`` (decoded ``args``), answered from ``view``,
        could show a pending object: then forward it."""
        if not self._pending:  # nothing pending: no lock, no work
            return False
        read = pending.read_of(name, args)
        with self._lock:
            found = self._pending.is_pending(view.version, read, self._clock())
            cleared, expired = self._pending.take_cleared(), self._pending.take_expired()
        self._report(cleared, expired)
        return found

    def settled(self, view: CacheView) -> bool:
        """Whether nothing is pending for reads answered from ``view``."""
        with self._lock:
            self._pending.prune(view.version, self._clock())
            cleared, expired = self._pending.take_cleared(), self._pending.take_expired()
            empty = not self._pending
        self._report(cleared, expired)
        return empty

    def mark(
        self, why: str, targets: tuple[Target, ...], view: CacheView, stale: bool = False
    ) -> tuple[Target, ...]:
        """Ask catalogd to reload every target and keep each pending until the cache
        shows that reload (guesses at what an unknown method touched: reloaded, not
        pending). ``view``: the current view. ``stale``: after a forwarded read; a
        target already pending (its reload asked for) is skipped. Returns the targets
        reloaded."""
        followed = self._followed
        targets = tuple(t for t in targets if followed is None or t.db in followed or not t.db)
        now = self._clock()
        with self._lock:
            if stale:
                targets = tuple(t for t in targets if not self._pending.holds(view.version, t, now))
            tickets = {t: next(self._tickets) for t in targets if not t.guess}
            fitted = self._pending.add(view.version, tickets, now)
            cleared, expired = self._pending.take_cleared(), self._pending.take_expired()
        self._stats.count_pending(marked=len(tickets), overflow=not fitted)
        if not fitted:
            log.warning(
                "HMS endpoint: more than %d objects pending; every read is forwarded for %gs",
                self._pending.limit,
                self._pending.bound_s,
            )
        self._report(cleared, expired)
        for target in targets:  # not cached here otherwise: nothing to reload
            self._reload(target.db, target.table, self._answer(tickets.get(target)))
        if tickets:
            log.debug("HMS endpoint: %s: pending %s", why, ", ".join(map(_named, tickets)))
        return targets

    def _answer(self, ticket: int | None) -> Callable[[int | None], None]:
        def loaded(version: int | None) -> None:  # on the subscriber's thread
            if ticket is None:
                return
            if version is None:
                self._stats.count_pending(unconfirmed=1)
            with self._lock:
                self._pending.loaded(ticket, version)

        return loaded

    def _report(self, cleared: list[float], expired: list[Target]) -> None:
        if cleared:
            self._stats.count_pending(cleared=cleared)
        if not expired:
            return
        self._stats.count_pending(expired=len(expired))
        shown = ", ".join(_named(t) for t in expired[:8])
        more = f" and {len(expired) - 8} more" if len(expired) > 8 else ""
        log.warning(
            "HMS endpoint: catalogd did not confirm the reload of %s%s after a write "
            "within %gs (the reload failed or is slow); serving it from the cache again",
            shown,
            more,
            self._pending.bound_s,
        )


def _named(target: Target) -> str:
    if target == ALL_DATABASES:
        return "every object (overflow)"
    return target.db if target.table is None else f"{target.db}.{target.table}"
