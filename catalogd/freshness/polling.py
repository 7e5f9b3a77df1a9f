"""Polling HMS for changes: names every cycle, then fingerprints in rotation.

:class:`Poller` compares HMS with the catalog. Every cycle it lists database
names and the table names of each database (``1 + D`` calls for ``D``
databases), so creates and drops show up within one interval. Then it
compares fingerprints -- each loaded table's ``transient_lastDdlTime``
(tables fetched 100 per call) and the partition names of each partitioned
table -- for as many tables as one cycle's call budget allows, resuming where
the previous cycle stopped (the *rotation*), and reloads only what differs.

What polling cannot see: data written into an existing partition without a
change to its name or to the table (events see those as ALTER_PARTITION/INSERT).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from catalogd.writes.operations import Operations
from subscriber.protocol import codec
from subscriber.protocol.errors import NotFoundError

BATCH = 100  # tables per get_table_objects_by_name call

Fingerprint = tuple[str | None, set[str]]  # (transient_lastDdlTime, partition names)


class PollActions(Protocol):
    """What a difference found by polling makes the detector do."""

    def relist(self, db: str) -> None: ...

    def reload(self, db: str, table: str) -> None: ...

    def refresh_partitions(self, db: str, table: str, names: list[str]) -> None: ...


def fingerprints(state: dict[str, tuple[bytes, set[str]]]) -> dict[str, Fingerprint]:
    """(transient_lastDdlTime, partition names) per table, from
    :meth:`Operations.table_state` (decoded here, off the server thread)."""
    result = {}
    for name, (payload, partitions) in state.items():
        table = codec.decode_object(payload).table
        params = (table.metastore_table.parameters or {}) if table.metastore_table else {}
        result[name] = (params.get("transient_lastDdlTime"), partitions)
    return result


def rotation(
    tables: Sequence[tuple[str, str]], cursor: int, batch: int = BATCH
) -> Iterator[tuple[str, list[str]]]:
    """(db, table names) batches over ``tables`` starting at ``cursor`` and wrapping
    around: at most ``batch`` names of one database each (the rotation can wrap a
    database around the end of the list, so a batch stops at the first other one)."""
    if not tables:
        return
    start = cursor % len(tables)
    rotated = [*tables[start:], *tables[:start]]
    checked = 0
    while checked < len(rotated):
        db = rotated[checked][0]
        names = []
        for table_db, name in rotated[checked : checked + batch]:
            if table_db != db:
                break
            names.append(name)
        yield db, names
        checked += len(names)


class Poller:
    """One polling cycle at a time; remembers where the fingerprint pass stopped.

    Args:
        ops: the catalog (read) and this thread's metastore source.
        call: makes one HMS call, counted against the detector's budget:
            ``call(fn, *args)``.
        actions: what to do about a difference.
    """

    def __init__(self, ops: Operations, call: Callable[..., Any], actions: PollActions) -> None:
        self._ops, self._call, self._actions = ops, call, actions
        self.cursor = 0  # where the next fingerprint pass starts

    def cycle(self, budget: int) -> int:
        """Names of everything, then fingerprints of as many tables as fit in
        ``budget`` HMS calls. Returns how many tables were fingerprinted."""
        source = self._ops.source()
        hms_dbs = {d.lower() for d in self._call(source.database_names)}
        ours = self._ops.databases()
        for db in sorted(ours - hms_dbs):
            self._actions.relist(db)
        tables: list[tuple[str, str]] = []
        for db in sorted(hms_dbs):
            try:
                names = {t.lower() for t in self._call(source.table_names, db)}
            except NotFoundError:
                self._actions.relist(db)
                continue
            known = self._ops.table_names(db)
            if db not in ours or names != known:
                self._actions.relist(db)
            tables.extend((db, t) for t in sorted(names & known))
        return self._fingerprint(tables, budget)

    def _fingerprint(self, tables: list[tuple[str, str]], budget: int) -> int:
        if not tables:
            return 0
        spent = checked = 0
        for db, names in rotation(tables, self.cursor):
            if spent >= budget:
                break
            spent += self._compare(db, names)
            checked += len(names)
        self.cursor = (self.cursor % len(tables) + checked) % len(tables)
        return checked

    def _compare(self, db: str, names: list[str]) -> int:
        """Compare one batch of tables with HMS; returns the HMS calls made."""
        source = self._ops.source()
        calls = 1
        tables = self._call(source.get_tables, db, names)
        state = fingerprints(self._ops.table_state(db, names))
        for table in tables:
            name = table.tableName.lower()
            ours = state.get(name)
            if ours is None:  # a placeholder: the loader will read it
                continue
            ddl_time, partitions = ours
            if (table.parameters or {}).get("transient_lastDdlTime") != ddl_time:
                self._actions.reload(db, name)
                continue
            if table.partitionKeys:
                calls += 1
                names_now = set(self._call(source.partition_names, db, name))
                if names_now != partitions:
                    self._actions.refresh_partitions(db, name, sorted(names_now ^ partitions))
        return calls
