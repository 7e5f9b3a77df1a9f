"""The load workers' dispatcher: at most ``slots`` tasks in the executor, the most urgent first
(real threads in place of worker processes)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from catalogd.loading.dispatch import Dispatcher
from catalogd.loading.feed import BATCH, RANGE, TABLE
from subscriber.protocol.errors import MetastoreError


def test_queued_tasks_run_by_priority_then_in_order() -> None:
    feed = Dispatcher(1)
    started: list[str] = []
    gate = threading.Event()
    with ThreadPoolExecutor(4) as pool:
        first = feed.submit(pool, BATCH, gate.wait, 30)  # holds the only slot
        queued = [
            feed.submit(pool, priority, started.append, name)
            for priority, name in (
                (BATCH, "batch-1"),
                (TABLE, "table"),
                (RANGE, "range-1"),
                (BATCH, "batch-2"),
                (RANGE, "range-2"),
            )
        ]
        assert started == []  # nothing beyond the slot reached the pool
        gate.set()
        assert first.result(timeout=30) is True
        queued[1].result(timeout=30)
        feed.table_done()  # the table named no ranges
        for future in queued:
            future.result(timeout=30)
    assert started == ["range-1", "range-2", "table", "batch-1", "batch-2"]


def test_errors_reach_the_caller_and_cancel_fails_what_is_queued() -> None:
    feed = Dispatcher(1)
    gate = threading.Event()
    with ThreadPoolExecutor(2) as pool:
        running = feed.submit(pool, TABLE, gate.wait, 30)
        failing = feed.submit(pool, TABLE, int, "not a number")
        feed.cancel(MetastoreError("the load workers are closed"))
        with pytest.raises(MetastoreError, match="closed"):
            failing.result(timeout=30)
        gate.set()
        assert running.result(timeout=30) is True
        with pytest.raises(ValueError):
            feed.submit(pool, TABLE, int, "x").result(timeout=30)
    # A shut-down pool: the task fails as closed, and the slot is given back.
    with pytest.raises(MetastoreError, match="closed"):
        feed.submit(pool, TABLE, int, "1").result(timeout=30)
    assert feed.submit(ThreadPoolExecutor(1), TABLE, int, "2").result(timeout=30) == 2


def test_batches_wait_until_a_single_tables_ranges_are_submitted() -> None:
    feed = Dispatcher(2)
    started: list[str] = []
    gate = threading.Event()
    with ThreadPoolExecutor(4) as pool:
        header = feed.submit(pool, TABLE, gate.wait, 30)  # a free slot remains
        batch = feed.submit(pool, BATCH, started.append, "batch")
        assert started == []  # the table's first task may name ranges: they go first
        gate.set()
        header.result(timeout=30)
        time.sleep(0.1)
        assert started == []  # done, but its caller has not submitted the ranges yet
        ranges = [feed.submit(pool, RANGE, started.append, f"range-{i}") for i in range(3)]
        feed.table_done()
        batch.result(timeout=30)
        for future in ranges:
            future.result(timeout=30)
    assert started[-1] == "batch"


def test_nothing_reaches_the_pool_while_held_then_the_most_urgent_first() -> None:
    # While the workers start, every table's first task arrives: the large table's
    # must go first even if small-table batches were submitted before it.
    feed = Dispatcher(1)
    started: list[str] = []
    feed.hold()
    with ThreadPoolExecutor(2) as pool:
        queued = [
            feed.submit(pool, priority, started.append, name)
            for priority, name in ((BATCH, "batch"), (TABLE, "table"), (RANGE, "range"))
        ]
        assert started == []
        feed.release()
        queued[1].result(timeout=30)
        feed.table_done()  # the table named no ranges
        for future in queued:
            future.result(timeout=30)
    assert started == ["range", "table", "batch"]
