"""Per-table turns: first come first served, re-entrant, bounded, timed out in order."""

from __future__ import annotations

import threading

import pytest
from polling import wait_until

from catalogd.writes.table_locks import TableTurns
from subscriber.protocol.errors import BusyError

pytestmark = pytest.mark.timeout(30)
T = ("db", "t")


def test_turns_are_taken_in_arrival_order_and_reentrant() -> None:
    turns = TableTurns()
    order: list[int] = []
    threads = []
    with turns.turn(T), turns.turn(T):  # re-entrant in one thread
        for i in range(5):
            thread = threading.Thread(target=lambda i=i: _take(turns, order, i))
            thread.start()
            threads.append(thread)
            wait_until(lambda i=i: turns.waiting(T) == i + 2, timeout=10, what="queued")
    for thread in threads:
        thread.join(10)
    assert order == [0, 1, 2, 3, 4]
    assert turns.waiting(T) == 0 and turns._queues == {}


def _take(turns: TableTurns, order: list[int], i: int) -> None:
    with turns.turn(T):
        order.append(i)


def _try(turns: TableTurns, errors: list[BaseException]) -> None:
    try:
        with turns.turn(T):
            pass
    except BusyError as exc:
        errors.append(exc)


def test_a_timed_out_wait_is_busy_and_its_ticket_skipped() -> None:
    turns = TableTurns(timeout_s=0.2)
    errors: list[BaseException] = []
    with turns.turn(T):
        thread = threading.Thread(target=_try, args=(turns, errors))
        thread.start()
        thread.join(10)
    assert len(errors) == 1 and "stayed busy" in str(errors[0])
    _try(turns, errors)  # the abandoned ticket does not block the queue
    assert len(errors) == 1 and turns._queues == {}


def test_beyond_the_bound_is_busy_at_once() -> None:
    turns = TableTurns(max_waiting=1)
    errors: list[BaseException] = []
    with turns.turn(T):
        thread = threading.Thread(target=_try, args=(turns, errors))
        thread.start()
        thread.join(10)
    assert len(errors) == 1 and "overloaded" in str(errors[0])
