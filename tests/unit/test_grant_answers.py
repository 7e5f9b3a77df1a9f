"""The privilege handlers (subscriber/metastore/grant_answers.py) over a cache view.

The grants go through catalogd's conversion (``privilege_objects``) and the wire
codec, as a subscriber receives them; answers are decoded with the method's result
struct. What HMS 2.3 answers was measured (tests/integration/test_hms_endpoint_grants.py
compares with a real HMS); here the rules are pinned without one.
"""

from __future__ import annotations

from typing import Any

import pytest

import idl
from catalogd.conversion import objects as convert
from catalogd.conversion.grants import HmsGrants, privilege_objects
from subscriber.cache import build_view
from subscriber.metastore import framing, grant_answers
from subscriber.metastore.answers import CacheAnswers, Forward
from subscriber.metastore.grant_answers import java_order
from subscriber.protocol import codec
from subscriber.protocol.delta import Entry
from subscriber.reads import ObjectDecoder

pytestmark = pytest.mark.timeout(30)

hms = idl.hive_metastore
svc = hms.ThriftHiveMetastore
USER, ROLE, GROUP = hms.PrincipalType.USER, hms.PrincipalType.ROLE, hms.PrincipalType.GROUP
K = hms.HiveObjectType
R = hms.HiveObjectRef


def grant(name: str, kind: int, privilege: str, ref: Any, grantor: str = "admin") -> Any:
    info = hms.PrivilegeGrantInfo(
        privilege=privilege, createTime=5, grantor=grantor, grantorType=USER, grantOption=False
    )
    return hms.HiveObjectPrivilege(
        hiveObject=ref, principalName=name, principalType=kind, grantInfo=info
    )


def member(role: str, name: str, kind: int) -> Any:
    return hms.RolePrincipalGrant(
        roleName=role,
        principalName=name,
        principalType=kind,
        grantOption=False,
        grantTime=1,
        grantorName="admin",
        grantorPrincipalType=USER,
    )


DB_REF = R(objectType=K.DATABASE, dbName="sales")
TABLE_REF = R(objectType=K.TABLE, dbName="sales", objectName="orders")
GRANTS = HmsGrants(
    roles=("Analyst", "analyst", "inner", "public", "admin"),
    memberships=(
        member("Analyst", "Ann", USER),
        member("inner", "Analyst", ROLE),
        member("Analyst", "ops", GROUP),
    ),
    privileges=(
        grant("Ann", USER, "Select", R(objectType=K.GLOBAL)),
        grant("Ann", USER, "SELECT", TABLE_REF),
        grant("Ann", USER, "UPDATE", TABLE_REF),
        grant(
            "Ann",
            USER,
            "INSERT",
            R(objectType=K.PARTITION, dbName="sales", objectName="orders", partValues=["1"]),
        ),  # fmt: skip
        grant("Analyst", ROLE, "select", DB_REF),
        grant("analyst", ROLE, "ALL", DB_REF),
        grant("inner", ROLE, "CREATE", DB_REF),
        grant("ops", GROUP, "INSERT", TABLE_REF),
    ),
    probed=(
        ("Analyst", "ROLE"),
        ("analyst", "ROLE"),
        ("inner", "ROLE"),
        ("public", "ROLE"),
        ("admin", "ROLE"),
        ("Ann", "USER"),
        ("ops", "GROUP"),
    ),
)


class Answers:
    """The privilege handlers over a view of ``grants``, as CacheAnswers runs them."""

    def __init__(self, grants: HmsGrants = GRANTS, reads_catalogs: bool | None = False) -> None:
        lookups = CacheAnswers(ObjectDecoder())
        lookups.upstream_reads_catalogs = reads_catalogs
        self.group = grant_answers.GrantAnswers(lookups)
        self.group.upstream_answers = True  # HMS answered one (see the test below)
        objects = convert.encode_all(privilege_objects(grants))
        self.view = build_view("svc", 4, [Entry(k, 4, p) for k, p in objects.items()])

    def answer(self, method: str, args: Any) -> bytes:
        return self.group.handlers()[method](self.view, args)


def ask(method: str, grants: HmsGrants = GRANTS, **args: Any) -> Any:
    raw = Answers(grants).answer(method, getattr(svc, f"{method}_args")(**args))
    return codec.decode(getattr(svc, f"{method}_result"), raw)


def listed(name: str, kind: int, ref: Any) -> list[Any]:
    result = ask("list_privileges", principal_name=name, principal_type=kind, hiveObject=ref)
    return list(result.success)


