"""Objects a write touched, until the cache shows the write (pure: time is passed in).

Read-your-writes without holding the writer's answer. When a write through the
endpoint succeeds in HMS, its answer goes back at once; catalogd is asked to reload
every object it touched (:mod:`subscriber.metastore.writes`), each reload with a
*ticket*, and the object becomes *pending* here. catalogd answers each reload with
the catalog version whose state shows it (:meth:`Pending.loaded`): a reload that
started after the write, so it read HMS after the write. A read the cache would
answer (:func:`read_of` says which objects it can show) is forwarded to HMS while
any object it can show is pending. So the writer (and every other client of this
endpoint) never reads a state older than the write from the cache.

Invariants (:class:`Pending`):

* An object stops being pending when catalogd has answered its newest ticket with
  version ``v`` and the view being served is at ``v`` or later (catalogd's
  versions never go back), or when ``bound_s`` has passed since it was last marked
  (then it is served from the cache again and reported once by
  :meth:`Pending.take_expired`). A ticket answered with no version (the reload
  failed, or no answer can come) leaves it pending until the bound.
* Marking an object again gives it the newer ticket and restarts its bound: an
  answer to an older ticket (a reload that may have read HMS before the newer
  write) clears nothing.
* At most ``limit`` objects are held. A write that would hold more is not recorded
  object by object: every read is pending until ``bound_s`` after it (what was
  dropped cannot be watched), then reported once as
  :data:`~subscriber.metastore.writes.ALL_DATABASES`.
* What a read can show (:class:`Read`): a database-level object (``Target(db)``:
  the database, its table names, its functions) is shown by every read of that
  database and by reads naming no database; a table (``Target(db, t)``) by reads of
  ``db.t`` (the table, its partitions, its fields) and by the listings of ``db``.

Not thread-safe: :class:`~subscriber.metastore.readback.ReadBack` serialises calls
with one lock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from subscriber.metastore.writes import ALL_DATABASES, Target

__all__ = ["DATABASES", "EVERYTHING", "Pending", "Read", "read_of"]

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
PRIVILEGES = Read("", ())
"""A read of the principals and grants (database "", see ``writes.PRIVILEGES``)."""


@dataclass(slots=True)
class _Held:
    ticket: int
    since: float
    until: float
    shows_at: int | None = None  # the version that shows the ticket's reload, once answered


class Pending:
    """The pending objects of one endpoint. See the module docstring.

    Args:
        bound_s: how long an object stays pending at most (``write_wait_s``).
        limit: objects held at most (more: every read pending, see above).
    """

    def __init__(self, bound_s: float, limit: int = DEFAULT_LIMIT) -> None:
        self.bound_s = bound_s
        self.limit = limit
        self._held: dict[str, dict[str | None, _Held]] = {}  # db -> table (None: db) -> held
        self._tickets: dict[int, Target] = {}  # newest ticket of each held object
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

    def add(self, version: int, tickets: Mapping[Target, int], now: float) -> bool:
        """Mark each target of ``tickets`` (target -> the ticket of its reload) pending
        from ``now``. ``version``: the current view's (drops what has cleared or
        expired). Returns False when the objects did not fit (every read is pending now)."""
        if not tickets:
            return True
        self.prune(version, now)
        new = sum(1 for t in tickets if t.table not in self._held.get(t.db, {}))
        if self._count + new > self.limit:
            until = now + self.bound_s
            self._overflow_until = max(self._overflow_until or until, until)
            return False
        for target, ticket in tickets.items():
            tables = self._held.setdefault(target.db, {})
            held = tables.get(target.table)
            if held is None:
                self._count += 1
                tables[target.table] = _Held(ticket, now, now + self.bound_s)
            else:  # the newer write's reload decides; the older answer clears nothing
                self._tickets.pop(held.ticket, None)
                held.ticket, held.until, held.shows_at = ticket, now + self.bound_s, None
            self._tickets[ticket] = target
        return True

    def loaded(self, ticket: int, version: int | None) -> None:
        """catalogd answered the reload ``ticket``: ``version`` shows it (None: the
        reload failed or no answer can come; the object waits for its bound)."""
        target = self._tickets.pop(ticket, None)
        if target is None or version is None:
            return  # a superseded ticket, or an object already cleared or expired
        held = self._held.get(target.db, {}).get(target.table)
        if held is not None and held.ticket == ticket:
            held.shows_at = version

    def is_pending(self, version: int, read: Read, now: float) -> bool:
        """Whether ``read``, answered from a view at ``version``, could show a pending
        object (it must then be forwarded). Drops what has cleared or expired."""
        if self._overflow_until is not None:
            if now < self._overflow_until:
                return True
            self._overflow_until = None
            self._expired.append(ALL_DATABASES)
        if not self._count:
            return False
        return any(self._check(version, db, table, now) for db, table in self._candidates(read))

    def holds(self, version: int, target: Target, now: float) -> bool:
        """Whether ``target`` itself is pending (a reload of it is under way)."""
        return self._check(version, target.db, target.table, now)

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

    def _check(self, version: int, db: str, table: str | None, now: float) -> bool:
        """Whether ``db.table`` is still pending; drops it when not."""
        held = self._held.get(db, {}).get(table)
        if held is None:
            return False
        if held.shows_at is not None and version >= held.shows_at:
            self.cleared_seconds.append(now - held.since)
        elif now >= held.until:
            self._expired.append(Target(db, table))
        else:
            return True
        self._tickets.pop(held.ticket, None)
        tables = self._held[db]
        del tables[table]
        self._count -= 1
        if not tables:
            del self._held[db]
        return False

    def prune(self, version: int, now: float) -> None:
        """Drop what has cleared (for a view at ``version``) or expired by ``now``."""
        if self._overflow_until is not None and now >= self._overflow_until:
            self._overflow_until = None
            self._expired.append(ALL_DATABASES)
        for db, tables in list(self._held.items()):
            for table in list(tables):
                self._check(version, db, table, now)


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


def _values(args: Any) -> Read:
    req = args.request
    return EVERYTHING if req is None else _table(req.dbName, req.tblName)


def _req_partitions(req: Any) -> Read:
    return _table(req.dbName, req.tblName)


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
    "get_database_req": lambda a: _database(a.request.name if a.request else None),
    "get_all_tables": lambda a: _tables(a.db_name, None),
    "get_tables": lambda a: _tables(a.db_name, None),
    "get_table_names_by_filter": lambda a: _tables(a.dbname, None),
    "get_table": lambda a: _table(a.dbname, a.tbl_name),
    "get_table_objects_by_name": lambda a: _tables(a.dbname, a.tbl_names or []),
    "get_table_req": _req_table,
    "get_table_objects_by_name_req": _req_tables,
    "get_fields": _fields,
    "get_fields_with_environment_context": _fields,
    "get_schema": _fields,
    "get_schema_with_environment_context": _fields,
    "get_all_functions": lambda a: DATABASES,
    "list_privileges": lambda a: PRIVILEGES,
    "get_privilege_set": lambda a: PRIVILEGES,
    "get_functions": lambda a: _database(a.dbName),
    "get_function": lambda a: _database(a.dbName),
    "get_partition_values": _values,
    "fetch_partition_names_req": lambda a: _req_partitions(a.partitionReq),
    "get_partition_names_ps_req": lambda a: _req_partitions(a.req),
    "get_partitions_by_filter_req": lambda a: _req_partitions(a.req),
    "get_partitions_by_names_req": lambda a: _table(a.req.db_name, a.req.tbl_name),
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
            "get_partitions_pspec",
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
