"""Objects a write touched, until the cache shows the write (pure: time is passed in).

Read-your-writes without holding the writer's answer. When a write through the
endpoint succeeds in HMS, its answer goes back at once; every object it touched
(:mod:`subscriber.metastore.writes`) becomes *pending* here, with the cache's
:class:`Mark` of that object as it was before the write. A read the cache would
answer (:func:`read_of` says which objects it can show) is forwarded to HMS while
any object it can show is pending. So the writer (and every other client of this
endpoint) never reads a state older than the write from the cache.

Invariants (:class:`Pending`):

* An object stops being pending when its mark in the view being served differs
  from the recorded one (catalogd reloaded it: the cache changed), or when
  ``bound_s`` has passed since it was marked (then it is served from the cache
  again and reported once by :meth:`Pending.take_expired`).
* Marking an object again replaces its mark (the newer write's before-state) and
  restarts its bound.
* At most ``limit`` objects are held. A write that would hold more is not recorded
  object by object: every read is pending until ``bound_s`` after it (what was
  dropped cannot be watched, so nothing is served until it must have cleared or
  expired), then reported once as :data:`~subscriber.metastore.writes.ALL_DATABASES`.
* What a read can show (:class:`Read`): a database-level object (``Target(db)``:
  the database, its table names, its functions) is shown by every read of that
  database and by reads naming no database; a table (``Target(db, t)``) by reads of
  ``db.t`` (the table, its partitions, its fields) and by the listings of ``db``.

Not thread-safe: the endpoint serialises calls with one lock. A :class:`Mark`
holds the objects it identifies (so their ids cannot be reused while recorded).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from subscriber.cache import CacheView
from subscriber.metastore.writes import ALL_DATABASES, Target
from subscriber.protocol.keys import database_key, table_key

__all__ = ["DATABASES", "EVERYTHING", "Mark", "Pending", "Read", "mark", "read_of"]

DEFAULT_LIMIT = 1024
"""Objects held before every read becomes pending (:class:`Pending`)."""


@dataclass(frozen=True, slots=True)
class Read:
    """What a cached read can show.

    Attributes:
        db: the database (lower case); None: every database.
        tables: the tables of ``db`` it shows (lower case); None: every table
            (a listing); ``()``: none, only the database-level objects.
    """

    db: str | None
    tables: tuple[str, ...] | None = ()


EVERYTHING = Read(None, None)
"""A read that may show anything (a method :func:`read_of` does not know)."""
DATABASES = Read(None, ())
"""A read of every database's database-level objects (databases, all functions)."""


@dataclass(frozen=True, slots=True, eq=False)
class Mark:
    """The cached state of one object: its entry's version and the structure that
    changes with it (a database's key set, a table's partition set), compared by
    identity. Holding the structure keeps its identity from being reused."""

    version: int | None
    shape: object

    def same(self, other: Mark) -> bool:
        return self.version == other.version and self.shape is other.shape


def mark(view: CacheView, target: Target) -> Mark:
    """The :class:`Mark` of ``target`` in ``view``."""
    if target.table is None:
        entry = view.get(database_key(target.db))
        return Mark(entry.version if entry else None, view.by_database.get(target.db))
    entry = view.get(table_key(target.db, target.table)) or view.get(
        table_key(target.db, target.table, view=True)
    )
    shape = view.partitions.get(f"{target.db}.{target.table}")
    return Mark(entry.version if entry else None, shape)


@dataclass(slots=True)
class _Held:
    mark: Mark
    since: float
    until: float


