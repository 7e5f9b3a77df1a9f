"""Loading metadata from a metastore source into catalog objects.

A :class:`MetastoreSource` is the seam between catalogd and wherever metadata
lives: :class:`ThriftSource` (a real HMS over Thrift),
:class:`~catalogd.metastore.sql.SqlSource` (the HMS backing database, read
directly) and :class:`InMemorySource` (tests and benchmarks that must not be
limited by HMS speed) implement it. The protocol covers everything catalogd asks a metastore:
databases, tables and partitions; notification events (the change detector);
roles, memberships and grants (:mod:`catalogd.metastore.grants`); and closing.
The loader turns what a source returns into catalog objects with
:mod:`catalogd.metastore.convert`; it never talks to sockets itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import idl
from catalogd.metastore import column_stats, convert
from catalogd.metastore.client import MetastoreClient
from subscriber.protocol.errors import NotFoundError

hms = idl.hive_metastore


class MetastoreSource(Protocol):
    """What catalogd needs from a metastore. Names are returned as stored."""

    address: str

    def database_names(self) -> list[str]: ...

    def get_database(self, name: str) -> Any: ...

    def table_names(self, db: str) -> list[str]: ...

    def get_tables(self, db: str, names: Sequence[str]) -> list[Any]:
        """The ``Table`` of each existing name; missing ones are left out."""
        ...

    def partitions(self, db: str, table: str, names: Sequence[str] | None = None) -> Iterator[Any]:
        """The ``Partition`` objects of a table (only ``names`` when given)."""
        ...

    def partition_names(self, db: str, table: str) -> list[str]:
        """The HMS partition names (``k=v/k2=v2``) of a table."""
        ...

    def table_column_statistics(self, db: str, table: str, columns: Sequence[str]) -> list[Any]:
        """HMS's table-level ``ColumnStatisticsObj`` s for ``columns`` (those it has)."""
        ...

    def all_functions(self) -> list[Any]:
        """Every HMS ``Function`` of every database (as ``get_all_functions`` returns them)."""
        ...

    def current_notification_id(self) -> int:
        """The id of the newest notification event (0 when the metastore logs none)."""
        ...

    def next_notifications(self, last_event: int, max_events: int) -> list[Any]:
        """Up to ``max_events`` ``NotificationEvent`` s with ids above ``last_event``."""
        ...

    def get_role_names(self) -> list[str]: ...

    def get_principals_in_role(self, role: str) -> list[Any]:
        """The ``RolePrincipalGrant`` s of every member of ``role``."""
        ...

    def list_privileges(self, principal_name: str, principal_type: int) -> list[Any]:
        """The ``HiveObjectPrivilege`` s of one principal (``PrincipalType``), on anything."""
        ...

    def grants_on(self, hive_object: Any) -> list[Any]:
        """The ``HiveObjectPrivilege`` s of every principal on one ``HiveObjectRef``."""
        ...

    def close(self) -> None:
        """Release what the source holds (a connection); it is not used afterwards."""
        ...


class ThriftSource:
    """A :class:`MetastoreSource` over a real Hive Metastore's Thrift API.

    Tables are fetched in bulk (``get_table_objects_by_name``) and partitions in
    batches of ``partition_batch`` by name. Not thread-safe (one connection).
    """

    def __init__(self, client: MetastoreClient, *, partition_batch: int = 500) -> None:
        self.client = client
        self.address = client.uri
        self.partition_batch = partition_batch

    def database_names(self) -> list[str]:
        return self.client.get_all_databases()

    def get_database(self, name: str) -> Any:
        return self.client.get_database(name)

    def table_names(self, db: str) -> list[str]:
        self.client.get_database(db)  # NotFoundError for an unknown database
        return self.client.get_all_tables(db)

    def get_tables(self, db: str, names: Sequence[str]) -> list[Any]:
        return self.client.get_table_objects_by_name(db, names)

    def partition_names(self, db: str, table: str) -> list[str]:
        return self.client.get_partition_names(db, table)

    def all_functions(self) -> list[Any]:
        return self.client.get_all_functions()

    def partitions(self, db: str, table: str, names: Sequence[str] | None = None) -> Iterator[Any]:
        if names is None:
            names = self.client.get_partition_names(db, table)
        for start in range(0, len(names), self.partition_batch):
            batch = names[start : start + self.partition_batch]
            yield from self.client.get_partitions_by_names(db, table, batch)

    def table_column_statistics(self, db: str, table: str, columns: Sequence[str]) -> list[Any]:
        request = hms.TableStatsRequest(dbName=db, tblName=table, colNames=list(columns))
        result = self.client.call(
            "get_table_statistics_req", request, idempotent=True, what=f"table {db}.{table}"
        )
        return list(result.tableStats or [])

    def current_notification_id(self) -> int:
        return self.client.get_current_notification_event_id()

    def next_notifications(self, last_event: int, max_events: int) -> list[Any]:
        return self.client.get_next_notification(last_event, max_events)

    def get_role_names(self) -> list[str]:
        return self.client.get_role_names()

    def get_principals_in_role(self, role: str) -> list[Any]:
        return self.client.get_principals_in_role(role)

    def list_privileges(self, principal_name: str, principal_type: int) -> list[Any]:
        return self.client.list_privileges(principal_name, principal_type)

    def grants_on(self, hive_object: Any) -> list[Any]:
        # No principal (None, None): HMS answers for everyone holding a grant on it.
        return list(self.client.call("list_privileges", None, None, hive_object, idempotent=True))

    def close(self) -> None:
        self.client.close()


