"""A :class:`~catalogd.sources.MetastoreSource` reading the HMS backing database.

:class:`SqlSource` answers every question catalogd asks a metastore with a few
set-based SQL queries on the HMS schema tables (PostgreSQL or MySQL/MariaDB),
returning the same HMS Thrift structs :class:`~catalogd.sources.ThriftSource`
gets from HMS, so the catalog objects made from them are identical.

* **Read-only.** It never writes: every session is set read-only where the
  database supports it (a read-only database user is all it needs). Writes go
  through HMS Thrift, which runs HMS's listeners.
* **Schema version.** HMS 2.3, 3.1 and 4.0 schemas; each database connection reads
  ``VERSION`` once (:func:`~catalogd.sources.sql.schema.layout_of`), and the queries
  follow that version's layout (3.1 and 4.0: the default catalog's databases).
* **Streaming.** :meth:`SqlSource.partitions` reads ``batch`` partitions at a
  time by ``PART_ID`` ranges (keyset paging, ~11 queries per batch whatever its
  size), so memory is bounded by the batch, not the table.
* **Errors**, mapped here: the database cannot be reached, refuses the login
  or drops the connection -> :class:`MetastoreUnavailableError` (callers keep
  serving and retry; the pool re-checks connections, so a database that comes
  back is used again); the tables are missing (not a metastore) or the schema
  version is unknown -> :class:`MetastoreError`; an unknown database or table
  -> :class:`NotFoundError`.

Thread-safety: one source per thread (the engine's pool is per source).

This module is the facade: the engine, read-only sessions, connections and error
mapping. The queries are functions over a connection in the modules named at each
group of methods (:mod:`.tables`, :mod:`.partitions`, :mod:`.notifications`,
:mod:`.grants`, :mod:`.column_stats`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError

from catalogd.sources.sql import column_stats, notifications
from catalogd.sources.sql import grants as sql_grants
from catalogd.sources.sql import partitions as sql_partitions
from catalogd.sources.sql import schema as s
from catalogd.sources.sql import tables as sql_tables
from subscriber.protocol.errors import (
    InvalidRequestError,
    MetastoreError,
    MetastoreUnavailableError,
)

__all__ = ["SqlSource"]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

# Sessions are made read-only: a bug here can never write to the metastore.
_READ_ONLY = {
    "postgresql": "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
    "mysql": "SET SESSION TRANSACTION READ ONLY",
    "mariadb": "SET SESSION TRANSACTION READ ONLY",
}


def _mapped(method: F) -> F:
    """Map SQLAlchemy/DBAPI errors raised by ``method`` to our error tree."""

    @functools.wraps(method)
    def wrapper(self: SqlSource, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except SQLAlchemyError as exc:
            raise self._map_error(exc) from exc

    return wrapper  # type: ignore[return-value]


class SqlSource:
    """Reads HMS metadata straight from its backing database.

    Args:
        url: a SQLAlchemy URL (``postgresql+psycopg://reader@host/metastore``,
            ``mysql+pymysql://reader:pw@host/metastore``).
        partition_batch: partitions read per round of queries.
        connect_timeout_s: how long a connection attempt may take.

    Raises:
        InvalidRequestError: ``url`` is not a usable SQLAlchemy URL (or its
            driver is not installed). Nothing connects until the first call.
    """

    def __init__(
        self, url: str, *, partition_batch: int = 5000, connect_timeout_s: float = 10.0
    ) -> None:
        try:
            parsed = sa.make_url(url)
            connect_args: dict[str, Any] = {"connect_timeout": int(connect_timeout_s)}
            self._engine: Engine = sa.create_engine(
                parsed, pool_pre_ping=True, pool_size=2, connect_args=connect_args
            )
        except (ArgumentError, NoSuchModuleError, ImportError, ValueError) as exc:
            raise InvalidRequestError(
                f"--hms-db must be a SQLAlchemy URL such as "
                f"postgresql+psycopg://user@host/metastore ({exc})"
            ) from exc
        self.address = parsed.render_as_string(hide_password=True)
        self.partition_batch = partition_batch
        self._where = f"the metastore database {self.address}"
        statement = _READ_ONLY.get(self._engine.dialect.name)
        if statement is not None:

            def read_only(dbapi_conn: Any, _record: Any) -> None:
                cursor = dbapi_conn.cursor()
                cursor.execute(statement)
                cursor.close()
                if self._engine.dialect.name == "postgresql":
                    dbapi_conn.commit()

            event.listen(self._engine, "connect", read_only)

    # -- plumbing ------------------------------------------------------------------------

    def _conn(self) -> Connection:
        conn = self._engine.connect()
        try:
            s.layout_of(conn, self._where)  # the schema version, once per DBAPI connection
        except BaseException:
            conn.close()
            raise
        return conn

    def _map_error(self, exc: SQLAlchemyError) -> Exception:
        detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        first = detail[0] if detail else type(exc).__name__
        if isinstance(exc, sa.exc.ProgrammingError) or "doesn't exist" in first:
            return MetastoreError(
                f"{self.address} is not a Hive Metastore database (or the user may not read "
                f"its tables): {first}"
            )
        if isinstance(exc, DBAPIError | sa.exc.TimeoutError | sa.exc.DisconnectionError):
            return MetastoreUnavailableError(
                f"cannot read the metastore database {self.address}: {first}"
            )
        return MetastoreError(f"reading the metastore database {self.address} failed: {first}")

    # -- databases and tables (catalogd.sources.sql.tables) ----------------------------

    @_mapped
    def database_names(self) -> list[str]:
        with self._conn() as conn:
            return sql_tables.database_names(conn)

    @_mapped
    def get_database(self, name: str) -> Any:
        with self._conn() as conn:
            return sql_tables.get_database(conn, name, self.address)

    @_mapped
    def table_names(self, db: str) -> list[str]:
        with self._conn() as conn:
            return sql_tables.table_names(conn, db, self.address)

    @_mapped
    def get_tables(self, db: str, names: Sequence[str]) -> list[Any]:
        if not names:
            return []
        with self._conn() as conn:
            return sql_tables.get_tables(conn, db, names)

    @_mapped
    def table_column_statistics(self, db: str, table: str, columns: Sequence[str]) -> list[Any]:
        """HMS's table-level ``ColumnStatisticsObj`` s for ``columns`` (``TAB_COL_STATS``)."""
        with self._conn() as conn:
            tbl_id, _, _ = sql_tables.table_ref(conn, db, table, self.address)
            return column_stats.table_column_statistics(conn, tbl_id, columns)

    # -- partitions (catalogd.sources.sql.partitions) -----------------------------------

    @_mapped
    def partition_names(self, db: str, table: str) -> list[str]:
        with self._conn() as conn:
            tbl_id, _, _ = sql_tables.table_ref(conn, db, table, self.address)
            return sql_partitions.partition_names(conn, tbl_id)

    @_mapped
    def partition_ranges(self, db: str, table: str, size: int) -> list[tuple[int, int | None]]:
        """``PART_ID`` ranges ``[first, next first)`` (the last one open: None) that cover
        the table's partitions with at most ``size`` partitions each, for reading a
        large table in parallel (:meth:`partitions_in_range`); one query."""
        with self._conn() as conn:
            tbl_id, _, _ = sql_tables.table_ref(conn, db, table, self.address)
            return sql_partitions.partition_ranges(conn, tbl_id, size)

    def partitions(self, db: str, table: str, names: Sequence[str] | None = None) -> Iterator[Any]:
        """The ``Partition`` s of a table (only ``names`` when given), streamed in batches.

        Raises NotFoundError (unknown table) and the errors of the class doc,
        while iterating.
        """
        return self._partitions(db, table, names, None)

    def partitions_in_range(
        self, db: str, table: str, id_range: tuple[int, int | None]
    ) -> Iterator[Any]:
        """The ``Partition`` s of one of :meth:`partition_ranges`, streamed in batches.

        Raises NotFoundError (unknown table) and the errors of the class doc,
        while iterating.
        """
        return self._partitions(db, table, None, id_range)

    def _partitions(
        self,
        db: str,
        table: str,
        names: Sequence[str] | None,
        id_range: tuple[int, int | None] | None,
    ) -> Iterator[Any]:
        """:meth:`partitions` and :meth:`partitions_in_range`: one connection per batch."""
        with self._mapping(), self._conn() as conn:
            tbl_id, db_name, tbl_name = sql_tables.table_ref(conn, db, table, self.address)
        owner = {tbl_id: (db_name, tbl_name)}
        if names is not None:
            for start in range(0, len(names), 1000):
                where = sql_partitions.by_names(tbl_id, names[start : start + 1000])
                yield from self._partition_batch(where, owner)[0]
            return
        first, end = id_range or (None, None)
        while True:
            where = sql_partitions.in_range(tbl_id, first, end)
            batch, last = self._partition_batch(
                where, owner, limit=self.partition_batch, tbl_id=tbl_id
            )
            yield from batch
            if len(batch) < self.partition_batch:
                return
            first = last + 1

    @_mapped
    def partition_counts(self, db: str, tables: Sequence[str]) -> dict[str, int]:
        """``{table: number of partitions}`` for the named tables of ``db`` that exist
        (lower-case names; 0 for unpartitioned tables and views); one query."""
        if not tables:
            return {}
        with self._conn() as conn:
            return sql_partitions.partition_counts(conn, db, tables)

    @_mapped
    def tables_partitions(self, db: str, tables: Sequence[str]) -> dict[str, list[Any]]:
        """The ``Partition`` s of several tables of ``db`` read together, in one set of
        queries (as :meth:`partitions` reads one batch), by lower-case table name;
        tables that do not exist are left out. For small tables: nothing is streamed,
        so the caller bounds the total (:meth:`partition_counts`)."""
        if not tables:
            return {}
        with self._conn() as conn:
            owners = sql_partitions.table_owners(conn, db, tables)
        result: dict[str, list[Any]] = {tbl_name.lower(): [] for _, tbl_name in owners.values()}
        if owners:
            where = s.PARTITIONS.c.TBL_ID.in_(sorted(owners))
            for part in self._partition_batch(where, owners)[0]:
                result[part.tableName.lower()].append(part)
        return result

    def _partition_batch(
        self,
        where: Any,
        owners: dict[int, tuple[str, str]],
        *,
        limit: int | None = None,
        tbl_id: int | None = None,
    ) -> tuple[list[Any], int]:
        """:func:`~catalogd.sources.sql.partitions.read_batch` on a connection of its own."""
        with self._mapping(), self._conn() as conn:
            return sql_partitions.read_batch(conn, where, owners, limit=limit, tbl_id=tbl_id)

    @contextlib.contextmanager
    def _mapping(self) -> Iterator[None]:
        """Map SQLAlchemy errors raised inside (for generators, which ``_mapped`` cannot wrap)."""
        try:
            yield
        except SQLAlchemyError as exc:
            raise self._map_error(exc) from exc

    # -- notification events (catalogd.sources.sql.notifications) -----------------------

    @_mapped
    def current_notification_id(self) -> int:
        with self._conn() as conn:
            return notifications.current_notification_id(conn)

    @_mapped
    def next_notifications(self, last_event: int, max_events: int) -> list[Any]:
        with self._conn() as conn:
            return notifications.next_notifications(conn, last_event, max_events)

    # -- roles and grants (catalogd.sources.sql.grants) --------------------------------

    @_mapped
    def get_role_names(self) -> list[str]:
        with self._conn() as conn:
            return sql_grants.role_names(conn)

    @_mapped
    def get_principals_in_role(self, role: str) -> list[Any]:
        with self._conn() as conn:
            return sql_grants.principals_in_role(conn, role)

    @_mapped
    def list_privileges(self, principal_name: str, principal_type: int) -> list[Any]:
        with self._conn() as conn:
            return sql_grants.privileges_of(conn, principal_name, principal_type)

    @_mapped
    def grants_on(self, hive_object: Any) -> list[Any]:
        with self._conn() as conn:
            return sql_grants.grants_on(conn, hive_object)

    @_mapped
    def all_functions(self) -> list[Any]:
        """Every HMS ``Function`` (``FUNCS`` and ``FUNC_RU``), by database and name."""
        with self._conn() as conn:
            return sql_grants.functions(conn)

    @_mapped
    def run(self, query: Callable[[Connection], T]) -> T:
        """``query(connection)`` on a read-only connection, errors mapped as above
        (for :mod:`catalogd.sources.sql.fingerprints`)."""
        with self._conn() as conn:
            return query(conn)

    def close(self) -> None:
        self._engine.dispose()