class Pending:
    """The pending objects of one endpoint. See the module docstring.

    Args:
        bound_s: how long an object stays pending at most (``write_wait_s``).
        limit: objects held at most (more: every read pending, see above).
        marker: view, target -> :class:`Mark` (tests may pass their own).
    """

    def __init__(
        self,
        bound_s: float,
        limit: int = DEFAULT_LIMIT,
        marker: Callable[[CacheView, Target], Mark] = mark,
    ) -> None:
        self.bound_s = bound_s
        self.limit = limit
        self._mark = marker
        self._held: dict[str, dict[str | None, _Held]] = {}  # db -> table (None: db) -> held
        self._count = 0
        self._overflow_until: float | None = None
        self._expired: list[Target] = []
        self.cleared_seconds: list[float] = []
        """How long each object stayed pending until seen cleared (drained by
        :meth:`take_cleared`)."""

    def __len__(self) -> int:
        """Objects held (an overflow counts as one more)."""
        return self._count + (self._overflow_until is not None)

    @property
    def overflowed(self) -> bool:
        """Every read is pending (more than ``limit`` objects were marked)."""
        return self._overflow_until is not None

    def add(self, view: CacheView, marks: Mapping[Target, Mark], now: float) -> bool:
        """Mark each target of ``marks`` (target -> its mark before the write) pending
        from ``now``. ``view``: the current view (drops what has cleared or expired).
        Returns False when the objects did not fit (every read is pending now)."""
        if not marks:
            return True
        self._prune(view, now)
        new = sum(1 for t in marks if t.table not in self._held.get(t.db, {}))
        if self._count + new > self.limit:
            until = now + self.bound_s
            self._overflow_until = max(self._overflow_until or until, until)
            return False
        for target, before in marks.items():
            tables = self._held.setdefault(target.db, {})
            if target.table not in tables:
                self._count += 1
            tables[target.table] = _Held(before, now, now + self.bound_s)
        return True

    def is_pending(self, view: CacheView, read: Read, now: float) -> bool:
        """Whether ``read``, answered from ``view``, could show a pending object
        (it must then be forwarded). Drops what has cleared or expired on the way."""
        if self._overflow_until is not None:
            if now < self._overflow_until:
                return True
            self._overflow_until = None
            self._expired.append(ALL_DATABASES)
        if not self._count:
            return False
        return any(self._check(view, db, table, now) for db, table in self._candidates(read))

    def holds(self, view: CacheView, target: Target, now: float) -> bool:
        """Whether ``target`` itself is pending (a reload of it is under way)."""
        return self._check(view, target.db, target.table, now)

    def take_expired(self) -> list[Target]:
        """The objects whose bound passed before the cache showed them, since the
        last call (each reported once)."""
        expired, self._expired = self._expired, []
        return expired

    def take_cleared(self) -> list[float]:
        """Seconds each object stayed pending, for those seen cleared since the last call."""
        cleared, self.cleared_seconds = self.cleared_seconds, []
        return cleared

    # -- internals ----------------------------------------------------------------------

    def _candidates(self, read: Read) -> list[tuple[str, str | None]]:
        if read.db is None:
            dbs = list(self._held)
        elif read.db in self._held:
            dbs = [read.db]
        else:
            return []
        out: list[tuple[str, str | None]] = []
        for db in dbs:
            tables = self._held[db]
            if read.tables is None:
                out += [(db, table) for table in tables]
                continue
            if None in tables:
                out.append((db, None))
            if read.db is not None:
                out += [(db, t) for t in read.tables if t in tables]
        return out

    def _check(self, view: CacheView, db: str, table: str | None, now: float) -> bool:
        """Whether ``db.table`` is still pending; drops it when not."""
        held = self._held.get(db, {}).get(table)
        if held is None:
            return False
        if not self._mark(view, Target(db, table)).same(held.mark):
            self.cleared_seconds.append(now - held.since)
        elif now >= held.until:
            self._expired.append(Target(db, table))
        else:
            return True
        self._drop(db, table)
        return False

    def _drop(self, db: str, table: str | None) -> None:
        tables = self._held[db]
        del tables[table]
        self._count -= 1
        if not tables:
            del self._held[db]

    def _prune(self, view: CacheView, now: float) -> None:
        for db, tables in list(self._held.items()):
            for table in list(tables):
                self._check(view, db, table, now)


def _db(value: Any) -> str | None:
    """A database name as clients send it (``@catalog#db`` is ``db``), lower case."""
    if not isinstance(value, str):
        return None
    if value.startswith("@"):
        value = value.partition("#")[2]
    return value.lower()


def _table(db: Any, table: Any) -> Read:
    name = _db(db)
    if name is None:
        return EVERYTHING
    return Read(name, (table.lower(),) if isinstance(table, str) else None)


def _tables(db: Any, names: Any) -> Read:
    name = _db(db)
    if name is None:
        return EVERYTHING
    if names is None:
        return Read(name, None)
    return Read(name, tuple(n.lower() for n in names if isinstance(n, str)))


def _req_table(args: Any) -> Read:
    req = args.req
    return EVERYTHING if req is None else _table(req.dbName, req.tblName)


def _req_tables(args: Any) -> Read:
    req = args.req
    return EVERYTHING if req is None else _tables(req.dbName, req.tblNames)


def _partitions(args: Any) -> Read:
    return _table(args.db_name, args.tbl_name)


def _fields(args: Any) -> Read:
    return _table(args.db_name, args.table_name)


def _database(db: Any) -> Read:
    name = _db(db)
    return EVERYTHING if name is None else Read(name, ())


_READS: dict[str, Callable[[Any], Read]] = {
    "get_all_databases": lambda a: DATABASES,
    "get_databases": lambda a: DATABASES,
    "get_database": lambda a: _database(a.name),
    "get_all_tables": lambda a: _tables(a.db_name, None),
    "get_tables": lambda a: _tables(a.db_name, None),
    "get_table": lambda a: _table(a.dbname, a.tbl_name),
    "get_table_objects_by_name": lambda a: _tables(a.dbname, a.tbl_names or []),
    "get_table_req": _req_table,
    "get_table_objects_by_name_req": _req_tables,
    "get_fields": _fields,
    "get_fields_with_environment_context": _fields,
    "get_schema": _fields,
    "get_schema_with_environment_context": _fields,
    "get_all_functions": lambda a: DATABASES,
    "get_functions": lambda a: _database(a.dbName),
    "get_function": lambda a: _database(a.dbName),
    **dict.fromkeys(
        (
            "get_partitions_with_auth",
            "get_num_partitions_by_filter",
            "get_partition_names",
            "get_partitions",
            "get_partitions_ps",
            "get_partitions_ps_with_auth",
            "get_partition_names_ps",
            "get_partitions_by_names",
            "get_partitions_by_filter",
            "get_partition",
            "get_partition_with_auth",
            "get_partition_by_name",
        ),
        _partitions,
    ),
}


def read_of(name: str, args: Any) -> Read:
    """What the cached read ``name`` with decoded ``args`` can show (:data:`EVERYTHING`
    for a method not listed here, or arguments it cannot read)."""
    reader = _READS.get(name)
    if reader is None:
        return EVERYTHING
    try:
        return reader(args)
    except AttributeError:
        return EVERYTHING


READ_METHODS = frozenset(_READS)
"""The reads :func:`read_of` knows (a test checks it covers every cached read)."""
