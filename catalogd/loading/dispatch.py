"""Hands the load workers' tasks to their executor in the order of the :mod:`.feed`.

The caller gets a :class:`~concurrent.futures.Future` at once; the task waits in
the feed and reaches the executor when the feed says so (a free slot, its
priority). Each task names its executor: the pool may be replaced (after a worker
died) while tasks for the old one still run. The task's outcome reaches the
caller's future as it is: its result, its exception (``BrokenProcessPool`` when a
worker died), or :class:`MetastoreError` "closed" when the executor was shut
down or the task was cancelled.

Thread-safe: callers submit from any thread; the executor's callbacks (its own
thread) free slots and hand out the next tasks.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool
from typing import Any, NamedTuple, TypeVar

from catalogd.loading.feed import Feed
from subscriber.protocol.errors import MetastoreError

__all__ = ["Dispatcher"]

T = TypeVar("T")


class _Task(NamedTuple):
    executor: Executor
    function: Callable[..., Any]
    args: tuple[Any, ...]
    outcome: Future[Any]


def _closed() -> MetastoreError:
    return MetastoreError("the load workers are closed")


class Dispatcher:
    """Tasks for executors, at most ``slots`` running at a time, by the feed's order."""

    def __init__(self, slots: int) -> None:
        self._lock = threading.Lock()
        self._feed: Feed[_Task] = Feed(slots)

    def submit(
        self, executor: Executor, priority: int, function: Callable[..., T], *args: Any
    ) -> Future[T]:
        """Queue ``function(*args)`` for ``executor`` at ``priority`` (see the feed);
        returns its future at once. Never raises: a shut-down executor fails the future."""
        outcome: Future[T] = Future()
        with self._lock:
            self._feed.add(priority, _Task(executor, function, args, outcome))
        self._pump()
        return outcome

    def hold(self) -> None:
        """Keep what is submitted queued until :meth:`release` (the workers are starting)."""
        with self._lock:
            self._feed.hold()

    def release(self) -> None:
        with self._lock:
            self._feed.release()
        self._pump()

    def table_done(self) -> None:
        """A ``TABLE`` task's caller has submitted the ranges it named (or failed): batches
        may go. Called once per ``TABLE`` submission."""
        with self._lock:
            self._feed.table_done()
        self._pump()

    def cancel(self, error: Exception) -> None:
        """Fail every task not handed to its executor yet with ``error``."""
        with self._lock:
            queued = self._feed.clear()
        for task in queued:
            task.outcome.set_exception(error)

    def _pump(self) -> None:
        """Hand the executors every task the feed lets start now."""
        while True:
            with self._lock:
                task = self._feed.next()
            if task is None:
                return
            try:
                running = task.executor.submit(task.function, *task.args)
            except (BrokenProcessPool, RuntimeError) as exc:  # broken, or shut down
                with self._lock:
                    self._feed.finished()
                task.outcome.set_exception(exc if isinstance(exc, BrokenProcessPool) else _closed())
                continue
            running.add_done_callback(functools.partial(self._finished, task.outcome))

    def _finished(self, outcome: Future[Any], running: Future[Any]) -> None:
        with self._lock:
            self._feed.finished()
        if running.cancelled():
            outcome.set_exception(_closed())
        elif (error := running.exception()) is not None:
            outcome.set_exception(error)
        else:
            outcome.set_result(running.result())
        self._pump()
