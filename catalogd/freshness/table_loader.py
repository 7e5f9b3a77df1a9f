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

The loader may be made before the :class:`~catalogd.freshness.operations.Operations`
it loads through, and given them at :meth:`TableLoader.start`: the server needs
the loader (its ``on_load_request`` is :meth:`TableLoader.request_urgent`)
before Operations can be made over the server. Requests made before
:meth:`~TableLoader.start` wait in the queue.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from catalogd.freshness.operations import Operations
from subscriber.protocol.errors import CatalogError, NotFoundError

log = logging.getLogger(__name__)

URGENT, BACKGROUND = 0, 10


@dataclass
class LoaderStats:
    loaded: int = 0
    skipped: int = 0
    failed: int = 0
    urgent: int = 0
    busy_seconds: float = 0.0
    last_idle_at: float | None = None


class TableLoader:
    """Loads placeholder tables in the background. Thread-safe.

    Args:
        ops: the operations to load through; or None, and given to :meth:`start`.
        pool_size: loader threads.
        on_loaded: called with the seconds each successful load took.
    """

    def __init__(
        self,
        ops: Operations | None = None,
        *,
        pool_size: int = 4,
        on_loaded: Callable[[float], None] | None = None,
    ) -> None:
        if pool_size < 1:
            raise ValueError("pool_size must be at least 1")
        self._ops = ops
        self.stats = LoaderStats()
        self._on_loaded = on_loaded
        self._queue: queue.PriorityQueue[tuple[int, int, tuple[str, str]]] = queue.PriorityQueue()
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], Future[int]] = {}
        self._running: set[tuple[str, str]] = set()
        self._reload: set[tuple[str, str]] = set()  # load even if loaded
        self._urgent: set[tuple[str, str]] = set()  # queued as urgent, not yet taken
        self._stop = threading.Event()
        self._idle = threading.Condition(self._lock)
        self._threads = [
            threading.Thread(target=self._work, name=f"catalogd-loader-{i}", daemon=True)
            for i in range(pool_size)
        ]

    @property
    def ops(self) -> Operations:
        if self._ops is None:
            raise RuntimeError("the table loader has no Operations yet: pass them to start()")
        return self._ops

    def start(self, ops: Operations | None = None) -> TableLoader:
        """Start the pool, loading through ``ops`` (or those given at construction)."""
        if ops is not None:
            self._ops = ops
        if self._ops is None:
            raise RuntimeError("TableLoader.start() needs the Operations to load through")
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
                self.stats.urgent += 1
                self._urgent.add(key)
        self._queue.put((URGENT if urgent else BACKGROUND, next(self._seq), key))
        return future

    def request_urgent(self, db: str, table: str) -> None:
        """An urgent :meth:`request` (a subscriber waits), as the server's
        ``on_load_request``: never blocks."""
        self.request(db, table, urgent=True)

    def request_reload(self, db: str, table: str) -> None:
        """An urgent load even if loaded (``table`` "": the database's names and
        functions), after a write through an HMS endpoint. Never blocks; a
        request arriving while that key loads makes it load once more."""
        with self._lock:
            self._reload.add((db.lower(), table.lower()))
        self.request(db, table, urgent=True)

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
                future = self._pending.get(key)
                if future is None or key in self._running:
                    continue  # done already, or another worker has it
                self._running.add(key)
                reload = key in self._reload
                self._reload.discard(key)
            started = time.monotonic()
            version = 0
            presence = "absent"
            error: BaseException | None = None
            try:
                # A reload (after a write through the HMS endpoint) may name a table
                # the catalog does not hold yet: it always loads, and counts.
                presence = "placeholder" if reload else self.ops.presence(*key)
                if presence == "absent":
                    raise NotFoundError(f"table {key[0]}.{key[1]} not found")
                if reload and not key[1]:
                    version = self.ops.reload_database(key[0])
                else:
                    version = self.ops.load_table(*key, only_if_unloaded=not reload)
            except NotFoundError as exc:
                log.info("%s.%s was dropped before it could be loaded", *key)
                error = exc
            except CatalogError as exc:
                self.stats.failed += 1
                log.warning("loading %s.%s failed: %s", key[0], key[1], exc)
                error = exc
            except Exception as exc:  # noqa: BLE001 - a loader thread must survive
                self.stats.failed += 1
                log.exception("loading %s.%s failed", *key)
                error = exc
            else:
                if presence == "placeholder":
                    self.stats.loaded += 1
                else:
                    self.stats.skipped += 1  # loaded already: counts as no load
            elapsed = time.monotonic() - started
            self.stats.busy_seconds += elapsed
            if self._on_loaded is not None and error is None:
                self._on_loaded(elapsed)
            with self._lock:
                self._running.discard(key)
                self._pending.pop(key, None)
                again = key in self._reload  # asked to reload while loading
                if not self._pending:
                    self.stats.last_idle_at = time.monotonic()
                    self._idle.notify_all()
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(version)
            if again:
                self.request(*key, urgent=True)
