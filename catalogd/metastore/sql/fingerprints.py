# ruff: noqa: SIM300  (UPPER_CASE schema columns look like constants to ruff: `col == value` is right)
"""Change fingerprints of a whole metastore, aggregated in SQL.

Each function is one or two queries whose answer is small (a row per
database, per table or per partition *of one table*) however many partitions
the metastore holds: the database hashes and sums the rows. A fingerprint
changes when anything catalogd publishes changes, including what HMS's own
``transient_lastDdlTime`` does not show: parameters (statistics written by
``ANALYZE``, ``numFiles``/``totalSize``), locations, columns (a new
``CD_ID``), SerDe properties, database properties, grants and roles.

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

from catalogd.metastore.sql import schema as s

__all__ = ["Fingerprint", "change_marker", "databases", "grants", "partitions_of", "tables"]

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
    """``{database: fingerprint}`` over ``DBS`` and ``DATABASE_PARAMS``."""
    d, p = s.DBS.c, s.DATABASE_PARAMS.c
    params = _pairs(
        conn,
        select(p.DB_ID, _hash_sum(p.PARAM_KEY, "=", p.PARAM_VALUE)).group_by(p.DB_ID),
    )
    rows = conn.execute(
        select(d.DB_ID, d.NAME, d.DESC, d.DB_LOCATION_URI, d.OWNER_NAME, d.OWNER_TYPE)
    )
    return {row.NAME: (*row[2:], row.DB_ID, _number(params.get(row.DB_ID))) for row in rows}


def _weighted_hash(owner: Any, *parts: Any) -> Any:
    """Sum over rows of hash(parts) x (owner id mod 997 + 1): no casts (cheap), and a
    value moving from one owner to another changes it."""
    text = sa.func.concat(*(sa.func.coalesce(p, "") for p in parts))
    return sa.func.coalesce(sa.func.sum(str_hash(text) * (owner % 997 + 1)), 0)


def partition_totals(conn: Connection) -> Fingerprint:
    """One fingerprint of every partition parameter, storage descriptor and SerDe
    parameter, each table scanned alone (no joins, ~4x cheaper): while it is
    unchanged, so are the per-table partition hashes of :func:`tables`."""
    pp, sd, sp = s.PARTITION_PARAMS.c, s.SDS.c, s.SERDE_PARAMS.c
    row = conn.execute(
        select(
            select(_weighted_hash(pp.PART_ID, pp.PARAM_KEY, "=", pp.PARAM_VALUE)).scalar_subquery(),
            select(_weighted_hash(sd.SD_ID, sd.LOCATION)).scalar_subquery(),
            select(sa.func.sum(sd.CD_ID + sd.SERDE_ID * 7)).scalar_subquery(),
            select(
                _weighted_hash(sp.SERDE_ID, sp.PARAM_KEY, "=", sp.PARAM_VALUE)
            ).scalar_subquery(),
        )
    ).one()
    return tuple(_number(v) for v in row)


def tables(conn: Connection, detailed: bool = True) -> dict[tuple[str, str], Fingerprint]:
    """``{(database, table): fingerprint}``: the table row, its storage descriptor,
    parameter and SerDe-parameter hashes; then its partitions' (count, id sum, newest
    create time), storage-descriptor hash and parameter hash. The last two are None
    unless ``detailed`` (they cost joins over every partition: read them only when
    :func:`partition_totals` changed)."""
    t, d, sd = s.TBLS.c, s.DBS.c, s.SDS.c
    tp, sp, pk = s.TABLE_PARAMS.c, s.SERDE_PARAMS.c, s.PARTITIONS.c
    pp = s.PARTITION_PARAMS.c
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
    sd_hashes: dict[Any, Any] = {}
    param_hashes: dict[Any, Any] = {}
    if detailed:
        sd_hashes = _pairs(
            conn,
            select(pk.TBL_ID, _hash_sum(pk.PART_ID, sd.LOCATION, "/", sd.CD_ID, "/", sd.SERDE_ID))
            .select_from(s.PARTITIONS.join(s.SDS, pk.SD_ID == sd.SD_ID))
            .group_by(pk.TBL_ID),
        )
        serde_hashes = _pairs(
            conn,
            select(pk.TBL_ID, _hash_sum(pk.PART_ID, sp.PARAM_KEY, "=", sp.PARAM_VALUE))
            .select_from(
                s.PARTITIONS.join(s.SDS, pk.SD_ID == sd.SD_ID).join(
                    s.SERDE_PARAMS, sd.SERDE_ID == sp.SERDE_ID
                )
            )
            .group_by(pk.TBL_ID),
        )
        for tbl_id, value in serde_hashes.items():
            sd_hashes[tbl_id] = _number(sd_hashes.get(tbl_id)) + _number(value)
        param_hashes = _pairs(
            conn,
            select(pk.TBL_ID, _hash_sum(pp.PART_ID, pp.PARAM_KEY, "=", pp.PARAM_VALUE))
            .select_from(s.PARTITION_PARAMS.join(s.PARTITIONS, pp.PART_ID == pk.PART_ID))
            .group_by(pk.TBL_ID),
        )
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
        ).select_from(s.TBLS.join(s.DBS, t.DB_ID == d.DB_ID).outerjoin(s.SDS, t.SD_ID == sd.SD_ID))
    ).all()
    result = {}
    for row in rows:
        tbl_id = row.TBL_ID
        result[(row.NAME, row.TBL_NAME)] = (
            tbl_id,
            *row[3:],
            _number(table_params.get(tbl_id)),
            _number(serde_params.get(row.SERDE_ID)),
            parts.get(tbl_id, (0, 0, 0)),
            _number(sd_hashes.get(tbl_id)) if detailed else None,
            _number(param_hashes.get(tbl_id)) if detailed else None,
        )
    return result


def partitions_of(conn: Connection, db: str, table: str) -> dict[str, Fingerprint]:
    """``{partition name: fingerprint}`` of one table (empty if it is gone)."""
    t, d, pk, sd, pp = s.TBLS.c, s.DBS.c, s.PARTITIONS.c, s.SDS.c, s.PARTITION_PARAMS.c
    tbl_id = conn.execute(
        select(t.TBL_ID)
        .select_from(s.TBLS.join(s.DBS, t.DB_ID == d.DB_ID))
        .where(d.NAME == db, t.TBL_NAME == table)
    ).scalar()
    if tbl_id is None:
        return {}
    params = _pairs(
        conn,
        select(pp.PART_ID, _hash_sum(pp.PARAM_KEY, "=", pp.PARAM_VALUE))
        .select_from(s.PARTITION_PARAMS.join(s.PARTITIONS, pp.PART_ID == pk.PART_ID))
        .where(pk.TBL_ID == tbl_id)
        .group_by(pp.PART_ID),
    )
    rows = conn.execute(
        select(pk.PART_ID, pk.PART_NAME, pk.CREATE_TIME, sd.LOCATION, sd.CD_ID, sd.SERDE_ID)
        .select_from(s.PARTITIONS.outerjoin(s.SDS, pk.SD_ID == sd.SD_ID))
        .where(pk.TBL_ID == tbl_id)
    )
    return {row.PART_NAME: (*row[0:1], *row[2:], _number(params.get(row.PART_ID))) for row in rows}


def grants(conn: Connection) -> Fingerprint:
    """One fingerprint of every role, membership, grant and function."""
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
                _hash_sum(*(c for c in table.c if c.name != id_col)).label("h"),
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
