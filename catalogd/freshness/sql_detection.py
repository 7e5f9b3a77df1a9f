"""Change detection by SQL fingerprints of the HMS backing database (``--hms-db``).

:class:`SqlPoller` stands in for :class:`~catalogd.freshness.polling.Poller`
when catalogd reads the metastore database directly. Every cycle costs a
fixed handful of aggregate queries (:mod:`catalogd.metastore.sql.fingerprints`:
about 10, answered with one row per database and per table whatever the
number of partitions; the per-table partition hashes, which join every
partition, only in cycles where a join-free total over all partition
parameters, storage descriptors and SerDe parameters changed) and compares
them with the previous cycle's:

* a database added, dropped or altered (``ALTER DATABASE``: owner, location,
  properties), or tables added or dropped in it -> ``relist(db)``;
* a table whose own row, storage descriptor, parameters or SerDe properties
  changed -> ``reload(db, table)``;
* a table whose partitions changed (count, ids, create times, locations,
  parameters: statistics from ``ANALYZE ... PARTITION``) -> one more query
  for that table's per-partition fingerprints and ``refresh_partitions`` of
  only those that differ (the first time a table changes, with nothing to
  compare with, the whole table is reloaded -- the catalog publishes only
  objects whose bytes changed);
* roles, memberships or grants -> reload privileges; functions -> reload them.

It starts from a :meth:`SqlPoller.baseline` taken *before* the initial load,
so a change committed during the load is seen by the first cycle. When HMS
writes ``NOTIFICATION_LOG``, the detector follows those events instead (the
SQL source reads them); grants are then still covered by the privileges
interval.

**Idle cycles cost one query.** Every cycle first reads the database server's write
position (PostgreSQL WAL, InnoDB redo log:
:func:`~catalogd.metastore.sql.fingerprints.change_marker`); when it has not moved
for two cycles, nothing was written and the fingerprint queries are skipped. So a
1M-partition metastore can be watched every second: the full pass (about 1 s of
database time at 1M partitions) runs only after writes. Writes to other databases
of the same server open the gate too (then cycles are full passes, as without it).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from catalogd.freshness.operations import Operations
from catalogd.freshness.polling import PollActions
from catalogd.metastore.sql import fingerprints as fp
from subscriber.protocol.errors import CatalogError, MetastoreUnavailableError

log = logging.getLogger(__name__)

# Per-partition fingerprints kept for recently changed tables (LRU), in partitions.
MAX_KEPT_PARTITIONS = 1_000_000


class SqlPoller:
    """One SQL fingerprint cycle at a time; see the module doc.

    Args:
        ops: the catalog; ``ops.source()`` must be a
            :class:`~catalogd.metastore.sql.SqlSource`.
        max_kept_partitions: bound on the per-partition fingerprints kept.

    Not thread-safe: the detector thread runs it (``baseline`` may run before).
    """

    def __init__(self, ops: Operations, *, max_kept_partitions: int = MAX_KEPT_PARTITIONS) -> None:
        self._ops = ops
        self._call: Callable[..., Any] = lambda fn, *args: fn(*args)
        self._actions: PollActions | None = None
        self._dbs: dict[str, fp.Fingerprint] | None = None
        self._tables: dict[tuple[str, str], fp.Fingerprint] = {}
        self._totals: fp.Fingerprint | None = None
        self._grants: fp.Fingerprint | None = None
        self._functions: fp.Fingerprint | None = None
        self._parts: OrderedDict[tuple[str, str], dict[str, fp.Fingerprint]] = OrderedDict()
        self._kept = 0
        self._max_kept = max_kept_partitions
        self.queries = 0  # SQL round trips so far (for status and benchmarks)
        self.skipped = 0  # cycles that found nothing written (one query each)
        self._gate = True  # False: the write position cannot be read; always full passes
        self._marks: tuple[Any, Any] = (None, None)  # the last two write positions

    def attach(self, call: Callable[..., Any], actions: PollActions) -> None:
        """Called by the detector: ``call(fn, *args)`` counts a metastore call,
        ``actions`` are what a difference makes it do."""
        self._call, self._actions = call, actions

    def _run(self, query: Callable[..., Any], *args: Any) -> Any:
        source: Any = self._ops.source()
        self.queries += 1
        return self._call(source.run, (lambda conn: query(conn, *args)))

    def _marker(self) -> Any:
        """The database server's write position (fingerprints.change_marker), or None."""
        if not self._gate:
            return None
        try:
            return self._run(fp.change_marker)
        except MetastoreUnavailableError:
            raise  # the detector retries the whole cycle
        except CatalogError as exc:
            log.warning("cannot read the database's write position (%s): full passes", exc)
            self._gate = False  # e.g. no privilege: every cycle a full pass
            return None

    def baseline(self) -> None:
        """Read every fingerprint without acting on differences (before the load)."""
        self._marks = (None, self._marker())
        self._dbs = self._run(fp.databases)
        self._totals = self._run(fp.partition_totals)
        self._tables = self._run(fp.tables, True)
        self._grants = self._run(fp.grants)
        self._functions = self._run(fp.functions)

    def cycle(self, budget: int = 0) -> int:
        """Compare everything with the last cycle and act on differences.

        ``budget`` is ignored (a cycle is a fixed number of queries). Returns the
        number of tables compared. Raises the source's errors (the detector
        logs them and keeps the previous fingerprints).
        """
        if self._dbs is None:
            self.baseline()
            return 0
        actions = self._actions
        assert actions is not None, "attach() first"
        marker = self._marker()
        if marker is not None and self._marks == (marker, marker):
            self.skipped += 1
            return 0  # nothing written to the database server for two cycles
        self._marks = (self._marks[1], marker)
        dbs = self._run(fp.databases)
        totals = self._run(fp.partition_totals)
        # Per-table partition hashes cost joins over every partition: only when some
        # partition's parameters, location or SerDe changed anywhere.
        detailed = totals != self._totals
        tables = self._run(fp.tables, detailed)
        if not detailed:
            tables = {k: _keep_hashes(v, self._tables.get(k)) for k, v in tables.items()}
        grants = self._run(fp.grants)
        functions = self._run(fp.functions)
        listed = set(self._dbs) | set(dbs)
        relisted = {db for db in listed if self._dbs.get(db) != dbs.get(db)}
        names_before = _names_by_db(self._tables)
        names_now = _names_by_db(tables)
        relisted |= {db for db in listed if names_before.get(db) != names_now.get(db)}
        for db in sorted(relisted):
            actions.relist(db.lower())
        for (db, table), now in sorted(tables.items()):
            before = self._tables.get((db, table))
            if before is None or before == now:
                continue  # a new table is loaded by relist
            if not self._ops.is_loaded(db, table):
                self._parts.pop((db, table), None)
                continue  # a placeholder: the loader reads the current state
            if before[:-3] != now[:-3]:
                self._parts.pop((db, table), None)
                actions.reload(db, table)
            elif before[-3] != now[-3] or (None not in before[-2:] and before[-2:] != now[-2:]):
                self._partitions_changed(db, table, actions)
        self._dbs, self._tables, self._totals = dbs, tables, totals
        if grants != self._grants:
            self._grants = grants
            try:
                self._ops.load_privileges()
            except CatalogError as exc:
                log.warning("reloading privileges after a grant change failed: %s", exc)
                self._grants = None  # try again next cycle
        if functions != self._functions:
            self._functions = functions
            load_functions = getattr(self._ops, "load_functions", None)
            if load_functions is not None:
                load_functions()
        return len(tables)

    def _partitions_changed(self, db: str, table: str, actions: PollActions) -> None:
        now = self._run(fp.partitions_of, db, table)
        before = self._parts.pop((db, table), None)
        if before is None:
            actions.reload(db, table)  # nothing to compare with: reload (only changes publish)
        else:
            self._kept -= len(before)
            changed = {n for n in before.keys() | now.keys() if before.get(n) != now.get(n)}
            if changed:
                actions.refresh_partitions(db, table, sorted(changed))
        self._parts[(db, table)] = now
        self._kept += len(now)
        while self._kept > self._max_kept and len(self._parts) > 1:
            _, dropped = self._parts.popitem(last=False)
            self._kept -= len(dropped)


def _keep_hashes(now: fp.Fingerprint, before: fp.Fingerprint | None) -> fp.Fingerprint:
    """``now`` (read without partition hashes) with the hashes last read, unchanged since."""
    return now if before is None else (*now[:-2], *before[-2:])


def _names_by_db(tables: dict[tuple[str, str], Any]) -> dict[str, set[str]]:
    result: dict[str, set[str]] = {}
    for db, table in tables:
        result.setdefault(db, set()).add(table)
    return result
