# ruff: noqa: SIM300  (UPPER_CASE schema columns look like constants to ruff: `col == value` is right)
"""Change fingerprints of a whole metastore, aggregated in SQL.

Each function is one to three queries whose answer is small (a row per
database, per table, or per thousand partition ids) however many partitions
the metastore holds: the database hashes and sums the rows. A fingerprint
changes when anything catalogd publishes changes, including what HMS's own
``transient_lastDdlTime`` does not show: parameters (statistics written by
``ANALYZE``, ``numFiles``/``totalSize``), locations, formats, columns (a new
``CD_ID``), SerDe properties, database properties, grants and roles.
:func:`change_marker` is the cheap question before all of them: has anything
been written at all?

Hashes are the database's own cheap string hash (PostgreSQL ``hashtext``,
MySQL/MariaDB ``crc32``), summed per group: a collision could hide a change,
at odds of about 2^-32 per change.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import BigInteger, select
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from catalogd.sources.sql import schema as s

__all__ = [
    "BUCKET",
    "Fingerprint",
    "change_marker",
    "databases",
    "functions",
    "grants",
    "partition_buckets",
    "partition_count",
    "partition_names",
    "partitions_in",
    "tables",
]

Fingerprint = tuple[Any, ...]


class str_hash(FunctionElement[int]):  # noqa: N801 - a SQL function name
    """A 32-bit hash of a string, in the database."""

    type = BigInteger()
    inherit_cache = True


@compiles(str_hash, "postgresql")
def _pg_hash(element: Any, compiler: Any, **kw: Any) -> str:
    return f"hashtext({compiler.process(element.clauses, **kw)})::bigint"


@compiles(str_hash, "mysql")
@compiles(str_hash, "mariadb")
def _mysql_hash(element: Any, compiler: Any, **kw: Any) -> str:
    return f"crc32({compiler.process(element.clauses, **kw)})"


@compiles(str_hash)
def _other_hash(element: Any, compiler: Any, **kw: Any) -> str:
    return f"length({compiler.process(element.clauses, **kw)})"  # weaker, but portable


def _hash_sum(*parts: Any) -> Any:
    text = sa.func.concat(*(sa.func.coalesce(sa.cast(p, sa.String), "") for p in parts))
    return sa.func.coalesce(sa.func.sum(str_hash(text)), 0)


def _pairs(conn: Connection, query: Any) -> dict[Any, Any]:
    return {row[0]: row[1] for row in conn.execute(query)}


def _number(value: Any) -> int:
    return int(value) if value is not None else 0


def databases(conn: Connection) -> dict[str, Fingerprint]:
    """``{database: fingerprint}`` over ``DBS`` (every column the schema has) and
    ``DATABASE_PARAMS``."""
    dbs, p = s.layout_of(conn).dbs, s.DATABASE_PARAMS.c
    params = _pairs(
        conn,
        select(p.DB_ID, _hash_sum(p.PARAM_KEY, "=", p.PARAM_VALUE)).group_by(p.DB_ID),
    )
    rows = conn.execute(select(dbs))
    return {
        row.NAME: (*(v for k, v in row._mapping.items() if k not in ("DB_ID", "NAME")),
                   row.DB_ID, _number(params.get(row.DB_ID)))
        for row in rows
    }  # fmt: skip


def _weighted_hash(owner: Any, *parts: Any) -> Any:
    """Sum over rows of hash(parts) x (owner id mod 997 + 1): no casts (cheap), and a
    value moving from one owner to another changes it."""
    text = sa.func.concat(*(sa.func.coalesce(p, "") for p in parts))
    return sa.func.coalesce(sa.func.sum(str_hash(text) * (owner % 997 + 1)), 0)


# Ids per bucket of partition_buckets: a changed bucket costs a refresh of at most this
# many partitions; a 1M-partition metastore has about 3,000 buckets (all three kinds).
BUCKET = 1024

Bucket = tuple[str, int]  # (kind, first id): "p" PART_ID, "s" SD_ID, "e" SERDE_ID


def _bucket_of(ident: Any) -> Any:
    return ident - ident % BUCKET  # integer arithmetic: the same in every dialect


def _partition_hashes() -> list[tuple[str, Any, tuple[Any, ...]]]:
    """(kind, id column, aggregates) of what partitions hold beyond their names:
    parameters (``PARTITION_PARAMS``, kind "p"), storage descriptors (``SDS``:
    location, formats, column and SerDe ids; "s") and SerDe parameters (``SERDE_PARAMS``,
    "e"). Each is one table scanned alone (no joins)."""
    pp, sd, sp = s.PARTITION_PARAMS.c, s.SDS.c, s.SERDE_PARAMS.c
    return [
        ("p", pp.PART_ID, (_weighted_hash(pp.PART_ID, pp.PARAM_KEY, "=", pp.PARAM_VALUE),)),
        (
            "s",
            sd.SD_ID,
            (
                _weighted_hash(sd.SD_ID, sd.LOCATION, "/", sd.INPUT_FORMAT, "/", sd.OUTPUT_FORMAT),
                sa.func.sum(sd.CD_ID + sd.SERDE_ID * 7),
            ),
        ),
        ("e", sp.SERDE_ID, (_weighted_hash(sp.SERDE_ID, sp.PARAM_KEY, "=", sp.PARAM_VALUE),)),
    ]


def partition_buckets(conn: Connection) -> dict[Bucket, Fingerprint]:
    """``{(kind, first id): fingerprint}`` per ``BUCKET`` ids of each of
    :func:`_partition_hashes`: three grouped scans, a few rows per thousand partitions.

    A bucket that changed names where to look (:func:`partitions_in`): so a parameter
    written by ``ANALYZE`` of one partition of a million costs the refresh of at most
    ``BUCKET``. (Table descriptors share the "s" and "e" buckets: a changed table
    descriptor also refreshes the partitions whose ids are near it, which publishes
    nothing.)
    """
    result: dict[Bucket, Fingerprint] = {}
    for kind, ident, aggregates in _partition_hashes():
        bucket = _bucket_of(ident).label("bucket")
        for row in conn.execute(select(bucket, sa.func.count(), *aggregates).group_by(bucket)):
            result[(kind, int(row[0]))] = tuple(_number(v) for v in row[1:])
    return result


def partitions_in(conn: Connection, buckets: list[Bucket]) -> list[tuple[str, str, str]]:
    """``(database, table, partition name)`` of every partition whose ``PART_ID``,
    ``SD_ID`` or SerDe id falls in one of ``buckets`` (as :func:`partition_buckets`
    names them); 100 buckets per query."""
    dbs = s.layout_of(conn).dbs
    t, d, pk, sd = s.TBLS.c, dbs.c, s.PARTITIONS.c, s.SDS.c
    column = {"p": pk.PART_ID, "s": pk.SD_ID, "e": sd.SERDE_ID}
    found: list[tuple[str, str, str]] = []
    for start in range(0, len(buckets), 100):
        ranges = [
            column[kind].between(first, first + BUCKET - 1)
            for kind, first in buckets[start : start + 100]
        ]
        rows = conn.execute(
            select(d.NAME, t.TBL_NAME, pk.PART_NAME)
            .select_from(
                s.PARTITIONS.join(s.TBLS, pk.TBL_ID == t.TBL_ID)
                .join(dbs, t.DB_ID == d.DB_ID)
                .outerjoin(s.SDS, pk.SD_ID == sd.SD_ID)
            )
            .where(sa.or_(*ranges))
        )
        found.extend((row[0], row[1], row[2]) for row in rows)
    return sorted(set(found))


def partition_names(conn: Connection, db: str, table: str) -> set[str]:
    """Every partition name of one table (empty if it is gone)."""
    dbs = s.layout_of(conn).dbs
    t, d, pk = s.TBLS.c, dbs.c, s.PARTITIONS.c
    rows = conn.execute(
        select(pk.PART_NAME)
        .select_from(s.PARTITIONS.join(s.TBLS, pk.TBL_ID == t.TBL_ID).join(dbs, t.DB_ID == d.DB_ID))
        .where(d.NAME == db, t.TBL_NAME == table)
    )
    return set(rows.scalars())


def tables(conn: Connection) -> dict[tuple[str, str], Fingerprint]:
    """``{(database, table): fingerprint}``: the table row, its storage descriptor,
    parameter and SerDe-parameter hashes; last, its partitions' (count, id sum, newest
    create time), which move when partitions are added or dropped (what they hold is
    :func:`partition_buckets`' part). The owner type and write id count too where the
    schema has them (3.x, 4.x)."""
    layout = s.layout_of(conn)
    dbs = layout.dbs
    t, d, sd = s.TBLS.c, dbs.c, s.SDS.c
    tp, sp, pk = s.TABLE_PARAMS.c, s.SERDE_PARAMS.c, s.PARTITIONS.c
    table_params = _pairs(
        conn,
        select(tp.TBL_ID, _hash_sum(tp.PARAM_KEY, "=", tp.PARAM_VALUE)).group_by(tp.TBL_ID),
    )
    table_serdes = select(sd.SERDE_ID).select_from(s.TBLS.join(s.SDS, t.SD_ID == sd.SD_ID))
    serde_params = _pairs(
        conn,
        select(sp.SERDE_ID, _hash_sum(sp.PARAM_KEY, "=", sp.PARAM_VALUE))
        .where(sp.SERDE_ID.in_(table_serdes.scalar_subquery()))
        .group_by(sp.SERDE_ID),
    )
    part_rows = conn.execute(
        select(
            pk.TBL_ID, sa.func.count(), sa.func.sum(pk.PART_ID), sa.func.max(pk.CREATE_TIME)
        ).group_by(pk.TBL_ID)
    ).all()
    parts = {row[0]: tuple(_number(v) for v in row[1:]) for row in part_rows}
    rows = conn.execute(
        select(
            t.TBL_ID,
            d.NAME,
            t.TBL_NAME,
            t.CREATE_TIME,
            t.OWNER,
            t.TBL_TYPE,
            t.VIEW_EXPANDED_TEXT,
            sd.LOCATION,
            sd.CD_ID,
            sd.INPUT_FORMAT,
            sd.SERDE_ID,
            *(c for c in layout.columns(s.TBLS) if c.info.get("since")),
        ).select_from(s.TBLS.join(dbs, t.DB_ID == d.DB_ID).outerjoin(s.SDS, t.SD_ID == sd.SD_ID))
    ).all()
    return {
        (row.NAME, row.TBL_NAME): (
            row.TBL_ID,
            *row[3:],
            _number(table_params.get(row.TBL_ID)),
            _number(serde_params.get(row.SERDE_ID)),
            parts.get(row.TBL_ID, (0, 0, 0)),
        )
        for row in rows
    }


def grants(conn: Connection) -> Fingerprint:
    """One fingerprint of every role, membership, grant and function."""
    layout = s.layout_of(conn)
    parts: list[Any] = []
    for table, id_col in (
        (s.ROLES, "ROLE_ID"),
        (s.ROLE_MAP, "ROLE_GRANT_ID"),
        (s.GLOBAL_PRIVS, "USER_GRANT_ID"),
        (s.DB_PRIVS, "DB_GRANT_ID"),
        (s.TBL_PRIVS, "TBL_GRANT_ID"),
        (s.TBL_COL_PRIVS, "TBL_COLUMN_GRANT_ID"),
    ):
        ident = table.c[id_col]
        parts.append(
            select(
                sa.literal(table.name).label("kind"),
                sa.func.count().label("n"),
                sa.func.coalesce(sa.func.sum(ident), 0).label("ids"),
                _hash_sum(*(c for c in layout.columns(table) if c.name != id_col)).label("h"),
            )
        )
    rows = conn.execute(sa.union_all(*parts)).all()
    return tuple(sorted((r[0], _number(r[1]), _number(r[2]), _number(r[3])) for r in rows))


def functions(conn: Connection) -> Fingerprint:
    """One fingerprint of every function and its resources."""
    f, ru = s.FUNCS.c, s.FUNC_RU.c
    row = conn.execute(
        select(sa.func.count(), _hash_sum(*f), select(_hash_sum(*ru)).scalar_subquery())
    ).one()
    return tuple(_number(v) for v in row)


# Status counters that move with every write to InnoDB (its redo log position), any
# user may read them (SHOW GLOBAL STATUS needs no privilege): MariaDB, MySQL 8.0.30+,
# older MySQL.
_INNODB_POSITIONS = ("Innodb_lsn_current", "Innodb_redo_log_current_lsn", "Innodb_os_log_written")


def change_marker(conn: Connection) -> Any:
    """A value that moves whenever anything is written to the database server: PostgreSQL's
    WAL position (the replayed one on a replica), InnoDB's redo log position. One tiny
    query; None where there is none (then every cycle is a full pass).

    Reading it costs nothing however big the metastore is, so a cycle that finds it
    where the last two left it can skip the fingerprint queries: nothing was written.
    (Two, not one: a transaction's log records are written before it becomes visible,
    so a pass may start between the two and miss it; the next pass cannot.)
    """
    dialect = conn.dialect.name
    if dialect == "postgresql":
        return conn.exec_driver_sql(
            "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()::text "
            "ELSE pg_current_wal_insert_lsn()::text END"
        ).scalar()
    if dialect in ("mysql", "mariadb"):
        names = ", ".join(f"'{n}'" for n in _INNODB_POSITIONS)
        rows = conn.exec_driver_sql(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})").all()
        return tuple(sorted((str(name), str(value)) for name, value in rows)) or None
    return None


def partition_count(conn: Connection) -> int:
    """How many partitions the metastore holds (for progress reports)."""
    return _number(conn.execute(select(sa.func.count()).select_from(s.PARTITIONS)).scalar())