def test_java_order_is_hashmap_iteration_order() -> None:
    # HMS 2.3.10 (Java 17) sent this role map in this order (bytes compared in
    # tests/integration/test_hms_endpoint_grants.py); buckets 4, 7 and 11 of 16.
    assert java_order(["DiffRole", "inner22", "public"]) == ["public", "inner22", "DiffRole"]
    assert java_order(["diffgrp", "zz"]) == ["zz", "diffgrp"]  # "zz": hash 3904, bucket 0
    # "Aa" and "BB" share String.hashCode: one bucket, insertion order.
    assert java_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert java_order(["a", "b", "c"]) == ["a", "b", "c"]
    # 14 keys resize the table to 32 buckets, where "a" (97) and "q" (113) part.
    keys = [chr(c) for c in range(ord("q"), ord("a") - 1, -1) if chr(c) not in "bcd"]
    assert java_order(keys) == sorted(keys)


def test_one_grant_is_served_with_its_object_as_asked() -> None:
    (row,) = listed("ops", GROUP, R(objectType=K.TABLE, dbName="SALES", objectName="Orders"))
    assert row.hiveObject == R(objectType=K.TABLE, dbName="SALES", objectName="Orders")
    assert row.grantInfo.privilege == "INSERT"
    assert listed("Ann", USER, R(objectType=K.GLOBAL))[0].grantInfo.privilege == "Select"
    # Role names are case-sensitive: "Analyst" and "analyst" are one principal here.
    (own,) = listed("Analyst", ROLE, R(objectType=K.DATABASE, dbName="sales"))
    assert own.principalName == "Analyst" and own.grantInfo.privilege == "select"
    (lower,) = listed("analyst", ROLE, R(objectType=K.DATABASE))
    assert lower.grantInfo.privilege == "ALL" and lower.hiveObject == DB_REF
    assert listed("inner", ROLE, R(objectType=K.TABLE, dbName="sales", objectName="x")) == []


def test_several_grants_are_served_in_the_order_learnt_from_hms() -> None:
    found = Answers()
    args = svc.list_privileges_args(principal_name="Ann", principal_type=USER, hiveObject=R())
    with pytest.raises(Forward) as forwarded:
        found.answer("list_privileges", args)
    assert forwarded.value.learn is not None
    # HMS's answer, in its database's order.
    rows = [p for p in GRANTS.privileges if p.principalName == "Ann"][::-1]
    body = codec.encode(svc.list_privileges_result(success=rows))
    forwarded.value.learn("list_privileges", framing.reply("list_privileges", 1, body))
    raw = found.answer("list_privileges", args)
    assert codec.decode(svc.list_privileges_result, raw).success == rows


@pytest.mark.parametrize(
    ("name", "kind", "ref"),
    [
        ("ANALYST", ROLE, R(objectType=K.GLOBAL)),  # never asked about by that name
        ("nobody", USER, R(objectType=K.GLOBAL)),
        ("Ann", GROUP, R(objectType=K.GLOBAL)),
        (None, None, DB_REF),  # everyone's grants on an object
        ("Ann", USER, None),  # HMS fails
        ("Ann", USER, R(objectType=K.TABLE, dbName="sales")),  # HMS fails
        ("Ann", USER, R(objectType=K.PARTITION, dbName="sales", objectName="orders")),
        ("Ann", USER, R(objectType=K.COLUMN, dbName="s", objectName="t", partValues=["1"])),
    ],
)
def test_what_is_forwarded(name: str | None, kind: int | None, ref: Any) -> None:
    with pytest.raises(Forward):
        ask("list_privileges", principal_name=name, principal_type=kind, hiveObject=ref)


def test_nothing_is_served_until_the_upstream_is_known_to_be_hms_2() -> None:
    args = svc.list_privileges_args(
        principal_name="inner", principal_type=ROLE, hiveObject=R(objectType=K.GLOBAL)
    )
    for known in (None, True):
        with pytest.raises(Forward):
            Answers(reads_catalogs=known).answer("list_privileges", args)


