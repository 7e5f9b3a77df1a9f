"""Reading a metastore source into catalog objects: one table, one database, everything.

What a :class:`~catalogd.sources.protocol.MetastoreSource` returns becomes catalog
objects through :mod:`catalogd.conversion.objects`; nothing here talks to
sockets itself.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from catalogd.conversion import column_stats
from catalogd.conversion import objects as convert
from catalogd.sources.protocol import MetastoreSource
from subscriber.protocol.errors import NotFoundError


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
    source: MetastoreSource,
    db: str,
    *,
    table_batch: int = 100,
    names: list[str] | None = None,
    on_table: Callable[[LoadStats], None] | None = None,
) -> tuple[dict[str, Any], LoadStats]:
    """The database object and every table in it (``names``: listed already), fully
    loaded; ``on_table`` is called with each table's stats as it is loaded."""
    stats = LoadStats(databases=1)
    objects = convert.database_objects(source.get_database(db))
    names = source.table_names(db) if names is None else names
    for start in range(0, len(names), table_batch):
        for table in source.get_tables(db, names[start : start + table_batch]):
            try:
                table_objs, table_stats = load_table_objects(source, table)
            except NotFoundError:
                continue  # dropped while we were loading
            objects.update(table_objs)
            stats.add(table_stats)
            if on_table is not None:
                on_table(table_stats)
    return objects, stats


def load_catalog(
    source: MetastoreSource,
    *,
    table_batch: int = 100,
    clock: Callable[[], float] = time.monotonic,
    progress: Callable[[int, int, LoadStats], None] | None = None,
) -> tuple[dict[str, Any], LoadStats]:
    """Load every database, table, view and partition of ``source``.

    Returns the catalog objects by key and what was loaded. A database or table
    dropped while loading is skipped, not an error. ``progress`` (when given; the
    table names are then listed first) is called after each table with the tables
    done, the tables known and the running totals.
    """
    started = clock()
    objects: dict[str, Any] = {}
    stats = LoadStats()
    names: dict[str, list[str] | None] = {db: None for db in source.database_names()}
    running = LoadStats()
    done = [0]
    if progress is not None:
        for db in names:
            with contextlib.suppress(NotFoundError):
                names[db] = source.table_names(db)
    total = sum(len(n or ()) for n in names.values())

    def on_table(table_stats: LoadStats) -> None:
        running.add(table_stats)
        done[0] += 1
        if progress is not None:
            progress(done[0], max(total, done[0]), running)

    for db, listed in names.items():
        try:
            db_objects, db_stats = load_database(
                source, db, table_batch=table_batch, names=listed, on_table=on_table
            )
        except NotFoundError:
            continue  # dropped while we were loading
        objects.update(db_objects)
        stats.add(db_stats)
    stats.seconds = clock() - started
    return objects, stats
