# ruff: noqa: SIM300  (UPPER_CASE schema columns look like constants to ruff: `col == value` is right)
"""Databases and tables from the HMS backing database, and how a name finds its id.

Functions over a connection the caller holds (:class:`~catalogd.sources.sql.SqlSource`
opens it, sets it read-only and maps driver errors). They return the HMS Thrift structs
``get_database`` and ``get_table_objects_by_name`` return, so catalog objects made from
them are identical. ``address`` (the database's URL, password hidden) only names the
metastore in :class:`NotFoundError` messages.
"""

from __future__ import annotations

import copy
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
    """Every database name (of the catalog read), sorted."""
    dbs = s.layout_of(conn).dbs
    return list(conn.execute(select(dbs.c.NAME).order_by(dbs.c.NAME)).scalars())


def get_database(conn: Connection, name: str, address: str) -> Any:
    """The ``Database`` named ``name`` (any case). Raises NotFoundError.

    Built as HMS's direct-SQL ``getDatabase`` builds it for the schema's version
    (3.x: its catalog; 4.x: creation time, managed location, type)."""
    layout = s.layout_of(conn)
    dbs = layout.dbs
    row = conn.execute(select(dbs).where(dbs.c.NAME == name.lower())).first()
    if row is None:
        raise NotFoundError(f"database {name.lower()} not found in {address}")
    params = params_of(conn, s.DATABASE_PARAMS, select(sa.literal(row.DB_ID)))
    database = hms.Database(
        name=row.NAME,
        description=row.DESC,
        locationUri=row.DB_LOCATION_URI,
        parameters=dict(params.get(row.DB_ID, {})),
        ownerName=row.OWNER_NAME,
        ownerType=principal_type(row.OWNER_TYPE),
    )
    if layout.generation >= 3:
        database.catalogName = row.CTLG_NAME
    if layout.generation >= 4:
        database.createTime = row.CREATE_TIME
        database.managedLocationUri = row.DB_MANAGED_LOCATION_URI
        if (row.TYPE or "").upper() == "REMOTE":
            database.type = hms.DatabaseType.REMOTE
            database.connector_name = row.DATACONNECTOR_NAME
            database.remote_dbname = row.REMOTE_DBNAME
        else:
            database.type = hms.DatabaseType.NATIVE
    return database


def table_names(conn: Connection, db: str, address: str) -> list[str]:
    """The table names of ``db``, sorted. Raises NotFoundError (unknown database)."""
    t, d = s.TBLS.c, s.layout_of(conn).dbs.c
    db_id = conn.execute(select(d.DB_ID).where(d.NAME == db.lower())).scalar()
    if db_id is None:
        raise NotFoundError(f"database {db.lower()} not found in {address}")
    rows = conn.execute(select(t.TBL_NAME).where(t.DB_ID == int(db_id)).order_by(t.TBL_NAME))
    return list(rows.scalars())


# Table types whose view texts HMS 4 sends (it leaves them out for other types).
_VIEW_TYPES = ("VIRTUAL_VIEW", "MATERIALIZED_VIEW")


