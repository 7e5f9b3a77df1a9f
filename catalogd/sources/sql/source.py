# ruff: noqa: SIM300  (UPPER_CASE schema columns look like constants to ruff: `col == value` is right)
"""A :class:`~catalogd.sources.MetastoreSource` reading the HMS backing database.

:class:`SqlSource` answers every question catalogd asks a metastore with a few
set-based SQL queries on the HMS schema tables (PostgreSQL or MySQL/MariaDB),
returning the same HMS Thrift structs :class:`~catalogd.sources.ThriftSource`
gets from HMS, so the catalog objects made from them are identical.

* **Read-only.** It never writes: every session is set read-only where the
  database supports it (a read-only database user is all it needs). Writes go
  through HMS Thrift, which runs HMS's listeners.
* **Schema version.** The first connection checks ``VERSION``
  (:func:`~catalogd.sources.sql.schema.check_version`).
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

Why one module of just over 400 lines: it implements the whole MetastoreSource protocol
over SQL; the schema, struct building, grants, statistics and fingerprints are separate
modules.
"""

from __future__ import annotations

import contextlib
import functools
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError

import idl
from catalogd.sources.sql import column_stats
from catalogd.sources.sql import grants as sql_grants
from catalogd.sources.sql import schema as s
from catalogd.sources.sql.structs import (
    as_bool,
    kept,
    member,
    params_of,
    principal_type,
    storage_descriptors,
)
from catalogd.sources.sql.structs import (
    bounds_of as _bounds,
)
from subscriber.protocol.errors import (
    InvalidRequestError,
    MetastoreError,
    MetastoreUnavailableError,
    NotFoundError,
)

__all__ = ["SqlSource"]

