"""Change detection by SQL fingerprints of the HMS backing database (``--hms-db``).

:class:`SqlPoller` stands in for :class:`~catalogd.freshness.polling.Poller`
when catalogd reads the metastore database directly. Every cycle first reads the
database server's write position
(:func:`~catalogd.sources.sql.fingerprints.change_marker`: PostgreSQL WAL,
InnoDB redo log); when it has not moved for two cycles nothing was written and
the cycle ends there, one query. Otherwise it reads a fixed handful of
aggregate queries (:mod:`catalogd.sources.sql.fingerprints`: a row per
database, per table, and per thousand partition ids, whatever the number of
partitions) and compares them with the previous cycle's:

* a database added, dropped or altered (``ALTER DATABASE``: owner, location,
  properties), or tables added or dropped in it -> ``relist(db)``;
* a table whose own row, storage descriptor, parameters or SerDe properties
  changed -> ``reload(db, table)``;
* a table whose partitions were added or dropped (count, id sum, newest create
  time) -> one query for its partition names, ``refresh_partitions`` of those
  added or gone;
* a bucket of partition parameters, storage descriptors or SerDe parameters
  that changed (statistics from ``ANALYZE ... PARTITION``, a new location) -> one
  query for the partitions in it, ``refresh_partitions`` of them (at most
  ``BUCKET`` per bucket; the catalog publishes only objects whose bytes
  changed), or ``reload`` of a table with more than ``RELOAD_ABOVE`` of them;
* roles, memberships or grants -> reload privileges; functions -> reload them.

So an idle 1M-partition metastore costs under a millisecond per cycle, and a
write costs one pass (2.6 s of database time at 1M partitions on this 2-core
machine under load, ``bench/sql_load_bench.py``) plus the refresh of at most a
thousand partitions per changed bucket. Writes to other databases of the same
server open the gate too.

It starts from a :meth:`SqlPoller.baseline` taken *before* the initial load,
so a change committed during the load is seen by the first cycle. When HMS
writes ``NOTIFICATION_LOG``, the detector follows those events instead (the
SQL source reads them); grants are then still covered by the privileges
interval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from catalogd.freshness.polling import PollActions
from catalogd.sources.sql import fingerprints as fp
from catalogd.writes.operations import Operations
from subscriber.protocol.errors import CatalogError, MetastoreUnavailableError

log = logging.getLogger(__name__)

# A table with more changed partitions than this is reloaded (in the load workers)
# rather than refreshed partition by partition (in the detector's thread).
RELOAD_ABOVE = 10_000


class SqlPoller:
    """One SQL fingerprint cycle at a time; see the module doc.

    Args:
        ops: the catalog; ``ops.source()`` must be a
            :class:`~catalogd.sources.sql.SqlSource`.

    Not thread-safe: the detector thread runs it (``baseline`` may run before).
    """

    def __init__(self, ops: Operations) -> None:
        self._ops = ops
        self._call: Callable[..., Any] = lambda fn, *args: fn(*args)
        self._actions: PollActions | None = None
        self._dbs: dict[str, fp.Fingerprint] | None = None
        self._tables: dict[tuple[str, str], fp.Fingerprint] = {}
        self._buckets: dict[fp.Bucket, fp.Fingerprint] = {}
        self._grants: fp.Fingerprint | None = None
        self._functions: fp.Fingerprint | None = None
        self.queries = 0  # SQL round trips so far (tests and benchmarks read it)
        self.skipped = 0  # cycles that found nothing written (one query each; ditto)
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
        self._buckets = self._run(fp.partition_buckets)
        self._tables = self._run(fp.tables)
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
        dbs = self._run(fp.databases)
        buckets = self._run(fp.partition_buckets)
        tables = self._run(fp.tables)
        grants = self._run(fp.grants)
        functions = self._run(fp.functions)
        changed_buckets = sorted(
            b
            for b in buckets.keys() | self._buckets.keys()
            if buckets.get(b) != self._buckets.get(b)
        )
        in_buckets = self._run(fp.partitions_in, changed_buckets) if changed_buckets else []
        reloads: list[tuple[str, str]] = []
        changed: dict[tuple[str, str], set[str]] = {}
        for key, now in sorted(tables.items()):
            before = self._tables.get(key)
            if before is None or before == now or not self._ops.is_loaded(*key):
                continue  # new (relist loads it), unchanged, or a placeholder
            if before[:-1] != now[:-1]:
                reloads.append(key)
            else:  # partitions added or dropped: which, by name
                ours = self._ops.table_state(key[0], [key[1]]).get(key[1])
                if ours is not None:
                    changed[key] = self._run(fp.partition_names, *key) ^ ours[1]
        # Everything read: from here on nothing raises, so the new fingerprints stand.
        for db, table, name in in_buckets:
            changed.setdefault((db, table), set()).add(name)
        self._marks = (self._marks[1], marker)
        listed = set(self._dbs) | set(dbs)
        relisted = {db for db in listed if self._dbs.get(db) != dbs.get(db)}
        names_before = _names_by_db(self._tables)
        names_now = _names_by_db(tables)
        relisted |= {db for db in listed if names_before.get(db) != names_now.get(db)}
        self._dbs, self._tables, self._buckets = dbs, tables, buckets
        for db in sorted(relisted):
            actions.relist(db.lower())
        for key in reloads:
            actions.reload(*key)
        for key, names in sorted(changed.items()):
            if key in reloads or key not in tables or not self._ops.is_loaded(*key):
                continue
            if len(names) > RELOAD_ABOVE:
                actions.reload(*key)
            elif names:
                actions.refresh_partitions(key[0], key[1], sorted(names))
        if grants != self._grants:
            self._grants = grants
            try:
                self._ops.load_privileges()
            except CatalogError as exc:
                log.warning("reloading privileges after a grant change failed: %s", exc)
                self._grants = None  # try again next cycle
        if functions != self._functions:
            self._functions = functions
            self._ops.load_functions()
        return len(tables)


def _names_by_db(tables: dict[tuple[str, str], Any]) -> dict[str, set[str]]:
    result: dict[str, set[str]] = {}
    for db, table in tables:
        result.setdefault(db, set()).add(table)
    return result