@dataclass
class InMemorySource:
    """A :class:`MetastoreSource` over HMS structs held in memory.

    It logs no notification events (so change detection polls it) and holds no
    roles or grants.
    """

    databases: dict[str, Any] = field(default_factory=dict)
    tables: dict[tuple[str, str], Any] = field(default_factory=dict)
    table_partitions: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    column_statistics: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    functions: list[Any] = field(default_factory=list)
    address: str = "memory://"

    def all_functions(self) -> list[Any]:
        return list(self.functions)

    def database_names(self) -> list[str]:
        return list(self.databases)

    def get_database(self, name: str) -> Any:
        try:
            return self.databases[name.lower()]
        except KeyError:
            raise NotFoundError(f"database {name.lower()} not found") from None

    def table_names(self, db: str) -> list[str]:
        self.get_database(db)
        return [t for (d, t) in self.tables if d == db.lower()]

    def get_tables(self, db: str, names: Sequence[str]) -> list[Any]:
        found = (self.tables.get((db.lower(), n.lower())) for n in names)
        return [t for t in found if t is not None]

    def partition_names(self, db: str, table: str) -> list[str]:
        return list(self.table_partitions.get((db.lower(), table.lower()), {}))

    def partitions(self, db: str, table: str, names: Sequence[str] | None = None) -> Iterator[Any]:
        parts = self.table_partitions.get((db.lower(), table.lower()), {})
        if names is None:
            yield from parts.values()
        else:
            yield from (parts[n] for n in names if n in parts)

    def table_column_statistics(self, db: str, table: str, columns: Sequence[str]) -> list[Any]:
        wanted = {c.lower() for c in columns}
        objs = self.column_statistics.get((db.lower(), table.lower()), [])
        return [o for o in objs if o.colName.lower() in wanted]

    def current_notification_id(self) -> int:
        return 0

    def next_notifications(self, last_event: int, max_events: int) -> list[Any]:
        return []

    def get_role_names(self) -> list[str]:
        return []

    def get_principals_in_role(self, role: str) -> list[Any]:
        return []

    def list_privileges(self, principal_name: str, principal_type: int) -> list[Any]:
        return []

    def grants_on(self, hive_object: Any) -> list[Any]:
        return []

    def close(self) -> None:
        pass


@dataclass
class LoadStats:
    databases: int = 0
    tables: int = 0
    views: int = 0
    partitions: int = 0
    seconds: float = 0.0

    def add(self, other: LoadStats) -> None:
        self.databases += other.databases
        self.tables += other.tables
        self.views += other.views
        self.partitions += other.partitions


def load_table_objects(source: MetastoreSource, table: Any) -> tuple[dict[str, Any], LoadStats]:
    """Every catalog object of one HMS ``Table`` (header and partitions)."""
    stats = LoadStats()
    if convert.is_view(table):
        stats.views = 1
        parts: Iterable[Any] = ()
    else:
        stats.tables = 1
        parts = source.partitions(table.dbName, table.tableName) if table.partitionKeys else ()
    objects = convert.table_objects(table, parts, column_stats_of(source, table))
    stats.partitions = len(objects) - 1
    return objects, stats


def column_stats_of(source: MetastoreSource, table: Any) -> dict[str, Any]:
    """``TColumnStats`` by column of one table, from HMS and Spark's parameters.

    HMS is asked only when the table's ``COLUMN_STATS_ACCURATE`` names column
    stats (HMS sets it whenever they are written), so tables without any cost
    no extra call.
    """
    columns = list(getattr(table.sd, "cols", None) or [])
    if not columns or convert.is_view(table):
        return {}
    objs: list[Any] = []
    if column_stats.has_hms_column_stats(table.parameters):
        objs = source.table_column_statistics(
            table.dbName, table.tableName, [c.name for c in columns]
        )
    # Partition columns: HMS keeps no statistics for them, Spark's ANALYZE does.
    keys = list(table.partitionKeys or [])
    return column_stats.column_stats(columns + keys, table.parameters, objs)


def hms_table(source: MetastoreSource, db: str, name: str) -> Any:
    """The HMS ``Table`` of one table or view.

    Raises:
        NotFoundError: the database or table does not exist.
    """
    tables = source.get_tables(db, [name])
    if not tables:
        raise NotFoundError(f"table {db.lower()}.{name.lower()} not found in {source.address}")
    return tables[0]


def load_table(source: MetastoreSource, db: str, name: str) -> tuple[dict[str, Any], LoadStats]:
    """Load one table or view now.

    Raises:
        NotFoundError: the database or table does not exist.
    """
    return load_table_objects(source, hms_table(source, db, name))


def load_database(
    source: MetastoreSource, db: str, *, table_batch: int = 100
) -> tuple[dict[str, Any], LoadStats]:
    """The database object and every table in it, fully loaded."""
    stats = LoadStats(databases=1)
    objects = convert.database_objects(source.get_database(db))
    names = source.table_names(db)
    for start in range(0, len(names), table_batch):
        for table in source.get_tables(db, names[start : start + table_batch]):
            try:
                table_objs, table_stats = load_table_objects(source, table)
            except NotFoundError:
                continue  # dropped while we were loading
            objects.update(table_objs)
            stats.add(table_stats)
    return objects, stats


def load_catalog(
    source: MetastoreSource,
    *,
    table_batch: int = 100,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[dict[str, Any], LoadStats]:
    """Load every database, table, view and partition of ``source``.

    Returns the catalog objects by key and what was loaded. A database or table
    dropped while loading is skipped, not an error.
    """
    started = clock()
    objects: dict[str, Any] = {}
    stats = LoadStats()
    for db in source.database_names():
        try:
            db_objects, db_stats = load_database(source, db, table_batch=table_batch)
        except NotFoundError:
            continue  # dropped while we were loading
        objects.update(db_objects)
        stats.add(db_stats)
    stats.seconds = clock() - started
    return objects, stats
