"""Privileges loaded from a real Hive Metastore, and checked with subscriber semantics.

The warehouse test reads the roles and grants made by the ``warehouse`` fixture
(plus Spark's automatic owner grants). The others make their own role, database
and grants over Thrift, change them with ``grant_privileges``/``revoke_privileges``
and ``revoke_role``, and reload through a real :class:`Catalog`.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import idl
from catalogd.conversion import objects as convert
from catalogd.conversion.grants import load_privileges, owners_of
from catalogd.core import plans
from catalogd.core.catalog import Catalog
from catalogd.hms.builders import thrift_table
from catalogd.hms.client import MetastoreClient
from subscriber.privileges import PrivilegeIndex, check_privilege, principals, privileges_of
from subscriber.protocol import codec

pytestmark = pytest.mark.timeout(180)

h = idl.hive_metastore
USER, ROLE, GROUP = h.PrincipalType.USER, h.PrincipalType.ROLE, h.PrincipalType.GROUP


def index_of(objects: dict[str, Any]) -> PrivilegeIndex:
    return PrivilegeIndex.from_objects(
        codec.decode_object(codec.encode_object(o)) for o in objects.values()
    )


def hms_objects(client: MetastoreClient) -> list[Any]:
    """DATABASE and TABLE objects of everything in HMS (for their owners)."""
    objects = []
    for db in client.get_all_databases():
        objects.append(convert.database_object(client.get_database(db)))
        for table in client.get_table_objects_by_name(db, client.get_all_tables(db)):
            objects.append(convert.table_object(table)[1])
    return objects


def test_warehouse_roles_grants_and_spark_owner_grants(
    warehouse: Any, hms_client: MetastoreClient
) -> None:
    owners = owners_of(hms_objects(hms_client))
    assert (warehouse.owner, "USER") in owners
    objects = load_privileges(hms_client, principals=owners)
    index = index_of(objects)

    roles = {p.name: p for p in principals(index, "ROLE")}
    assert {"analyst", "etl", "admin", "public"} <= set(roles)
    assert roles["analyst"].grant_groups == ("analysts",)
    users = {p.name: p for p in principals(index, "USER")}
    assert users["alice"].roles == ("analyst",)
    assert users["bob"].roles == ("etl",)
    assert [(g.scope, g.db, g.table, g.level) for g in privileges_of(index, "analyst")] == [
        ("DATABASE", "sales", None, "SELECT"),
        ("TABLE", "sales", "orders", "SELECT"),
    ]
    (etl,) = privileges_of(index, "etl", "ROLE")
    assert (etl.scope, etl.db, etl.level, etl.grant_option) == (
        "DATABASE",
        "analytics",
        "ALL",
        False,
    )
    (bob,) = privileges_of(index, "bob", "USER")
    assert (bob.table, bob.level, bob.grant_option) == ("daily_revenue", "INSERT", True)
    # Spark grants the creator INSERT, SELECT, UPDATE, DELETE on each table; the
    # last two have no Impala level and are dropped.
    # (Other tests create tables in their own databases on the same HMS.)
    ours = {d.name for d in warehouse.databases}
    owner_grants = [g for g in privileges_of(index, warehouse.owner, "USER") if g.db in ours]
    tables = {(t.db, t.name) for t in warehouse.tables}
    assert {(g.db, g.table) for g in owner_grants} == tables
    assert {(g.level, g.grant_option) for g in owner_grants} == {("INSERT", True), ("SELECT", True)}

    cases = [
        ("alice", [], "SELECT", "sales", "customers", True),
        ("zoe", ["analysts"], "SELECT", "sales", "orders", True),
        ("zoe", ["analysts"], "INSERT", "sales", "orders", False),
        ("bob", [], "DROP", "analytics", "daily_revenue", True),
        ("bob", [], "SELECT", "sales", "orders", False),
        (warehouse.owner, [], "INSERT", "sales", "orders", True),
        (warehouse.owner, [], "DROP", "sales", "orders", False),
        ("mallory", [], "SELECT", "sales", "orders", False),
    ]
    for user, groups, level, db, table, expected in cases:
        assert check_privilege(index, user, groups, level, db, table) is expected, (user, level)

    # Unchanged HMS, unchanged bytes: a reload costs no version.
    again = load_privileges(hms_client, principals=owners)
    assert {k: codec.encode_object(o) for k, o in again.items()} == {
        k: codec.encode_object(o) for k, o in objects.items()
    }


@dataclass(frozen=True)
class Scratch:
    db: str
    role: str
    group: str
    user: str
    loner: str  # holds no role: found only when named


@pytest.fixture
def scratch(hms_client: MetastoreClient, tmp_path: Any) -> Iterator[Scratch]:
    tag = secrets.token_hex(3)
    s = Scratch(f"privs_{tag}", f"readers_{tag}", f"grp_{tag}", f"usr_{tag}", f"solo_{tag}")
    hms_client.call(
        "create_database",
        h.Database(
            name=s.db,
            description="",
            locationUri=f"file:{tmp_path}/{s.db}.db",
            parameters={},
            ownerName="admin",
            ownerType=USER,
        ),
    )
    hms_client.call(
        "create_table",
        thrift_table(
            s.db,
            "Facts",
            f"file:{tmp_path}/facts",
            columns=[("id", "bigint"), ("Secret", "string")],
        ),
    )
    hms_client.call("create_role", h.Role(roleName=s.role, ownerName="admin"))
    for name, kind in ((s.group, GROUP), (s.user, USER)):
        hms_client.call("grant_role", s.role, name, kind, "admin", USER, False)
    try:
        yield s
    finally:
        hms_client.call("drop_role", s.role)
        hms_client.call("drop_database", s.db, True, True)


def privilege(
    s: Scratch,
    name: str,
    kind: int,
    level: str,
    obj: int,
    table: str | None = None,
    column: str | None = None,
) -> Any:
    return h.HiveObjectPrivilege(
        hiveObject=h.HiveObjectRef(
            objectType=obj, dbName=s.db, objectName=table, partValues=None, columnName=column
        ),
        principalName=name,
        principalType=kind,
        grantInfo=h.PrivilegeGrantInfo(
            privilege=level, createTime=0, grantor="admin", grantorType=USER, grantOption=False
        ),
    )


def reload(catalog: Catalog, client: MetastoreClient, named: list[tuple[str, str]]) -> set[str]:
    """Replace the catalog's principals and privileges with HMS's; return changed keys."""
    fresh = convert.encode_all(load_privileges(client, principals=named))
    old = catalog.keys_with_prefix("PRINCIPAL:") + catalog.keys_with_prefix("PRIVILEGE:")
    return {e.key for e in catalog.commit(plans.replace_group(catalog, old, fresh)).entries}


def test_grants_and_revokes_show_up_on_reload(
    hms_client: MetastoreClient, scratch: Scratch
) -> None:
    s = scratch
    named = [(s.loner, "USER")]
    catalog = Catalog()
    reload(catalog, hms_client, named)

    def index() -> PrivilegeIndex:
        return PrivilegeIndex.from_objects(
            codec.decode_object(e.payload) for e in catalog.live_entries() if e.payload
        )

    assert not check_privilege(index(), "x", [s.group], "SELECT", s.db, "facts")
    version = catalog.version
    assert reload(catalog, hms_client, named) == set()  # unchanged: no version spent
    assert catalog.version == version

    db_grant = privilege(s, s.role, ROLE, "SELECT", h.HiveObjectType.DATABASE)
    column_grant = privilege(s, s.loner, USER, "SELECT", h.HiveObjectType.COLUMN, "Facts", "Secret")
    hms_client.call("grant_privileges", h.PrivilegeBag(privileges=[db_grant, column_grant]))
    changed = reload(catalog, hms_client, named)
    assert changed == {
        f"PRIVILEGE:server=server1->db={s.db}->action=select->grantoption=false."
        f"{index().principal(s.role, 'ROLE').id}.ROLE",  # type: ignore[union-attr]
        f"PRIVILEGE:server=server1->db={s.db}->table=facts->column=secret->action=select"
        f"->grantoption=false.{index().principal(s.loner, 'USER').id}.USER",  # type: ignore[union-attr]
        f"PRINCIPAL:{s.loner}.USER",  # the loner holds a grant now
        # The role carries its grants as HMS answered them (TPrincipal field 102).
        f"PRINCIPAL:{s.role.lower()}.ROLE",
    }
    now = index()
    assert check_privilege(now, "x", [s.group], "SELECT", s.db, "facts")
    assert check_privilege(now, s.user, [], "SELECT", s.db, "facts", "id")
    assert not check_privilege(now, s.user, [], "INSERT", s.db, "facts")
    assert check_privilege(now, s.loner, [], "SELECT", s.db, "facts", "secret")
    assert not check_privilege(now, s.loner, [], "SELECT", s.db, "facts", "id")

    hms_client.call("revoke_privileges", h.PrivilegeBag(privileges=[db_grant]))
    hms_client.call("revoke_role", s.role, s.user, USER)
    changed = reload(catalog, hms_client, named)
    assert f"PRINCIPAL:{s.user}.USER" in changed  # gone: it holds no role or grant now
    assert len([k for k in changed if k.startswith("PRIVILEGE:")]) == 1
    later = index()
    assert later.principal(s.user, "USER") is None
    assert not check_privilege(later, "x", [s.group], "SELECT", s.db, "facts")
    assert not check_privilege(later, s.user, [], "SELECT", s.db, "facts")
    assert check_privilege(later, s.loner, [], "SELECT", s.db, "facts", "secret")
    role = later.principal(s.role, "ROLE")
    assert role is not None and role.grant_groups == (s.group,)