def test_nothing_is_served_until_hms_answered_one_privilege_call() -> None:
    """An HMS refusing them to remote callers (MetaStoreAuthzAPIAuthorizerEmbedOnly)
    keeps refusing: its refusal teaches nothing; an answer enables the cache."""
    found = Answers()
    found.group.upstream_answers = False
    args = svc.get_privilege_set_args(hiveObject=R(), user_name="Ann")
    refused = svc.get_privilege_set_result(o1=hms.MetaException(message="not allowed"))
    answered = svc.get_privilege_set_result()
    for result, served in ((refused, False), (answered, True)):
        with pytest.raises(Forward) as forwarded:
            found.answer("get_privilege_set", args)
        assert forwarded.value.learn is not None
        reply = framing.reply("get_privilege_set", 1, codec.encode(result))
        forwarded.value.learn("get_privilege_set", reply)
        assert found.group.upstream_answers is served
    assert found.answer("get_privilege_set", args) == codec.encode(answered)


def test_grants_read_case_insensitively_are_not_kept() -> None:
    blind = HmsGrants(GRANTS.roles, GRANTS.memberships, GRANTS.privileges, GRANTS.probed, False)
    with pytest.raises(Forward, match="not in the cache"):
        listed_args = {"principal_name": "inner", "principal_type": ROLE}
        ask("list_privileges", blind, hiveObject=R(objectType=K.GLOBAL), **listed_args)


def test_privilege_set_on_global_has_only_holders() -> None:
    got = ask("get_privilege_set", hiveObject=R(objectType=K.GLOBAL), user_name="Ann",
              group_names=["ops"]).success  # fmt: skip
    assert list(got.userPrivileges) == ["Ann"]
    assert got.groupPrivileges == {} and got.rolePrivileges is None
    none = ask("get_privilege_set", hiveObject=R(objectType=K.GLOBAL), user_name=None,
               group_names=None).success  # fmt: skip
    assert none == hms.PrincipalPrivilegeSet()


def test_privilege_set_on_a_database_names_every_principal_and_role() -> None:
    found = Answers()
    args = svc.get_privilege_set_args(
        hiveObject=R(objectType=K.DATABASE, dbName="Sales"), user_name="Ann", group_names=["ops"]
    )
    # Two grants (of two roles): their order is learnt from HMS's answer first.
    with pytest.raises(Forward) as forwarded:
        found.answer("get_privilege_set", args)
    infos = {p.principalName: [p.grantInfo] for p in GRANTS.privileges if p.hiveObject == DB_REF}
    hms_set = hms.PrincipalPrivilegeSet(
        userPrivileges={"Ann": []},
        groupPrivileges={"ops": []},
        rolePrivileges={
            r: infos.get(r, []) for r in java_order(["Analyst", "public", "inner"]) or ()
        },
    )
    body = codec.encode(svc.get_privilege_set_result(success=hms_set))
    assert forwarded.value.learn is not None
    forwarded.value.learn("get_privilege_set", framing.reply("get_privilege_set", 1, body))
    raw = found.answer("get_privilege_set", args)
    assert raw == body  # byte for byte, map order included
    got = codec.decode(svc.get_privilege_set_result, raw).success
    assert got.userPrivileges == {"Ann": []}
    assert got.groupPrivileges == {"ops": []}
    # Ann's role, its parent role, and public; in HashMap order.
    assert list(got.rolePrivileges) == java_order(["Analyst", "public", "inner"])
    assert [i.privilege for i in got.rolePrivileges["Analyst"]] == ["select"]
    assert [i.privilege for i in got.rolePrivileges["inner"]] == ["CREATE"]
    assert got.rolePrivileges["public"] == []
    # Groups alone: no public.
    roles = found.group._all_roles
    assert roles(found.view, None, ["ops"]) == ["Analyst", "inner"]
    assert roles(found.view, "Ann", []) == ["Analyst", "inner", "public"]
    # No object type: HMS answers nothing at all.
    empty = ask("get_privilege_set", hiveObject=R(), user_name="Ann", group_names=None)
    assert empty.success is None


def test_privilege_set_forwards_roles_sharing_a_bucket() -> None:
    shared = HmsGrants(
        roles=("Aa", "BB", "public"),
        memberships=(member("Aa", "u", USER), member("BB", "u", USER)),
        privileges=(),
        probed=(("Aa", "ROLE"), ("BB", "ROLE"), ("public", "ROLE"), ("u", "USER")),
    )
    with pytest.raises(Forward, match="bucket"):
        ask("get_privilege_set", shared, hiveObject=DB_REF, user_name="u", group_names=None)


def test_the_handlers_are_registered() -> None:
    assert {"list_privileges", "get_privilege_set"} <= CacheAnswers(ObjectDecoder()).methods
    assert grant_answers.GrantAnswers(CacheAnswers(ObjectDecoder())).handlers()
