"""The load workers' feed: which queued task goes to the worker processes next.

A ``ProcessPoolExecutor`` runs what it is given in submission order, so the
workers are handed at most ``slots`` tasks at a time (one per worker) and the rest
wait here, to go by priority:

* ``RANGE`` first (the ranges of a large table, and its header), then ``TABLE``
  (a single table's first task), then ``BATCH`` (small tables read together);
  equal priorities in submission order.
* No ``BATCH`` while a ``TABLE`` task is queued, runs, or has not had the ranges it
  may name submitted (:meth:`Feed.table_done`): the large table's read then ends
  early, and its commit (one long submission on the server thread, ~1 s per
  100,000 partitions) runs while the workers still read small tables, instead of
  after everything.
* Nothing while held (:meth:`Feed.hold`): while the workers start, every table's
  first task arrives, and the most urgent then goes first (handed over at once,
  the first few small-table batches took the workers before the large table's task
  had arrived, and its commit came last).

Pure bookkeeping: no processes, threads, locks or clock. Not thread-safe: its owner
(:class:`~catalogd.loading.dispatch.Dispatcher`) calls it under its lock.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Generic, TypeVar

__all__ = ["BATCH", "RANGE", "TABLE", "Feed"]

# Task priorities, lower first.
RANGE, TABLE, BATCH = 0, 1, 2

T = TypeVar("T")


class Feed(Generic[T]):
    """Tasks of type ``T`` queued by priority, handed out while fewer than ``slots`` run."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("slots must be at least 1")
        self._slots = slots
        self._queue: list[tuple[int, int, T]] = []
        self._seq = itertools.count()
        self._running = 0
        self._tables = 0  # TABLE tasks added and not yet table_done()
        self._held = False

    @property
    def running(self) -> int:
        """Tasks handed out by :meth:`next` and not yet :meth:`finished`."""
        return self._running

    def __len__(self) -> int:
        """Tasks queued, not handed out yet."""
        return len(self._queue)

    def add(self, priority: int, task: T) -> None:
        """Queue ``task``. A ``TABLE`` task holds back batches until :meth:`table_done`."""
        heapq.heappush(self._queue, (priority, next(self._seq), task))
        self._tables += priority == TABLE

    def next(self) -> T | None:
        """The task to start now, counted as running; None when none may start (no free
        slot, held, nothing queued, or only batches while a table is not done)."""
        if self._held or self._running >= self._slots or not self._queue:
            return None
        if self._queue[0][0] == BATCH and self._tables:
            return None
        _, _, task = heapq.heappop(self._queue)
        self._running += 1
        return task

    def finished(self) -> None:
        """A task handed out by :meth:`next` has ended (or never reached a worker): its
        slot is free."""
        if self._running <= 0:
            raise ValueError("finished() without a running task")
        self._running -= 1

    def table_done(self) -> None:
        """A ``TABLE`` task's caller has added the ranges it named (or failed): batches
        may go. Called once per ``TABLE`` task added."""
        if self._tables <= 0:
            raise ValueError("table_done() without a TABLE task")
        self._tables -= 1

    def hold(self) -> None:
        """Hand out nothing until :meth:`release`."""
        self._held = True

    def release(self) -> None:
        self._held = False

    def clear(self) -> list[T]:
        """Remove and return every queued task (not the running ones), in queue order."""
        queued = [task for _, _, task in sorted(self._queue)]
        self._queue = []
        return queued
