"""Lazy loading: a background pool turns table placeholders into full metadata.

At start-up catalogd publishes databases and table *names* (placeholders)
first, so subscribers are useful within a second; :class:`TableLoader` then
loads every table in a pool of ``pool_size`` threads. A subscriber that needs
a table now asks for a priority load (``TLoadTableRequest``); an urgent request
jumps the queue. Concurrent requests for one table share one load, and a
table already queued as urgent is not queued again, so the queue holds at most
two entries per table the catalog names (the server answers NOTFOUND for names
it does not hold). ``loaded`` counts only placeholders that were loaded;
requests for tables loaded already or gone count as ``skipped``.

When the operations can read several tables together (``Operations.load_batch`` > 1:
load worker processes over the SQL source), a loader thread that takes a background
table also claims up to that many more queued tables of the same database and loads
them with one ``Operations.load_tables``; tables too large to batch
(``Operations.loads_alone``) go back to the queue and load alone, and a large table
taken first is loaded first (its commit is the longest, so it should not come last).

Requests made before :meth:`~TableLoader.start` wait in the queue.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from catalogd.writes.operations import Operations
from subscriber.protocol.errors import CatalogError, NotFoundError

log = logging.getLogger(__name__)

URGENT, BACKGROUND = 0, 10


@dataclass
class LoaderStats:
    """Counts ``admin status`` shows (``loader``); written by the loader threads."""

    loaded: int = 0
    skipped: int = 0
    failed: int = 0
    slowest: list[tuple[float, str, str]] = field(default_factory=list)
    """The :data:`SLOWEST` longest table loads: (seconds, db, table), a min-heap."""

    def timed(self, seconds: float, db: str, table: str) -> None:
        """Remember one load's time if it is among the slowest (bounded)."""
        item = (seconds, db, table)
        if len(self.slowest) < SLOWEST:
            heapq.heappush(self.slowest, item)
        elif seconds > self.slowest[0][0]:
            heapq.heapreplace(self.slowest, item)

    def slowest_first(self) -> list[tuple[float, str, str]]:
        """The remembered loads, slowest first (a copy: safe from any thread)."""
        return sorted(list(self.slowest), reverse=True)


SLOWEST = 10
"""Table loads remembered by time, the slowest (web ``/``: top tables by load time)."""


