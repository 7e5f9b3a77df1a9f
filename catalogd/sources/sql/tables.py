# ruff: noqa: SIM300  (UPPER_CASE schema columns look like constants to ruff: `col == value` is right)
"""Databases and tables from the HMS backing database, and how a name finds its id.

Functions over a connection the caller holds (:class:`~catalogd.sources.sql.SqlSource`
opens it, sets it read-only and maps driver errors). They return the HMS Thrift structs
``get_database`` and ``get_table_objects_by_name`` return, so catalog objects made from
them are identical. ``address`` (the database's URL, password hidden) only names the
metastore in :class:`NotFoundError` messages.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import select
from sqlalchemy.engine import Connection

import idl
from catalogd.sources.sql import schema as s
from catalogd.sources.sql.structs import as_bool, params_of, principal_type, storage_descriptors
from subscriber.protocol.errors import NotFoundError

__all__ = ["database_names", "get_database", "get_tables", "table_names", "table_ref"]

hms = idl.hive_metastore


def database_names(conn: Connection) -> list[str]:
    """Every database name, sorted."""
    return list(conn.execute(select(s.DBS.c.NAME).order_by(s.DBS.c.NAME)).scalars())


def get_database(conn: Connection, name: str, address: str) -> Any:
    """The ``Database`` named ``name`` (any case). Raises NotFoundError."""
    d = s.DBS.c
    row = conn.execute(select(s.DBS).where(d.NAME == name.lower())).first()
    if row is None:
        raise NotFoundError(f"database {name.lower()} not found in {address}")
    params = params_of(conn, s.DATABASE_PARAMS, select(sa.literal(row.DB_ID)))
    return hms.Database(
        name=row.NAME,
        description=row.DESC,
        locationUri=row.DB_LOCATION_URI,
        parameters=dict(params.get(row.DB_ID, {})),
        ownerName=row.OWNER_NAME,
        ownerType=principal_type(row.OWNER_TYPE),
    )


def table_names(conn: Connection, db: str, address: str) -> list[str]:
    """The table names of ``db``, sorted. Raises NotFoundError (unknown database)."""
    t, d = s.TBLS.c, s.DBS.c
    db_id = conn.execute(select(d.DB_ID).where(d.NAME == db.lower())).scalar()
    if db_id is None:
        raise NotFoundError(f"database {db.lower()} not found in {address}")
    rows = conn.execute(select(t.TBL_NAME).where(t.DB_ID == int(db_id)).order_by(t.TBL_NAME))
    return list(rows.scalars())


def get_tables(conn: Connection, db: str, names: Sequence[str]) -> list[Any]:
    """The ``Table`` of each of ``names`` that exists in ``db`` (none when ``db`` does
    not), by name; a fixed number of queries however many tables."""
    if not names:
        return []
    t, d = s.TBLS.c, s.DBS.c
    wanted = sorted({n.lower() for n in names})
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


def table_ref(conn: Connection, db: str, table: str, address: str) -> tuple[int, str, str]:
    """``(TBL_ID, database, table)`` of ``db.table`` (names as stored). Raises NotFoundError."""
    t, d = s.TBLS.c, s.DBS.c
    row = conn.execute(
        select(t.TBL_ID, d.NAME, t.TBL_NAME)
        .select_from(s.TBLS.join(s.DBS, t.DB_ID == d.DB_ID))
        .where(d.NAME == db.lower(), t.TBL_NAME == table.lower())
    ).first()
    if row is None:
        raise NotFoundError(f"table {db.lower()}.{table.lower()} not found in {address}")
    return int(row[0]), row[1], row[2]


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
