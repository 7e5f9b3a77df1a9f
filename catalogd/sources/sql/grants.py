# ruff: noqa: SIM300  (UPPER_CASE schema columns look like constants to ruff: `col == value` is right)
"""Roles, role memberships, privileges and functions from the HMS backing database.

Each function answers one of the Thrift calls
:mod:`catalogd.conversion.grants` makes, with the structs HMS 2.3 returns for
it (``ObjectStore.list*Grants*``): ``HiveObjectRef`` names as stored, privilege
principal and grantor types from their stored names, times in seconds.
Partition grants are read with empty ``partValues`` filled from
``PARTITION_KEY_VALS`` so they stay distinguishable from table grants.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Table, select
from sqlalchemy.engine import Connection

import idl
from catalogd.sources.sql import schema as s
from catalogd.sources.sql.structs import as_bool, principal_type

__all__ = ["grants_on", "principals_in_role", "privileges_of", "role_names"]

hms = idl.hive_metastore
H = hms.HiveObjectType
_TYPE_NAMES = {v: k for k, v in vars(hms.PrincipalType).items() if isinstance(v, int)}


def role_names(conn: Connection) -> list[str]:
    """Every role name (``get_role_names``)."""
    return list(conn.execute(select(s.ROLES.c.ROLE_NAME).order_by(s.ROLES.c.ROLE_NAME)).scalars())


def principals_in_role(conn: Connection, role: str) -> list[Any]:
    """The ``RolePrincipalGrant`` s of ``role``'s members (``get_principals_in_role``)."""
    m, r = s.ROLE_MAP.c, s.ROLES.c
    rows = conn.execute(
        select(s.ROLE_MAP, r.ROLE_NAME)
        .select_from(s.ROLE_MAP.join(s.ROLES, m.ROLE_ID == r.ROLE_ID))
        .where(r.ROLE_NAME == role)
        .order_by(m.ROLE_GRANT_ID)
    )
    return [
        hms.RolePrincipalGrant(
            roleName=row.ROLE_NAME,
            principalName=row.PRINCIPAL_NAME,
            principalType=principal_type(row.PRINCIPAL_TYPE),
            grantOption=as_bool(row.GRANT_OPTION),
            grantTime=row.ADD_TIME,
            grantorName=row.GRANTOR,
            grantorPrincipalType=principal_type(row.GRANTOR_TYPE),
        )
        for row in rows
    ]


def _privilege(row: Any, privilege: str, ref: Any) -> Any:
    return hms.HiveObjectPrivilege(
        hiveObject=ref,
        principalName=row.PRINCIPAL_NAME,
        principalType=principal_type(row.PRINCIPAL_TYPE),
        grantInfo=hms.PrivilegeGrantInfo(
            privilege=privilege,
            createTime=row.CREATE_TIME,
            grantor=row.GRANTOR,
            grantorType=principal_type(row.GRANTOR_TYPE),
            grantOption=as_bool(row.GRANT_OPTION),
        ),
        authorizer=getattr(row, "AUTHORIZER", None),  # 3.x and 4.x
    )


def _catalog(layout: s.Layout) -> str | None:
    """A database object's ``catName`` as HMS 3.x/4.x sends it (2.3: none)."""
    return layout.catalog if layout.generation >= 3 else None


def _global(conn: Connection, where: Any) -> list[Any]:
    g = s.GLOBAL_PRIVS.c
    columns = s.layout_of(conn).columns(s.GLOBAL_PRIVS)
    rows = conn.execute(select(*columns).where(where).order_by(g.USER_GRANT_ID))
    ref = hms.HiveObjectRef(objectType=H.GLOBAL)
    return [_privilege(row, row.USER_PRIV, ref) for row in rows]


def _on_db(conn: Connection, where: Any) -> list[Any]:
    layout = s.layout_of(conn)
    p, d = s.DB_PRIVS.c, layout.dbs.c
    rows = conn.execute(
        select(*layout.columns(s.DB_PRIVS), d.NAME)
        .select_from(s.DB_PRIVS.join(layout.dbs, p.DB_ID == d.DB_ID))
        .where(where)
        .order_by(p.DB_GRANT_ID)
    )
    return [
        _privilege(
            row,
            row.DB_PRIV,
            hms.HiveObjectRef(objectType=H.DATABASE, dbName=row.NAME, catName=_catalog(layout)),
        )
        for row in rows
    ]


def _on_table(conn: Connection, privs: Table, privilege: str, where: Any) -> list[Any]:
    """Table (TBL_PRIVS) or column (TBL_COL_PRIVS) grants."""
    layout = s.layout_of(conn)
    p, t, d = privs.c, s.TBLS.c, layout.dbs.c
    rows = conn.execute(
        select(*layout.columns(privs), t.TBL_NAME, d.NAME)
        .select_from(privs.join(s.TBLS, p.TBL_ID == t.TBL_ID).join(layout.dbs, t.DB_ID == d.DB_ID))
        .where(where)
        .order_by(p[0])
    )
    column = "COLUMN_NAME" in p
    return [
        _privilege(
            row,
            row._mapping[privilege],
            hms.HiveObjectRef(
                objectType=H.COLUMN if column else H.TABLE,
                dbName=row.NAME,
                catName=_catalog(layout),
                objectName=row.TBL_NAME,
                columnName=row.COLUMN_NAME if column else None,
            ),
        )
        for row in rows
    ]


