"""HMS notification events: which ones are new, and what they ask to reload.

HMS 2.x takes event ids unlocked, so racing writers can log two different
events under one id, or commit one under an id already read. So an event is
known by its content as well as its id (:func:`identity`), and
:class:`EventWindow` remembers, for ``late_s`` after an id was first read,
which events under it were handled: a re-read of those ids finds late commits,
and replays of a handled event are skipped.

Everything here is pure except :func:`apply_events`, which calls the actions it
is given: no clock (``now`` is passed in), no threads, no HMS.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from catalogd.freshness import messages

TABLE_EVENTS = frozenset(
    {
        "CREATE_TABLE",
        "ALTER_TABLE",
        "DROP_TABLE",
        "ADD_PARTITION",
        "DROP_PARTITION",
        "ALTER_PARTITION",
        "INSERT",
    }
)
DB_EVENTS = frozenset({"CREATE_DATABASE", "DROP_DATABASE", "ALTER_DATABASE"})
# Table events that may change a database's table names (create, drop, rename).
_NAME_EVENTS = frozenset({"CREATE_TABLE", "DROP_TABLE", "ALTER_TABLE"})


def identity(event: Any) -> int:
    """What tells apart two events that HMS logged under one id."""
    return hash(
        (
            event.eventId,
            event.eventTime,
            event.eventType,
            event.dbName,
            event.tableName,
            event.message,
        )
    )


@dataclass
class Selection:
    """What :meth:`EventWindow.select` made of a batch of events."""

    fresh: list[Any] = field(default_factory=list)
    """Events to apply, in the order read."""
    duplicates: int = 0
    """Events above the last id read that were handled already (replays)."""
    late: int = 0
    """New events under an id already read (late commits or racing writers)."""


class EventWindow:
    """Which events were handled, per id, for ``late_s`` after the id was first read.

    Not thread-safe; pure: the time is always passed in.
    """

    def __init__(self, late_s: float) -> None:
        self.late_s = late_s
        self._first_read: dict[int, float] = {}  # id -> when first read
        self._handled: dict[int, set[int]] = {}  # id -> identities handled

    def __len__(self) -> int:
        """How many ids are remembered."""
        return len(self._first_read)

    def reread_after(self, last: int, now: float) -> int | None:
        """Where to re-read from for late commits: the id *after* which every id
        at most ``last`` first read in the last ``late_s`` comes; None when there
        are none (HMS was quiet that long)."""
        recent = [i for i, t in self._first_read.items() if t >= now - self.late_s and i <= last]
        return min(recent) - 1 if recent else None

    def select(self, events: Iterable[Any], last: int) -> Selection:
        """The events not handled yet, read after the last id read was ``last``.

        ``events`` may hold a re-read of the window (ids at most ``last``) and
        the events after ``last``. An event handled before, or seen earlier in
        ``events``, is skipped; it counts as a duplicate when above ``last`` (a
        re-read of the window is no duplicate).
        """
        selection = Selection()
        in_batch: set[int] = set()
        for event in events:
            key = identity(event)
            handled = self._handled.get(event.eventId, set())
            if key in handled or key in in_batch:
                if event.eventId > last:
                    selection.duplicates += 1
                continue
            if handled or event.eventId <= last:
                selection.late += 1
            in_batch.add(key)
            selection.fresh.append(event)
        return selection

    def record(self, handled: Iterable[Any], now: float) -> None:
        """Remember ``handled`` events as handled at ``now``; forget ids first
        read more than ``late_s`` before ``now``."""
        for event in handled:
            self._handled.setdefault(event.eventId, set()).add(identity(event))
            self._first_read.setdefault(event.eventId, now)
        for event_id in [i for i, t in self._first_read.items() if t < now - self.late_s]:
            del self._first_read[event_id]
            self._handled.pop(event_id, None)


@dataclass(frozen=True)
class EventPlan:
    """What a batch of fresh events asks for."""

    gap: tuple[int, int] | None
    """Ids skipped before the first new one (expired before they were read)."""
    dbs: tuple[str, ...]
    """Databases whose names to list again, sorted."""
    tables: tuple[tuple[str, str], ...]
    """(db, table) to reload, sorted (when their database is relisted too,
    only those the catalog still holds afterwards)."""
    every_database: bool = False
    """An ``ALTER_TABLE`` message could not be read, so where its table came from is
    unknown: list every database again (:mod:`catalogd.freshness.messages`)."""


def plan_events(fresh: Sequence[Any], last: int) -> EventPlan:
    """What ``fresh`` events (read after id ``last``) ask to reload."""
    ordered = sorted(fresh, key=lambda e: e.eventId)
    ahead = [e.eventId for e in ordered if e.eventId > last]
    gap = (last + 1, ahead[0] - 1) if ahead and ahead[0] > last + 1 and last > 0 else None
    dbs: set[str] = set()
    tables: set[tuple[str, str]] = set()
    every_database = False
    for event in ordered:
        db = (event.dbName or "").lower()
        if event.eventType in DB_EVENTS and db:
            dbs.add(db)
        elif event.eventType in TABLE_EVENTS and db and event.tableName:
            tables.add((db, event.tableName.lower()))
            if event.eventType in _NAME_EVENTS:
                dbs.add(db)
            if event.eventType == "ALTER_TABLE":  # a rename's old name is in the message
                before = messages.table_before(event)
                if isinstance(before, messages.Unreadable):
                    every_database = True
                else:
                    dbs.add(before[0])
    return EventPlan(gap, tuple(sorted(dbs)), tuple(sorted(tables)), every_database)


class EventActions(Protocol):
    """What applying events does to the catalog (the detector implements it)."""

    def relist(self, db: str) -> None: ...

    def databases(self) -> list[str]: ...

    def known(self, db: str, table: str) -> bool: ...

    def reload(self, db: str, table: str) -> None: ...


def apply_events(plan: EventPlan, actions: EventActions) -> None:
    """Relist the plan's databases, then reload its tables; raises on HMS errors.

    A table in a relisted database is reloaded only if the catalog still holds
    it after the relist (so an event for a table dropped since brings nothing back).
    """
    dbs = set(plan.dbs) | (set(actions.databases()) if plan.every_database else set())
    for db in sorted(dbs):
        actions.relist(db)
    for db, table in plan.tables:
        if db not in dbs or actions.known(db, table):
            actions.reload(db, table)
