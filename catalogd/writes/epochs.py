"""Table epochs: the server thread's record of which table changed since when.

Every table has an *epoch*, a counter that moves whenever a write publishes
newer metadata for the table (a load, a partition refresh, an invalidate, a
names listing that adds, drops or resets it). A load notes the epoch before it
reads HMS and commits only if the epoch is unchanged (see
:class:`~catalogd.writes.commits.Guard`); so a slow load can never overwrite a
newer refresh or invalidate.

Ownership: a :class:`TableEpochs` is changed only on the server thread, by
:func:`catalogd.writes.commits.run` (each write's guard and the tables it
touches), in the same turn as the commit it guards. Other threads may read an
epoch (:meth:`TableEpochs.current`): a stale read is harmless, because the
guard compares again on the server thread.
"""

from __future__ import annotations

from collections.abc import Iterable

Table = tuple[str, str]  # (db, table), lower case


class TableEpochs:
    """Per-table epochs (0 for a table never written). Written on the server thread only."""

    def __init__(self) -> None:
        self._epochs: dict[Table, int] = {}

    def current(self, table: Table) -> int:
        """``table``'s epoch now (any thread; the guard checks again on the server thread)."""
        return self._epochs.get(table, 0)

    def advance_if(self, table: Table, epoch: int) -> bool:
        """Server thread: move ``table`` past ``epoch`` if it is still there; False
        when another write moved it first."""
        if self._epochs.get(table, 0) != epoch:
            return False
        self._epochs[table] = epoch + 1
        return True

    def bump(self, tables: Iterable[Table]) -> None:
        """Server thread: move every table of ``tables`` on by one."""
        for table in tables:
            self._epochs[table] = self._epochs.get(table, 0) + 1
