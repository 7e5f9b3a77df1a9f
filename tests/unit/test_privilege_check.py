"""check_privilege over a table of cases, and the HMS -> catalog object conversion.

The fixture is built the way catalogd builds it: HMS Thrift structs (as
``list_privileges`` and ``get_principals_in_role`` return them) go through
:func:`catalogd.conversion.grants.privilege_objects`, then through the wire codec, then
into a :class:`PrivilegeIndex`. The integration tier does the same against a real HMS.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import idl
from catalogd.conversion.grants import HmsGrants, owners_of, privilege_objects
from subscriber.privileges import (
    Principal,
    Privilege,
    PrivilegeIndex,
    check_privilege,
    parse_level,
    principals,
    privilege_name,
    privileges_of,
)
from subscriber.protocol import codec
from subscriber.protocol.errors import InvalidRequestError, NotFoundError

pytestmark = pytest.mark.timeout(30)

h = idl.hive_metastore
co = idl.catalog_objects
USER, ROLE, GROUP = h.PrincipalType.USER, h.PrincipalType.ROLE, h.PrincipalType.GROUP
OBJ = h.HiveObjectType


def member(role: str, name: str, kind: int) -> object:
    return h.RolePrincipalGrant(
        roleName=role,
        principalName=name,
        principalType=kind,
        grantOption=False,
        grantTime=1,
        grantorName="admin",
        grantorPrincipalType=USER,
    )


def grant(
    name: str,
    kind: int,
    level: str,
    obj: int,
    db: str | None = None,
    table: str | None = None,
    column: str | None = None,
    *,
    option: bool = False,
    parts: list[str] | None = None,
    created: int = 1_700_000_000,
) -> object:
    return h.HiveObjectPrivilege(
        hiveObject=h.HiveObjectRef(
            objectType=obj, dbName=db, objectName=table, partValues=parts, columnName=column
        ),
        principalName=name,
        principalType=kind,
        grantInfo=h.PrivilegeGrantInfo(
            privilege=level,
            createTime=created,
            grantor="admin",
            grantorType=USER,
            grantOption=option,
        ),
    )


GRANTS = HmsGrants(
    roles=("Analyst", "etl", "senior", "public", "admin"),
    memberships=(
        member("Analyst", "analysts", GROUP),
        member("Analyst", "alice", USER),
        member("senior", "Analyst", ROLE),  # analyst members also hold senior
        member("etl", "bob", USER),
    ),
    privileges=(
        grant("Analyst", ROLE, "SELECT", OBJ.DATABASE, "Sales"),
        grant("senior", ROLE, "INSERT", OBJ.TABLE, "sales", "orders"),
        grant("etl", ROLE, "ALL", OBJ.DATABASE, "analytics"),
        grant("admin", ROLE, "All", OBJ.GLOBAL, option=True),
        grant("public", ROLE, "select", OBJ.DATABASE, "pub"),
        grant("bob", USER, "INSERT", OBJ.TABLE, "analytics", "daily_revenue", option=True),
        grant("carol", USER, "SELECT", OBJ.COLUMN, "sales", "customers", "Email"),
        grant("ops", GROUP, "SELECT", OBJ.GLOBAL),
        grant("dave", USER, "OWNER", OBJ.TABLE, "sales", "orders"),
        # Dropped: no Impala equivalent, or narrower than any Impala scope.
        grant("erin", USER, "UPDATE", OBJ.TABLE, "sales", "orders"),
        grant("erin", USER, "DELETE", OBJ.TABLE, "sales", "orders"),
        grant("erin", USER, "SELECT", OBJ.PARTITION, "sales", "orders", parts=["2024"]),
        grant("erin", USER, "FOO", OBJ.DATABASE, "sales"),
    ),
    probed=(),
)


@pytest.fixture(scope="module")
def objects() -> dict[str, Any]:
    return privilege_objects(GRANTS)


@pytest.fixture(scope="module")
def index(objects: dict[str, Any]) -> PrivilegeIndex:
    # Through the wire codec, as a subscriber receives them.
    decoded = [codec.decode_object(codec.encode_object(o)) for o in objects.values()]
    return PrivilegeIndex.from_objects(decoded)


SEL, INS = "SELECT", "INSERT"

CASES = [
    # user, groups, level, db, table, column, expected, why
    ("alice", [], SEL, "sales", "orders", None, True, "user holds the role; db grant covers table"),
    ("alice", [], SEL, "sales", None, None, True, "db grant covers the db"),
    ("alice", [], SEL, "sales", "orders", "amount", True, "db grant covers columns"),
    ("alice", [], INS, "sales", "orders", None, True, "nested role senior"),
    ("alice", [], INS, "sales", "customers", None, False, "senior's grant is on orders only"),
    ("alice", [], SEL, "analytics", "daily_revenue", None, False, "no grant there"),
    ("alice", [], SEL, None, None, None, False, "db grant does not cover the server"),
    ("Alice", [], SEL, "sales", "orders", None, False, "user names are case-sensitive"),
    ("zed", ["analysts"], SEL, "sales", "orders", None, True, "role through a group"),
    ("zed", ["analysts"], INS, "sales", "orders", None, True, "group -> analyst -> senior"),
    ("zed", ["Analysts"], SEL, "sales", "orders", None, False, "group names are case-sensitive"),
    ("zed", [], SEL, "sales", "orders", None, False, "nothing held"),
    ("bob", [], "DROP", "analytics", "anything", None, True, "ALL covers DROP"),
    ("bob", [], "CREATE", "analytics", None, None, True, "ALL covers CREATE on the db"),
    ("bob", [], "OWNER", "analytics", "t", None, False, "ALL does not make an owner"),
    ("bob", [], SEL, None, None, None, False, "no server grant"),
    ("carol", [], SEL, "sales", "customers", "email", True, "column grant"),
    ("carol", [], SEL, "SALES", "Customers", "EMAIL", True, "object names compare lower-cased"),
    ("carol", [], SEL, "sales", "customers", "name", False, "another column"),
    ("carol", [], SEL, "sales", "customers", None, False, "column grant does not cover table"),
    ("dave", [], "DROP", "sales", "orders", None, True, "OWNER covers every level"),
    ("dave", [], "OWNER", "sales", "orders", "amount", True, "OWNER covers columns"),
    ("dave", [], SEL, "sales", "customers", None, False, "owner of another table"),
    ("olga", ["ops"], SEL, None, None, None, True, "group's server grant covers the server"),
    ("olga", ["ops"], SEL, "any", "thing", "at_all", True, "server grant covers everything"),
    ("olga", ["ops"], "CREATE", None, None, None, False, "SELECT does not imply CREATE"),
    ("olga", ["ops"], INS, "sales", "orders", None, False, "SELECT does not imply INSERT"),
    ("erin", [], INS, "sales", "orders", None, False, "UPDATE/DELETE are not INSERT"),
    ("erin", [], SEL, "sales", "orders", None, False, "partition grants are dropped"),
    ("erin", [], SEL, "sales", None, None, False, "unknown privilege strings are dropped"),
    ("anyone", [], SEL, "pub", "t", None, True, "public holds everyone"),
    ("anyone", [], SEL, "sales", "t", None, False, "public holds only pub"),
    ("root", [], SEL, "sales", None, None, False, "admin role has no members"),
]


@pytest.mark.parametrize(
    ("user", "groups", "level", "db", "table", "column", "expected", "why"),
    CASES,
    ids=[f"{c[0]}-{c[2]}-{c[3]}.{c[4]}.{c[5]}" for c in CASES],
)
def test_check_privilege(
    index: PrivilegeIndex,
    user: str,
    groups: list[str],
    level: str,
    db: str | None,
    table: str | None,
    column: str | None,
    expected: bool,
    why: str,
) -> None:
    assert check_privilege(index, user, groups, level, db, table, column) is expected, why


def test_grant_option_counts_only_grants_made_with_it(index: PrivilegeIndex) -> None:
    assert check_privilege(index, "bob", [], INS, "analytics", "daily_revenue", grant_option=True)
    assert not check_privilege(
        index, "bob", [], SEL, "analytics", "daily_revenue", grant_option=True
    )
    assert check_privilege(index, "bob", [], SEL, "analytics", "daily_revenue")


def test_levels_by_name_or_value(index: PrivilegeIndex) -> None:
    assert check_privilege(index, "alice", [], co.TPrivilegeLevel.SELECT, "sales", "orders")
    assert check_privilege(index, "alice", [], "select", "sales", "orders")
    assert parse_level(co.TPrivilegeLevel.OWNER) == "OWNER"
    for bad in ("FOO", "", True, 42, None):
        with pytest.raises(InvalidRequestError, match="unknown privilege level"):
            check_privilege(index, "alice", [], bad, "sales")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError):
        check_privilege(index, "alice", [], SEL, "sales", None, "amount")
    with pytest.raises(InvalidRequestError):
        check_privilege(index, "alice", [], SEL, None, "orders")
    with pytest.raises(InvalidRequestError, match="collection"):
        check_privilege(index, "zed", "analysts", SEL, "sales")


def test_principals_carry_groups_and_roles(index: PrivilegeIndex) -> None:
    listed = {(p.type, p.name): p for p in principals(index)}
    assert set(listed) == {
        ("ROLE", "analyst"),
        ("ROLE", "etl"),
        ("ROLE", "senior"),
        ("ROLE", "public"),
        ("ROLE", "admin"),
        ("USER", "alice"),
        ("USER", "bob"),
        ("USER", "carol"),
        ("USER", "dave"),
        ("GROUP", "ops"),
    }  # erin's grants were all dropped
    assert listed[("ROLE", "analyst")].grant_groups == ("analysts",)
    assert listed[("ROLE", "analyst")].roles == ("senior",)
    assert listed[("USER", "alice")].roles == ("analyst",)
    assert listed[("USER", "carol")].roles == ()
    assert [p.name for p in principals(index, "user")] == ["alice", "bob", "carol", "dave"]
    ids = [p.id for p in listed.values()]
    assert len(set(ids)) == len(ids) and all(0 < i < 2**31 for i in ids)


def test_privileges_of(index: PrivilegeIndex) -> None:
    (analyst,) = privileges_of(index, "ANALYST", "ROLE")
    assert (analyst.scope, analyst.level, analyst.db, analyst.table) == (
        "DATABASE",
        "SELECT",
        "sales",
        None,
    )
    bob = privileges_of(index, "bob", "USER")
    assert [(g.scope, g.level, g.table, g.grant_option) for g in bob] == [
        ("TABLE", "INSERT", "daily_revenue", True)
    ]
    (column,) = privileges_of(index, "carol", "USER")
    assert (column.scope, column.column) == ("COLUMN", "email")
    with pytest.raises(NotFoundError):
        privileges_of(index, "nobody", "USER")
    with pytest.raises(InvalidRequestError):
        privileges_of(index, "alice", "WIZARD")


def test_keys_and_names_follow_impala(objects: dict[str, Any]) -> None:
    role_keys = [k for k in objects if k.startswith("PRINCIPAL:") and k.endswith(".ROLE")]
    assert "PRINCIPAL:analyst.ROLE" in role_keys
    privilege_keys = [k for k in objects if k.startswith("PRIVILEGE:")]
    assert len(privilege_keys) == 9
    analyst = next(
        o.privilege
        for k, o in objects.items()
        if k.startswith("PRIVILEGE:server=server1->db=sales->action=select")
    )
    assert privilege_name(analyst) == "server=server1->db=sales->action=select->grantoption=false"
    admin = next(
        o.privilege
        for o in objects.values()
        if o.type == co.TCatalogObjectType.PRIVILEGE
        and o.privilege.scope == co.TPrivilegeScope.SERVER
        and o.privilege.has_grant_opt
    )
    assert privilege_name(admin) == "server=server1->grantoption=true"  # ALL has no action
    assert admin.create_time_ms == 1_700_000_000_000


def test_conversion_is_deterministic_and_order_free(objects: dict[str, Any]) -> None:
    shuffled = list(GRANTS.privileges)
    members = list(GRANTS.memberships)
    random.Random(7).shuffle(shuffled)
    random.Random(8).shuffle(members)
    again = privilege_objects(
        HmsGrants(tuple(reversed(GRANTS.roles)), tuple(members), tuple(shuffled), ())
    )
    assert list(again) == list(objects) == sorted(objects)
    assert [codec.encode_object(o) for o in again.values()] == [
        codec.encode_object(o) for o in objects.values()
    ]


def test_a_duplicate_grant_keeps_the_oldest() -> None:
    twice = HmsGrants(
        ("r",),
        (),
        (
            grant("r", ROLE, "ALL", OBJ.GLOBAL, created=20),
            grant("r", ROLE, "all", OBJ.GLOBAL, created=10),
        ),
        (),
    )
    (privilege,) = [
        o.privilege for o in privilege_objects(twice).values() if o.privilege is not None
    ]
    assert privilege.create_time_ms == 10_000


def test_index_accepts_values_and_unknown_principals() -> None:
    role = Principal("r", "ROLE", 5, ("g",))
    grants = [
        Privilege("ROLE", 5, "TABLE", "SELECT", False, "server1", "d", "t"),
        Privilege("ROLE", 99, "SERVER", "ALL", False, "server1"),
    ]  # no such principal
    index = PrivilegeIndex.build([role], grants)
    assert check_privilege(index, "u", ["g"], "SELECT", "d", "t", "c")
    assert not check_privilege(index, "u", ["g"], "SELECT", "d", "u")
    assert not check_privilege(index, "u", [], "SELECT", "d", "t")


def test_owners_of_databases_and_tables() -> None:
    db = co.TCatalogObject(
        type=co.TCatalogObjectType.DATABASE,
        catalog_version=1,
        db=co.TDatabase(
            db_name="d", metastore_db=h.Database(name="d", ownerName="public", ownerType=ROLE)
        ),
    )
    table = co.TCatalogObject(
        type=co.TCatalogObjectType.TABLE,
        catalog_version=2,
        table=co.TTable(db_name="d", tbl_name="t", metastore_table=h.Table(owner="Root")),
    )
    unloaded = co.TCatalogObject(
        type=co.TCatalogObjectType.TABLE,
        catalog_version=3,
        table=co.TTable(db_name="d", tbl_name="u"),
    )
    assert owners_of([db, table, unloaded]) == {("public", "ROLE"), ("Root", "USER")}


def test_principals_keep_the_hms_structs_order_free() -> None:
    """Fields 101-103: every grant as HMS answered it (UPDATE, partition and unknown
    strings too), the roles granted, the names asked; sorted, so shuffled answers
    give the same bytes (an unchanged reload costs no version)."""
    probed = (("dave", "USER"), ("Analyst", "ROLE"), ("analyst", "ROLE"), ("alice", "USER"))
    update = grant("dave", USER, "Update", OBJ.PARTITION, "sales", "orders", parts=["1"])
    grants = HmsGrants(GRANTS.roles, GRANTS.memberships, (*GRANTS.privileges, update), probed)
    objects = privilege_objects(grants)
    dave = objects["PRINCIPAL:dave.USER"].principal
    assert dave.metastore_names == ["dave"]
    assert sorted(p.grantInfo.privilege for p in dave.metastore_privileges) == ["OWNER", "Update"]
    analyst = objects["PRINCIPAL:analyst.ROLE"].principal
    assert analyst.metastore_names == ["Analyst", "analyst"]
    assert [p.grantInfo.privilege for p in analyst.metastore_privileges] == ["SELECT"]
    assert [m.roleName for m in analyst.metastore_roles] == ["senior"]
    alice = objects["PRINCIPAL:alice.USER"].principal
    assert [m.roleName for m in alice.metastore_roles] == ["Analyst"]
    shuffled = list(grants.privileges)
    random.Random(3).shuffle(shuffled)
    again = privilege_objects(
        HmsGrants(grants.roles, tuple(reversed(grants.memberships)), tuple(shuffled), probed)
    )
    assert [codec.encode_object(o) for o in again.values()] == [
        codec.encode_object(o) for o in objects.values()
    ]
    # Answers holding another principal's grants (a case-blind metastore database):
    # nothing kept, the endpoint forwards.
    blind = privilege_objects(
        HmsGrants(grants.roles, grants.memberships, grants.privileges, probed, exact=False)
    )
    assert blind["PRINCIPAL:dave.USER"].principal.metastore_privileges is None