def get_tables(conn: Connection, db: str, names: Sequence[str]) -> list[Any]:
    """The ``Table`` of each of ``names`` that exists in ``db`` (none when ``db`` does
    not), by name; a fixed number of queries however many tables.

    Built as HMS's ``ObjectStore.convertToTable`` builds it for the schema's version
    (3.x: catalog, owner type, SerDe descriptions; 4.x: write id and table id, view
    texts of views only)."""
    if not names:
        return []
    layout = s.layout_of(conn)
    t, d = s.TBLS.c, layout.dbs.c
    wanted = sorted({n.lower() for n in names})
    db_row = conn.execute(select(d.DB_ID, d.NAME).where(d.NAME == db.lower())).first()
    if db_row is None:
        return []
    where = sa.and_(t.DB_ID == db_row.DB_ID, t.TBL_NAME.in_(wanted))
    rows = conn.execute(select(*layout.columns(s.TBLS)).where(where).order_by(t.TBL_NAME)).all()
    if not rows:
        return []
    ids = select(t.TBL_ID).where(where).scalar_subquery()
    params = params_of(conn, s.TABLE_PARAMS, ids)
    sd_ids = select(t.SD_ID).where(where).scalar_subquery()
    sds = storage_descriptors(conn, sd_ids)
    if layout.generation >= 3:
        sds = _with_serde_details(conn, sds, sd_ids)
    keys = _partition_keys(conn, ids)
    tables = []
    for r in rows:
        table = hms.Table(
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
        if layout.generation >= 3:
            table.catName = layout.catalog
            # HMS: "USER was the default type for owner" before the column existed.
            table.ownerType = principal_type(r.OWNER_TYPE) or hms.PrincipalType.USER
        if layout.generation >= 4:
            table.writeId = r.WRITE_ID
            table.id = r.TBL_ID
            if r.TBL_TYPE not in _VIEW_TYPES:
                table.viewOriginalText = table.viewExpandedText = None
            if table.sd is not None and _is_acid(table.parameters):
                table.sd = _acid_descriptor(table.sd)
        tables.append(table)
    return tables


def table_ref(conn: Connection, db: str, table: str, address: str) -> tuple[int, str, str]:
    """``(TBL_ID, database, table)`` of ``db.table`` (names as stored). Raises NotFoundError."""
    dbs = s.layout_of(conn).dbs
    t, d = s.TBLS.c, dbs.c
    row = conn.execute(
        select(t.TBL_ID, d.NAME, t.TBL_NAME)
        .select_from(s.TBLS.join(dbs, t.DB_ID == d.DB_ID))
        .where(d.NAME == db.lower(), t.TBL_NAME == table.lower())
    ).first()
    if row is None:
        raise NotFoundError(f"table {db.lower()}.{table.lower()} not found in {address}")
    return int(row[0]), row[1], row[2]


def _is_acid(parameters: dict[str, str]) -> bool:
    """HMS 4's ``TxnUtils.isAcidTable``: transactional, with the default (full ACID)
    transactional properties (case-insensitive both)."""
    return (parameters.get("transactional") or "").lower() == "true" and (
        parameters.get("transactional_properties") or ""
    ).lower() == "default"


def _acid_descriptor(sd: Any) -> Any:
    """A full-ACID table's descriptor as HMS 4 sends it (``convertToStorageDescriptor``
    with ``isAcidTable``): no sort columns, descriptor parameters, SerDe parameters or
    skew, and a SerDe of name and library only. A copy: ``sd`` may be shared."""
    stripped = copy.copy(sd)
    stripped.sortCols, stripped.parameters = [], {}
    if sd.serdeInfo is not None:
        stripped.serdeInfo = hms.SerDeInfo(
            name=sd.serdeInfo.name, serializationLib=sd.serdeInfo.serializationLib, parameters={}
        )
    stripped.skewedInfo = hms.SkewedInfo(
        skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={}
    )
    return stripped


def _with_serde_details(conn: Connection, sds: dict[int, Any], sd_ids: Any) -> dict[int, Any]:
    """``sds`` with the SerDe fields HMS 3 added (description, serializer and deserializer
    classes, type) where a table's SerDe has any: HMS sends them with tables, not with
    partitions (its direct-SQL partition reads leave them out). One query; the shared
    ``SerDeInfo`` structs are copied, never changed."""
    sd, serde = s.SDS.c, s.SERDES.c
    rows = conn.execute(
        select(sd.SD_ID, serde.DESCRIPTION, serde.SERIALIZER_CLASS, serde.DESERIALIZER_CLASS,
               serde.SERDE_TYPE)
        .select_from(s.SDS.join(s.SERDES, sd.SERDE_ID == serde.SERDE_ID))
        .where(sd.SD_ID.in_(sd_ids))
        .where(sa.or_(serde.DESCRIPTION.is_not(None), serde.SERIALIZER_CLASS.is_not(None),
                      serde.DESERIALIZER_CLASS.is_not(None), serde.SERDE_TYPE > 0))
    ).all()  # fmt: skip
    for sd_id, description, serializer, deserializer, serde_type in rows:
        old = sds.get(sd_id)
        if old is None or old.serdeInfo is None:
            continue
        info = copy.copy(old.serdeInfo)
        info.description, info.serializerClass = description, serializer
        info.deserializerClass = deserializer
        info.serdeType = serde_type if serde_type and serde_type > 0 else None
        sds[sd_id] = copy.copy(old)
        sds[sd_id].serdeInfo = info
    return sds


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
