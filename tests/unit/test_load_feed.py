"""The load workers' feed: at most ``slots`` tasks in the pool, the most urgent first."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from catalogd.freshness.load_workers import BATCH, RANGE, TABLE, _Feed
from subscriber.protocol.errors import MetastoreError


def test_queued_tasks_run_by_priority_then_in_order() -> None:
    feed = _Feed(1)
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
        for future in queued:
            future.result(timeout=30)
    assert started == ["range-1", "range-2", "table", "batch-1", "batch-2"]


def test_errors_reach_the_caller_and_cancel_fails_what_is_queued() -> None:
    feed = _Feed(1)
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


def test_batches_wait_while_a_single_table_task_runs() -> None:
    feed = _Feed(2)
    started: list[str] = []
    gate = threading.Event()
    with ThreadPoolExecutor(4) as pool:
        header = feed.submit(pool, TABLE, gate.wait, 30)  # a free slot remains
        batch = feed.submit(pool, BATCH, started.append, "batch")
        assert started == []  # the table's first task may name ranges: they go first
        gate.set()
        header.result(timeout=30)
        batch.result(timeout=30)
    assert started == ["batch"]