def _on_partition(conn: Connection, privs: Table, privilege: str, where: Any) -> list[Any]:
    """Partition (PART_PRIVS) or partition column (PART_COL_PRIVS) grants."""
    layout = s.layout_of(conn)
    p, pt, t, d, kv = privs.c, s.PARTITIONS.c, s.TBLS.c, layout.dbs.c, s.PARTITION_KEY_VALS.c
    rows = conn.execute(
        select(*layout.columns(privs), t.TBL_NAME, d.NAME)
        .select_from(
            privs.join(s.PARTITIONS, p.PART_ID == pt.PART_ID)
            .join(s.TBLS, pt.TBL_ID == t.TBL_ID)
            .join(layout.dbs, t.DB_ID == d.DB_ID)
        )
        .where(where)
        .order_by(p[0])
    ).all()
    if not rows:
        return []
    values: dict[int, list[str]] = defaultdict(list)
    part_ids = sorted({row.PART_ID for row in rows})
    for part_id, value in conn.execute(
        select(kv.PART_ID, kv.PART_KEY_VAL)
        .where(kv.PART_ID.in_(part_ids))
        .order_by(kv.PART_ID, kv.INTEGER_IDX)
    ):
        values[part_id].append(value)
    column = "COLUMN_NAME" in p
    return [
        _privilege(
            row,
            row._mapping[privilege],
            hms.HiveObjectRef(
                objectType=H.COLUMN if column else H.PARTITION,
                dbName=row.NAME,
                catName=_catalog(layout),
                objectName=row.TBL_NAME,
                partValues=values.get(row.PART_ID, []),
                columnName=row.COLUMN_NAME if column else None,
            ),
        )
        for row in rows
    ]


def privileges_of(conn: Connection, name: str, kind: int) -> list[Any]:
    """Every grant held by one principal, on anything (``list_privileges`` with no object)."""
    type_name = _TYPE_NAMES.get(kind)

    def who(table: Table) -> Any:
        return sa.and_(table.c.PRINCIPAL_NAME == name, table.c.PRINCIPAL_TYPE == type_name)

    return [
        *_global(conn, who(s.GLOBAL_PRIVS)),
        *_on_db(conn, who(s.DB_PRIVS)),
        *_on_table(conn, s.TBL_PRIVS, "TBL_PRIV", who(s.TBL_PRIVS)),
        *_on_partition(conn, s.PART_PRIVS, "PART_PRIV", who(s.PART_PRIVS)),
        *_on_table(conn, s.TBL_COL_PRIVS, "TBL_COL_PRIV", who(s.TBL_COL_PRIVS)),
        *_on_partition(conn, s.PART_COL_PRIVS, "PART_COL_PRIV", who(s.PART_COL_PRIVS)),
    ]


def grants_on(conn: Connection, ref: Any) -> list[Any]:
    """Every principal's grants on one server, database or table ``HiveObjectRef``."""
    kind = ref.objectType
    if kind == H.GLOBAL:
        return _global(conn, sa.true())
    db = (ref.dbName or "").lower()
    dbs = s.layout_of(conn).dbs
    if kind == H.DATABASE:
        return _on_db(conn, dbs.c.NAME == db)
    if kind == H.TABLE:
        table = (ref.objectName or "").lower()
        where = sa.and_(dbs.c.NAME == db, s.TBLS.c.TBL_NAME == table)
        return _on_table(conn, s.TBL_PRIVS, "TBL_PRIV", where)
    return []


def functions(conn: Connection) -> list[Any]:
    """Every HMS ``Function`` with its resources, ordered by database and name."""
    layout = s.layout_of(conn)
    f, d, ru = s.FUNCS.c, layout.dbs.c, s.FUNC_RU.c
    rows = conn.execute(
        select(s.FUNCS, d.NAME)
        .select_from(s.FUNCS.join(layout.dbs, f.DB_ID == d.DB_ID))
        .order_by(d.NAME, f.FUNC_NAME)
    ).all()
    resources: dict[int, list[Any]] = defaultdict(list)
    for func_id, kind, uri in conn.execute(
        select(ru.FUNC_ID, ru.RESOURCE_TYPE, ru.RESOURCE_URI).order_by(ru.FUNC_ID, ru.INTEGER_IDX)
    ):
        resources[func_id].append(hms.ResourceUri(resourceType=kind, uri=uri))
    return [
        hms.Function(
            functionName=row.FUNC_NAME,
            dbName=row.NAME,
            className=row.CLASS_NAME,
            ownerName=row.OWNER_NAME,
            ownerType=principal_type(row.OWNER_TYPE),
            createTime=row.CREATE_TIME,
            functionType=row.FUNC_TYPE,
            resourceUris=resources.get(row.FUNC_ID, []),
            catName=_catalog(layout),
        )
        for row in rows
    ]
