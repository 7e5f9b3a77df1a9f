"""Fair per-table turns: loads, refreshes and invalidates of one table take turns in order.

:class:`TableTurns` hands out one turn per table at a time, first come first
served (a ticket queue), so a refresh waits behind at most the commands that
arrived before it and can never be starved by a stream of newer invalidates.
A turn is re-entrant within a thread (a partial refresh of a placeholder
loads the whole table). The one overload bound: when ``max_waiting`` commands
already wait for a table, the next gets :class:`BusyError` at once.

Thread-safe; entries for tables nobody waits for are dropped, so memory is
bounded by the tables in use.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from subscriber.protocol.errors import BusyError

Table = tuple[str, str]


@dataclass
class _Queue:
    next_ticket: int = 0
    serving: int = 0
    owner: int | None = None  # thread ident holding the turn
    depth: int = 0  # re-entrant holds by the owner
    abandoned: set[int] = field(default_factory=set)  # tickets whose holder timed out


class TableTurns:
    """FIFO turns per table (see the module docstring).

    Args:
        max_waiting: commands that may wait for one table's turn at once.
        timeout_s: the longest one waits for its turn before BusyError.
    """

    def __init__(self, *, max_waiting: int = 64, timeout_s: float = 120.0) -> None:
        self.max_waiting = max_waiting
        self._timeout = timeout_s
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queues: dict[Table, _Queue] = {}

    @contextlib.contextmanager
    def turn(self, table: Table) -> Iterator[None]:
        """Hold ``table``'s turn for the ``with`` block (blocks until it is ours).

        Raises:
            BusyError: ``max_waiting`` commands already wait for it, or the wait
                exceeded ``timeout_s``.
        """
        me = threading.get_ident()
        with self._lock:
            q = self._queues.setdefault(table, _Queue())
            if q.owner == me:
                q.depth += 1
                reentered = True
            else:
                reentered = False
                if q.next_ticket - q.serving >= self.max_waiting:
                    raise BusyError(
                        f"overloaded: {self.max_waiting} commands already wait for "
                        f"{table[0]}.{table[1]}; try again"
                    )
                ticket = q.next_ticket
                q.next_ticket += 1
                if not self._changed.wait_for(lambda: q.serving == ticket, self._timeout):
                    # Give the ticket up in order: whoever is next must not wait for us.
                    self._skip(table, q, ticket)
                    raise BusyError(f"{table[0]}.{table[1]} stayed busy; try again")
                q.owner, q.depth = me, 1
        try:
            yield
        finally:
            with self._lock:
                q.depth -= 1
                if not reentered and q.depth == 0:
                    q.owner = None
                    self._advance(table, q)

    def waiting(self, table: Table) -> int:
        """Commands holding or waiting for ``table``'s turn now."""
        with self._lock:
            q = self._queues.get(table)
            return 0 if q is None else q.next_ticket - q.serving

    # -- under self._lock ----------------------------------------------------------------

    def _advance(self, table: Table, q: _Queue) -> None:
        q.serving += 1
        while q.serving in q.abandoned:
            q.abandoned.discard(q.serving)
            q.serving += 1
        if q.serving == q.next_ticket:
            del self._queues[table]
        self._changed.notify_all()

    def _skip(self, table: Table, q: _Queue, ticket: int) -> None:
        if q.serving == ticket:
            self._advance(table, q)
        else:
            q.abandoned.add(ticket)