hms = idl.hive_metastore
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
        self._checked = False
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
        if not self._checked:
            try:
                s.check_version(conn, f"the metastore database {self.address}")
            except BaseException:
                conn.close()
                raise
            self._checked = True
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

    def _db_id(self, conn: Connection, name: str) -> int:
        db_id = conn.execute(select(s.DBS.c.DB_ID).where(s.DBS.c.NAME == name.lower())).scalar()
        if db_id is None:
            raise NotFoundError(f"database {name.lower()} not found in {self.address}")
        return int(db_id)

    # -- databases and tables ------------------------------------------------------------

    @_mapped
    def database_names(self) -> list[str]:
        with self._conn() as conn:
            return list(conn.execute(select(s.DBS.c.NAME).order_by(s.DBS.c.NAME)).scalars())

    @_mapped
    def get_database(self, name: str) -> Any:
        d = s.DBS.c
        with self._conn() as conn:
            row = conn.execute(select(s.DBS).where(d.NAME == name.lower())).first()
            if row is None:
                raise NotFoundError(f"database {name.lower()} not found in {self.address}")
            params = params_of(conn, s.DATABASE_PARAMS, select(sa.literal(row.DB_ID)))
        return hms.Database(
            name=row.NAME,
            description=row.DESC,
            locationUri=row.DB_LOCATION_URI,
            parameters=dict(params.get(row.DB_ID, {})),
            ownerName=row.OWNER_NAME,
            ownerType=principal_type(row.OWNER_TYPE),
        )

    @_mapped
    def table_names(self, db: str) -> list[str]:
        t = s.TBLS.c
        with self._conn() as conn:
            db_id = self._db_id(conn, db)
            rows = conn.execute(select(t.TBL_NAME).where(t.DB_ID == db_id).order_by(t.TBL_NAME))
            return list(rows.scalars())

    @_mapped
    def get_tables(self, db: str, names: Sequence[str]) -> list[Any]:
        if not names:
            return []
        t, d = s.TBLS.c, s.DBS.c
        wanted = sorted({n.lower() for n in names})
        with self._conn() as conn:
            db_row = conn.execute(select(d.DB_ID, d.NAME).where(d.NAME == db.lower())).first()
            if db_row is None:
                return []
            where = sa.and_(t.DB_ID == db_row.DB_ID, t.TBL_NAME.in_(wanted))
            rows = conn.execute(select(s.TBLS).where(where).order_by(t.TBL_NAME)).all()
            if not rows:
                return []
            ids = select(t.TBL_ID).where(where).scalar_subquery()
            params = params_of(conn, s.TABLE_PARAMS, ids)
            sds = storage_descriptors(conn, select(t.SD_ID).where(where).scalar_subquery())
            keys = _partition_keys(conn, ids)
        return [
            hms.Table(
                tableName=r.TBL_NAME,
                dbName=db_row.NAME,
                owner=r.OWNER,
                createTime=r.CREATE_TIME,
                lastAccessTime=r.LAST_ACCESS_TIME,
                retention=r.RETENTION,
                sd=sds.get(r.SD_ID),
                partitionKeys=keys.get(r.TBL_ID, []),
                parameters=dict(params.get(r.TBL_ID, {})),
                viewOriginalText=r.VIEW_ORIGINAL_TEXT,
                viewExpandedText=r.VIEW_EXPANDED_TEXT,
                tableType=r.TBL_TYPE,
                rewriteEnabled=as_bool(r.IS_REWRITE_ENABLED),
            )
            for r in rows
        ]

    # -- partitions ---------------------------------------------------------------------

    def _table_ref(self, conn: Connection, db: str, table: str) -> tuple[int, str, str]:
        t, d = s.TBLS.c, s.DBS.c
        row = conn.execute(
            select(t.TBL_ID, d.NAME, t.TBL_NAME)
            .select_from(s.TBLS.join(s.DBS, t.DB_ID == d.DB_ID))
            .where(d.NAME == db.lower(), t.TBL_NAME == table.lower())
        ).first()
        if row is None:
            raise NotFoundError(f"table {db.lower()}.{table.lower()} not found in {self.address}")
        return int(row[0]), row[1], row[2]

    @_mapped
    def partition_names(self, db: str, table: str) -> list[str]:
        p = s.PARTITIONS.c
        with self._conn() as conn:
            tbl_id, _, _ = self._table_ref(conn, db, table)
            rows = conn.execute(select(p.PART_NAME).where(p.TBL_ID == tbl_id).order_by(p.PART_NAME))
            return list(rows.scalars())

    @_mapped
    def partition_ranges(self, db: str, table: str, size: int) -> list[tuple[int, int | None]]:
        """``PART_ID`` ranges ``[first, next first)`` (the last one open: None) that cover
        the table's partitions with at most ``size`` partitions each, for reading a
        large table in parallel (:meth:`partitions_in_range`); one query."""
        p = s.PARTITIONS.c
        with self._conn() as conn:
            tbl_id, _, _ = self._table_ref(conn, db, table)
            numbered = (
                select(p.PART_ID, sa.func.row_number().over(order_by=p.PART_ID).label("n"))
                .where(p.TBL_ID == tbl_id)
                .subquery()
            )
            firsts = list(
                conn.execute(
                    select(numbered.c.PART_ID)
                    .where((numbered.c.n - 1) % size == 0)
                    .order_by(numbered.c.PART_ID)
                ).scalars()
            )
        return [(first, nxt) for first, nxt in zip(firsts, [*firsts[1:], None], strict=True)]

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
        """:meth:`partitions` and :meth:`partitions_in_range`."""
        p = s.PARTITIONS.c
        with self._mapping(), self._conn() as conn:
            tbl_id, db_name, tbl_name = self._table_ref(conn, db, table)
        owner = {tbl_id: (db_name, tbl_name)}
        if names is not None:
            for start in range(0, len(names), 1000):
                chunk = list(names[start : start + 1000])
                where = sa.and_(p.TBL_ID == tbl_id, p.PART_NAME.in_(chunk))
                yield from self._partition_batch(where, owner)[0]
            return
        first, end = id_range or (None, None)
        while True:
            where = p.TBL_ID == tbl_id
            if end is not None:
                where = sa.and_(where, p.PART_ID < end)
            if first is not None:
                where = sa.and_(where, p.PART_ID >= first)
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
        t, p = s.TBLS.c, s.PARTITIONS.c
        tables_of_db, named = _named_tables(db, tables)
        with self._conn() as conn:
            rows = conn.execute(
                select(t.TBL_NAME, sa.func.count(p.PART_ID))
                .select_from(tables_of_db.outerjoin(s.PARTITIONS, p.TBL_ID == t.TBL_ID))
                .where(named)
                .group_by(t.TBL_NAME)
            ).all()
        return {name.lower(): int(count) for name, count in rows}

    @_mapped
    def tables_partitions(self, db: str, tables: Sequence[str]) -> dict[str, list[Any]]:
        """The ``Partition`` s of several tables of ``db`` read together, in one set of
        queries (as :meth:`partitions` reads one batch), by lower-case table name;
        tables that do not exist are left out. For small tables: nothing is streamed,
        so the caller bounds the total (:meth:`partition_counts`)."""
        if not tables:
            return {}
        t, d, p = s.TBLS.c, s.DBS.c, s.PARTITIONS.c
        tables_of_db, named = _named_tables(db, tables)
        with self._conn() as conn:
            refs = conn.execute(
                select(t.TBL_ID, d.NAME, t.TBL_NAME).select_from(tables_of_db).where(named)
            ).all()
        owners = {int(tbl_id): (db_name, tbl_name) for tbl_id, db_name, tbl_name in refs}
        result: dict[str, list[Any]] = {tbl_name.lower(): [] for _, tbl_name in owners.values()}
        if owners:
            partitions, _ = self._partition_batch(p.TBL_ID.in_(sorted(owners)), owners)
            for part in partitions:
                result[part.tableName.lower()].append(part)
        return result

    @contextlib.contextmanager
    def _mapping(self) -> Iterator[None]:
        """Map SQLAlchemy errors raised inside (for generators, which ``_mapped`` cannot wrap)."""
        try:
            yield
        except SQLAlchemyError as exc:
            raise self._map_error(exc) from exc

    def _partition_batch(
        self,
        where: Any,
        owners: dict[int, tuple[str, str]],
        *,
        limit: int | None = None,
        tbl_id: int | None = None,
    ) -> tuple[list[Any], int]:
        """Every partition matching ``where`` (a PARTITIONS predicate on tables among
        ``owners``: ``TBL_ID`` -> (database, table) as stored), in ``PART_ID`` order, in
        10 queries on one connection, and the last ``PART_ID`` read; with ``limit`` (and
        ``tbl_id``, the one table), only the first ``limit`` of them by ``PART_ID``."""
        p, kv = s.PARTITIONS.c, s.PARTITION_KEY_VALS.c
        with self._mapping(), self._conn() as conn:
            query = select(p.PART_ID, p.CREATE_TIME, p.LAST_ACCESS_TIME, p.SD_ID, p.TBL_ID).where(
                where
            )
            rows = conn.execute(query.order_by(p.PART_ID).limit(limit)).all()
            if not rows:
                return [], 0
            if limit is not None:
                where = sa.and_(p.TBL_ID == tbl_id, p.PART_ID.between(rows[0][0], rows[-1][0]))
            ids = select(p.PART_ID).where(where).scalar_subquery()
            part_range = (rows[0][0], rows[-1][0])  # rows are in PART_ID order
            part_ids = {r[0] for r in rows}
            values: dict[int, list[str]] = defaultdict(list)
            for part_id, value in kept(
                conn.execute(
                    select(kv.PART_ID, kv.PART_KEY_VAL)
                    .where(member(kv.PART_ID, ids, part_range, part_ids))
                    .order_by(kv.PART_ID, kv.INTEGER_IDX)
                ).all(),
                part_ids,
            ):
                values[part_id].append(value)
            params = params_of(conn, s.PARTITION_PARAMS, ids, part_range, part_ids)
            sd_ids = select(p.SD_ID).where(where).scalar_subquery()
            sd_known = {r[3] for r in rows if r[3] is not None}
            sds = storage_descriptors(conn, sd_ids, _bounds(r[3] for r in rows), sd_known)
        new_partition, values_get, params_get, sds_get = (
            hms.Partition,
            values.get,
            params.get,
            sds.get,
        )
        partitions = [
            new_partition(
                values=values_get(part_id) or [],
                dbName=owners[tbl][0],
                tableName=owners[tbl][1],
                createTime=create_time,
                lastAccessTime=last_access_time,
                sd=sds_get(sd_id),
                parameters=params_get(part_id) or {},
            )
            for part_id, create_time, last_access_time, sd_id, tbl in rows
        ]
        return partitions, rows[-1][0]

    @_mapped
    def table_column_statistics(self, db: str, table: str, columns: Sequence[str]) -> list[Any]:
        """HMS's table-level ``ColumnStatisticsObj`` s for ``columns`` (``TAB_COL_STATS``)."""
        with self._conn() as conn:
            tbl_id, _, _ = self._table_ref(conn, db, table)
            return column_stats.table_column_statistics(conn, tbl_id, columns)

    # -- notification events ------------------------------------------------------------

    @_mapped
    def current_notification_id(self) -> int:
        with self._conn() as conn:
            next_id = conn.execute(
                select(sa.func.max(s.NOTIFICATION_SEQUENCE.c.NEXT_EVENT_ID))
            ).scalar()
        return max(0, int(next_id) - 1) if next_id is not None else 0

    @_mapped
    def next_notifications(self, last_event: int, max_events: int) -> list[Any]:
        n = s.NOTIFICATION_LOG.c
        with self._conn() as conn:
            rows = conn.execute(
                select(s.NOTIFICATION_LOG)
                .where(n.EVENT_ID > last_event)
                .order_by(n.EVENT_ID)
                .limit(max_events)
            ).all()
        return [
            hms.NotificationEvent(
                eventId=r.EVENT_ID,
                eventTime=r.EVENT_TIME,
                eventType=r.EVENT_TYPE,
                dbName=r.DB_NAME,
                tableName=r.TBL_NAME,
                message=r.MESSAGE,
                messageFormat=r.MESSAGE_FORMAT,
            )
            for r in rows
        ]

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


def _named_tables(db: str, tables: Sequence[str]) -> tuple[Any, Any]:
    """``TBLS`` joined with ``DBS``, and the predicate selecting ``tables`` of ``db``."""
    t, d = s.TBLS.c, s.DBS.c
    wanted = sorted({n.lower() for n in tables})
    return s.TBLS.join(s.DBS, t.DB_ID == d.DB_ID), sa.and_(
        d.NAME == db.lower(), t.TBL_NAME.in_(wanted)
    )


def _partition_keys(conn: Connection, tbl_ids: Any) -> dict[int, list[Any]]:
    k = s.PARTITION_KEYS.c
    result: dict[int, list[Any]] = defaultdict(list)
    for tbl_id, name, type_, comment in conn.execute(
        select(k.TBL_ID, k.PKEY_NAME, k.PKEY_TYPE, k.PKEY_COMMENT)
        .where(k.TBL_ID.in_(tbl_ids))
        .order_by(k.TBL_ID, k.INTEGER_IDX)
    ).all():
        result[tbl_id].append(hms.FieldSchema(name=name, type=type_, comment=comment))
    return result
