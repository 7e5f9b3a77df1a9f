"""The load workers' feed, pure: which task goes next, with no processes, threads or clock."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from catalogd.loading import feed as feed_module
from catalogd.loading.feed import BATCH, RANGE, TABLE, Feed


def _drain(feed: Feed[str]) -> list[str]:
    """Every task the feed hands out now."""
    out: list[str] = []
    while (task := feed.next()) is not None:
        out.append(task)
    return out


def test_by_priority_then_in_order_and_at_most_slots() -> None:
    feed: Feed[str] = Feed(2)
    for priority, name in [(TABLE, "t1"), (RANGE, "r1"), (TABLE, "t2"), (RANGE, "r2")]:
        feed.add(priority, name)
    assert _drain(feed) == ["r1", "r2"]  # two slots
    assert feed.running == 2 and len(feed) == 2
    feed.finished()
    assert _drain(feed) == ["t1"]
    feed.finished()
    feed.finished()
    assert _drain(feed) == ["t2"]
    assert feed.running == 1 and len(feed) == 0


def test_batches_wait_for_every_table_to_be_done() -> None:
    feed: Feed[str] = Feed(4)
    feed.add(BATCH, "b1")
    feed.add(TABLE, "t")
    assert _drain(feed) == ["t"]  # the batch waits: the table may name ranges
    feed.finished()
    assert _drain(feed) == []  # its task ended, but its ranges are not added yet
    feed.add(RANGE, "r")
    feed.table_done()
    assert _drain(feed) == ["r", "b1"]


def test_a_batch_first_in_line_blocks_nothing_of_higher_priority() -> None:
    feed: Feed[str] = Feed(4)
    feed.add(TABLE, "t")
    assert _drain(feed) == ["t"]
    feed.add(BATCH, "b")
    feed.add(RANGE, "r")
    assert _drain(feed) == ["r"]
    feed.table_done()
    assert _drain(feed) == ["b"]


def test_nothing_while_held_then_the_most_urgent_first() -> None:
    feed: Feed[str] = Feed(1)
    feed.hold()
    for priority, name in [(BATCH, "b"), (TABLE, "t"), (RANGE, "r")]:
        feed.add(priority, name)
    assert _drain(feed) == []
    feed.release()
    assert _drain(feed) == ["r"]
    feed.finished()
    assert _drain(feed) == ["t"]
    feed.finished()
    feed.table_done()
    assert _drain(feed) == ["b"]


def test_clear_returns_the_queued_in_order_and_keeps_the_running() -> None:
    feed: Feed[str] = Feed(1)
    for priority, name in [(RANGE, "r"), (BATCH, "b"), (TABLE, "t")]:
        feed.add(priority, name)
    assert _drain(feed) == ["r"]
    assert feed.clear() == ["t", "b"]
    assert len(feed) == 0 and feed.running == 1
    feed.finished()
    feed.table_done()  # the cleared table's caller still reports it done
    feed.add(BATCH, "b2")
    assert _drain(feed) == ["b2"]


def test_unbalanced_calls_are_refused() -> None:
    feed: Feed[str] = Feed(1)
    with pytest.raises(ValueError):
        feed.finished()
    with pytest.raises(ValueError):
        feed.table_done()
    with pytest.raises(ValueError):
        Feed(0)


def test_the_feed_imports_no_processes_threads_or_clock() -> None:
    tree = ast.parse(Path(feed_module.__file__).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }
    assert imported <= {"__future__", "heapq", "itertools", "typing"}, imported