class TableLoader:
    """Loads placeholder tables in the background. Thread-safe.

    Args:
        ops: the operations to load through.
        pool_size: loader threads.
        on_loaded: called with the seconds each successful load took.
    """

    def __init__(
        self,
        ops: Operations,
        *,
        pool_size: int = 4,
        on_loaded: Callable[[float], None] | None = None,
    ) -> None:
        if pool_size < 1:
            raise ValueError("pool_size must be at least 1")
        self.ops = ops
        self.stats = LoaderStats()
        self._on_loaded = on_loaded
        self._queue: queue.PriorityQueue[tuple[int, int, tuple[str, str]]] = queue.PriorityQueue()
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], Future[int]] = {}
        self._running: set[tuple[str, str]] = set()
        self._reload: set[tuple[str, str]] = set()  # load even if loaded
        self._urgent: set[tuple[str, str]] = set()  # queued as urgent, not yet taken
        self._alone: set[tuple[str, str]] = set()  # too large to load with others
        # Reloads asked while that key loads: answered by the load after it.
        self._after: dict[tuple[str, str], list[Future[int]]] = {}
        self._stop = threading.Event()
        self._idle = threading.Condition(self._lock)
        self._threads = [
            threading.Thread(target=self._work, name=f"catalogd-loader-{i}", daemon=True)
            for i in range(pool_size)
        ]

    def start(self) -> TableLoader:
        """Start the pool."""
        for thread in self._threads:
            thread.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        for _ in self._threads:
            self._queue.put((-1, next(self._seq), ("", "")))
        for thread in self._threads:
            if thread.ident is not None:  # started
                thread.join(timeout)

    def request(self, db: str, table: str, *, urgent: bool = False) -> Future[int]:
        """Load ``db.table`` if it is a placeholder; the Future gives the version
        at which it is published (loaded). Never blocks."""
        key = (db.lower(), table.lower())
        with self._lock:
            future = self._pending.get(key)
            if future is None:
                future = Future()
                self._pending[key] = future
            elif key in self._running or not urgent or key in self._urgent:
                return future
            if urgent:
                self._urgent.add(key)
        self._queue.put((URGENT if urgent else BACKGROUND, next(self._seq), key))
        return future

    def request_urgent(self, db: str, table: str) -> None:
        """An urgent :meth:`request` (a subscriber waits), as the server's
        ``on_load_request``: never blocks."""
        self.request(db, table, urgent=True)

    def request_reload(self, db: str, table: str) -> Future[int]:
        """An urgent load even if loaded (``table`` "": the database's names and
        functions), after a write through an HMS endpoint. Never blocks; a
        request arriving while that key loads makes it load once more.

        The Future gives the version whose state shows a load that *started after
        this call* (so it read HMS after the write): the published version of the
        change, the current one when nothing changed or the object is gone from HMS
        (its removal is published by then); an exception when the load failed."""
        key = (db.lower(), table.lower())
        with self._lock:
            self._reload.add(key)
            if key in self._running:  # that load may have read HMS before the write
                waiter: Future[int] = Future()
                self._after.setdefault(key, []).append(waiter)
                return waiter
        return self.request(db, table, urgent=True)

    def enqueue_unloaded(self, db: str | None = None) -> int:
        """Queue every placeholder (of one database); returns how many."""
        tables = self.ops.unloaded(db)
        for d, t in tables:
            self.request(d, t)
        return len(tables)

    @property
    def queued(self) -> int:
        with self._lock:
            return len(self._pending)

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is queued or loading; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True

    def _work(self) -> None:
        while not self._stop.is_set():
            _, _, key = self._queue.get()
            if self._stop.is_set():
                return
            with self._lock:
                self._urgent.discard(key)
                if self._pending.get(key) is None or key in self._running:
                    continue  # done already, or another worker has it
                self._running.add(key)
                reload = key in self._reload
                self._reload.discard(key)
                alone = reload or not key[1] or key in self._alone
                more = [] if alone else self._claim_more(key)
            if more:
                more = self._release_large(key, more)
            if more:
                self._load_together([key, *more])
            else:
                self._load_one(key, reload)

    def _claim_more(self, key: tuple[str, str]) -> list[tuple[str, str]]:
        """Under the lock: up to ``ops.load_batch - 1`` more queued background tables of
        ``key``'s database, claimed (running), to load together with it; queue entries
        of claimed tables are skipped when they come up."""
        limit = self.ops.load_batch - 1
        found: list[tuple[str, str]] = []
        # Claimed ones stay pending until done: skip past what the other loader
        # threads hold, but look no further than that (the scan holds the lock).
        for scanned, other in enumerate(self._pending):
            if len(found) >= limit or scanned > (len(self._threads) + 1) * (limit + 1):
                break
            if (
                other[0] == key[0]
                and other[1]
                and other != key
                and other not in self._running
                and other not in self._reload
                and other not in self._urgent
                and other not in self._alone
            ):
                found.append(other)
                self._running.add(other)
        return found

    def _release_large(
        self, key: tuple[str, str], more: list[tuple[str, str]]
    ) -> list[tuple[str, str]]:
        """The tables of ``more`` to load together with ``key``: large ones (one query
        asks) are given back to the queue, to load alone; when ``key`` is one, all are
        given back (it loads alone first: a large table read early commits early)."""
        try:
            large = self.ops.loads_alone(key[0], [key[1]] + [t for _, t in more])
        except Exception as exc:  # noqa: BLE001 - then each loads alone, and reports
            log.debug("cannot tell large tables of %s apart: %s", key[0], exc)
            large = {key[1]} | {t for _, t in more}
        back = more if key[1] in large else [k for k in more if k[1] in large]
        with self._lock:
            self._alone.update(k for k in [key, *more] if k[1] in large)
            for other in back:
                self._running.discard(other)
        for other in back:
            self._queue.put((BACKGROUND, next(self._seq), other))
        return [k for k in more if k not in back]

    def _load_one(self, key: tuple[str, str], reload: bool) -> None:
        started = time.monotonic()
        version = 0
        presence = "absent"
        error: BaseException | None = None
        try:
            # A reload (after a write through the HMS endpoint) may name a table
            # the catalog does not hold yet: it always loads, and counts.
            if reload:
                presence = "placeholder"
                try:
                    if not key[0]:  # ("", ""): the grants, after a grant through an endpoint
                        version = self.ops.load_privileges()
                    elif key[1]:
                        version = self.ops.load_table(*key)
                    else:
                        version = self.ops.reload_database(key[0])
                except NotFoundError:  # gone from HMS: its removal is published now
                    version = self.ops.version()
            else:
                # One look decides (placeholder, loaded or absent) and loads in the same turn.
                seen = self.ops.load_placeholder(*key)
                presence, version = seen.presence, seen.version
            if presence == "absent":
                raise NotFoundError(f"table {key[0]}.{key[1]} not found")
        except Exception as exc:  # noqa: BLE001 - a loader thread must survive
            error = exc
        self._finish(key, presence, version, error, time.monotonic() - started)

    def _load_together(self, keys: list[tuple[str, str]]) -> None:
        """Background loads of several tables of one database (``Operations.load_tables``)."""
        started = time.monotonic()
        presences: dict[tuple[str, str], str] = {}
        results: dict[str, int | Exception] = {}
        try:
            presences = {key: self.ops.presence(*key) for key in keys}
            placeholders = [t for (_, t), p in presences.items() if p == "placeholder"]
            results = self.ops.load_tables(keys[0][0], placeholders) if placeholders else {}
            for (_, t), presence in presences.items():
                if presence == "loaded":
                    results[t] = self.ops.load_table(keys[0][0], t, only_if_unloaded=True)
        except Exception as exc:  # noqa: BLE001 - a loader thread must survive
            results = {t: results.get(t, exc) for _, t in keys}
        share = (time.monotonic() - started) / len(keys)
        for key in keys:
            presence = presences.get(key, "placeholder")
            outcome: int | Exception = results.get(key[1], 0)
            if presence == "absent":
                outcome = NotFoundError(f"table {key[0]}.{key[1]} not found")
            if isinstance(outcome, Exception):
                self._finish(key, presence, 0, outcome, share)
            else:
                self._finish(key, presence, outcome, None, share)

    def _finish(
        self,
        key: tuple[str, str],
        presence: str,
        version: int,
        error: BaseException | None,
        elapsed: float,
    ) -> None:
        if isinstance(error, NotFoundError):
            log.info("%s.%s was dropped before it could be loaded", *key)
        elif isinstance(error, CatalogError):
            self.stats.failed += 1
            log.warning("loading %s.%s failed: %s", key[0], key[1], error)
        elif error is not None:
            self.stats.failed += 1
            log.error("loading %s.%s failed", *key, exc_info=error)
        elif presence == "placeholder":
            self.stats.loaded += 1
        else:
            self.stats.skipped += 1  # loaded already: counts as no load
        if self._on_loaded is not None and error is None:
            self._on_loaded(elapsed)
        with self._lock:
            if error is None and presence == "placeholder" and key[1]:
                self.stats.timed(elapsed, *key)
            self._running.discard(key)
            self._alone.discard(key)
            future = self._pending.pop(key)
            again = key in self._reload  # asked to reload while loading
            after = self._after.pop(key, [])
            if not self._pending:
                self._idle.notify_all()
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(version)
        if again:
            _chain(self.request(*key, urgent=True), after)


def _chain(source: Future[int], waiters: list[Future[int]]) -> None:
    """Resolve every waiter as ``source`` resolves."""

    def done(finished: Future[int]) -> None:
        error = finished.exception()
        for waiter in waiters:
            if error is not None:
                waiter.set_exception(error)
            else:
                waiter.set_result(finished.result())

    if waiters:
        source.add_done_callback(done)
