"""Privilege reads served from the cached grants, against a real HMS 2.3: zero differences.

Topology (all real): an HMS of this module's own (Derby) holding support.hms_diff's
catalog and grants plus more below -- names differing only in case (users
``DiffUser``/``diffuser``, roles ``DiffRole``/``diffrole``), ``Select`` vs ``SELECT``,
grant option, GLOBAL, DATABASE, TABLE, COLUMN (``c1`` and ``C2``) and PARTITION
grants, a role granted to a role and to a group --; a ``catalogd serve`` process
loading from it with change detection off (so only the endpoint's privileges
reload shows a grant made through it); a subscriber here serving an HMS endpoint.

``list_privileges`` and ``get_privilege_set`` are called with a table of arguments
(known, unknown and case-shifted principals and objects), through one raw Thrift
client, on HMS and through the endpoint, twice (the first pass teaches the endpoint
HMS's row orders); both replies must be equal, byte for byte once decoded. The cases
the endpoint claims to serve must be served in the second pass. Then grants and roles
are written through the endpoint and read back at once and until served.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.catalogd_process import CatalogdProcess
from support.hms_diff import (
    DB,
    GRANT_GROUP,
    GRANT_ROLE,
    GRANT_USER,
    RawClient,
    decode_reply,
    differences,
    grant,
    populate,
)
from support.measurements import record_measurement

import idl
from catalogd.conversion import objects as convert
from catalogd.conversion.grants import HmsGrants, privilege_objects
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.server.thread import CatalogServer, ServerConfig
from subscriber.api import CatalogSubscriber
from subscriber.metastore import MetastoreEndpoint

pytestmark = [pytest.mark.hms, pytest.mark.timeout(240)]

hms = idl.hive_metastore
K, P = hms.HiveObjectType, hms.PrincipalType
R = hms.HiveObjectRef
INNER_ROLE, LOWER_ROLE, LOWER_USER = "inner22", GRANT_ROLE.lower(), GRANT_USER.lower()
SAME_BUCKET_GROUPS, OTHER_GROUP = ("Aa", "BB"), "ops22"
GROUPS = {GRANT_GROUP, OTHER_GROUP, *SAME_BUCKET_GROUPS}
SERVED_WITHIN_S = 20.0


def _grant(raw: Any, ref: Any, name: str, kind: int, privilege: str, option: bool = False) -> None:
    info = hms.PrivilegeGrantInfo(
        privilege=privilege, createTime=0, grantor="admin", grantorType=P.USER, grantOption=option
    )
    one = hms.HiveObjectPrivilege(
        hiveObject=ref, principalName=name, principalType=kind, grantInfo=info
    )
    raw.grant_privileges(hms.PrivilegeBag(privileges=[one]))


def grant_more(uri: str) -> None:
    """More grants over support.hms_diff's: GLOBAL, case-shifted names, a nested role."""
    with MetastoreClient(uri) as client:
        raw = client.raw
        _grant(raw, R(objectType=K.GLOBAL), GRANT_USER, P.USER, "Select")
        _grant(raw, R(objectType=K.GLOBAL), GRANT_USER, P.USER, "INSERT", option=True)
        _grant(raw, R(objectType=K.GLOBAL), GRANT_GROUP, P.GROUP, "SELECT")
        _grant(raw, R(objectType=K.COLUMN, dbName=DB, objectName="typed", columnName="C2"),
               GRANT_USER, P.USER, "SELECT")  # fmt: skip
        _grant(raw, R(objectType=K.DATABASE, dbName=DB.upper()), GRANT_GROUP, P.GROUP, "Select")
        _grant(raw, R(objectType=K.TABLE, dbName=DB, objectName="t22"), LOWER_USER, P.USER, "ALL")
        for role in (INNER_ROLE, LOWER_ROLE):
            raw.create_role(hms.Role(roleName=role, createTime=0, ownerName="admin"))
        raw.grant_role(INNER_ROLE, GRANT_ROLE, P.ROLE, "admin", P.USER, False)
        raw.grant_role(GRANT_ROLE, GRANT_GROUP, P.GROUP, "admin", P.USER, False)
        raw.grant_role(LOWER_ROLE, LOWER_USER, P.USER, "admin", P.USER, True)
        _grant(raw, R(objectType=K.DATABASE, dbName=DB), INNER_ROLE, P.ROLE, "CREATE")
        _grant(raw, R(objectType=K.TABLE, dbName=DB, objectName="typed"), LOWER_ROLE, P.ROLE,
               "SELECT")  # fmt: skip
        _grant(raw, R(objectType=K.DATABASE, dbName=DB), "public", P.ROLE, "SELECT")
        # Groups whose names share a String.hashCode (one HashMap bucket), and a third.
        for group in SAME_BUCKET_GROUPS:
            _grant(raw, R(objectType=K.GLOBAL), group, P.GROUP, "SELECT")
        _grant(raw, R(objectType=K.TABLE, dbName=DB, objectName="t22"), OTHER_GROUP, P.GROUP, "ALL")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, hms_cache_dir: Path) -> Iterator[dict]:
    root = tmp_path_factory.mktemp("endpoint-grants")
    with EmbeddedMetastore(root / "hms", cache_dir=hms_cache_dir) as metastore:
        populate(metastore.uri, f"file:{root / 'wh'}")
        grant(metastore.uri)
        grant_more(metastore.uri)
        catalogd = CatalogdProcess(
            metastore.uri, root / "catalogd", extra=["--change-detection", "off"]
        )
        try:
            catalogd.start()
            catalogd.wait_loaded()
            with CatalogSubscriber(catalogd.endpoint) as sub:
                sub.wait_synced(30)
                with sub.metastore_endpoint(upstream=metastore.uri, max_lag_s=60) as endpoint:
                    _wait_dialect(endpoint)
                    yield {"hms": metastore, "endpoint": endpoint}
        finally:
            catalogd.stop()


def _wait_dialect(endpoint: MetastoreEndpoint, timeout: float = 30.0) -> None:
    """Until the endpoint knows its upstream is HMS 2.x (privileges are served only then)."""
    deadline = time.monotonic() + timeout
    while endpoint._answers.upstream_reads_catalogs is None:
        assert time.monotonic() < deadline, "the HMS dialect probe was not answered"
        time.sleep(0.05)
    assert endpoint._answers.upstream_reads_catalogs is False


REFS = [
    R(),  # every grant of the principal
    R(objectType=K.GLOBAL),
    R(objectType=K.GLOBAL, dbName=DB, objectName="typed"),  # names ignored
    R(objectType=K.DATABASE, dbName=DB),
    R(objectType=K.DATABASE, dbName=DB.upper()),
    R(objectType=K.DATABASE),  # every database grant
    R(objectType=K.DATABASE, dbName="nosuchdb"),
    R(objectType=K.TABLE, dbName=DB, objectName="typed"),
    R(objectType=K.TABLE, dbName=DB.upper(), objectName="TYPED"),
    R(objectType=K.TABLE, dbName=DB, objectName="t22"),
    R(objectType=K.TABLE, dbName=DB, objectName="nosuch"),
    R(objectType=K.TABLE, objectName="typed"),  # no database: every table grant
    R(objectType=K.TABLE, dbName=DB),  # HMS fails
    R(objectType=K.TABLE, dbName=DB, objectName="typed", partValues=[], columnName="x"),
    R(objectType=K.COLUMN, dbName=DB, objectName="typed", columnName="c1"),
    R(objectType=K.COLUMN, dbName="Diff22", objectName="Typed", columnName="C1"),
    R(objectType=K.COLUMN, dbName=DB, objectName="typed", columnName="C2"),
    R(objectType=K.COLUMN, dbName=DB, objectName="typed", columnName="c2"),
    R(objectType=K.COLUMN, dbName=DB, objectName="typed", columnName="c1", partValues=[]),
    R(objectType=K.COLUMN, dbName=DB, objectName="typed"),  # HMS fails
    R(objectType=K.PARTITION, dbName=DB, objectName="strs", partValues=["x", "2"]),
]
PRINCIPALS = [
    (GRANT_USER, P.USER),
    (LOWER_USER, P.USER),
    (GRANT_USER.upper(), P.USER),
    (GRANT_ROLE, P.ROLE),
    (LOWER_ROLE, P.ROLE),
    (GRANT_ROLE.upper(), P.ROLE),  # no such role
    (INNER_ROLE, P.ROLE),
    ("public", P.ROLE),
    (GRANT_GROUP, P.GROUP),
    ("nobody", P.USER),
    (GRANT_USER, P.GROUP),  # a user's name as a group
    (None, None),  # every principal's grants on the object
]
USERS_AND_GROUPS = [
    (GRANT_USER, [GRANT_GROUP]),
    (GRANT_USER, None),
    (GRANT_USER, []),
    (LOWER_USER, None),
    (None, [GRANT_GROUP]),
    (GRANT_USER, [GRANT_GROUP, GRANT_GROUP]),
    (GRANT_USER, [GRANT_GROUP, "zz"]),  # a group catalogd never asked about
    ("nobody", []),
    (None, None),
    (GRANT_USER, ["BB", "Aa", GRANT_GROUP, OTHER_GROUP]),
    (None, ["Aa", "BB", OTHER_GROUP]),
]


def cases() -> Iterator[tuple[str, dict[str, Any]]]:
    for ref in REFS:
        for name, kind in PRINCIPALS:
            yield (
                "list_privileges",
                {"principal_name": name, "principal_type": kind, "hiveObject": ref},
            )
        for user, groups in USERS_AND_GROUPS:
            yield "get_privilege_set", {"hiveObject": ref, "user_name": user, "group_names": groups}


def claimed_served(method: str, args: dict[str, Any]) -> bool:
    """The cases the endpoint must serve once HMS's row orders are learnt: principals
    catalogd asked HMS about, objects named as HMS needs them, no partitions."""
    ref = args["hiveObject"]
    kind = ref.objectType
    if kind == K.PARTITION or (kind == K.COLUMN and ref.partValues):
        return False
    listing = method == "list_privileges"
    needed = {
        None: (),
        K.GLOBAL: (),
        K.DATABASE: () if listing else (ref.dbName,),
        K.TABLE: () if listing and ref.dbName is None else (ref.dbName, ref.objectName),
        K.COLUMN: (ref.dbName, ref.objectName, ref.columnName),
    }[kind]
    if any(n is None for n in needed):
        return False  # HMS fails
    users, roles = {GRANT_USER, LOWER_USER}, {GRANT_ROLE, LOWER_ROLE, INNER_ROLE, "public"}
    if listing:
        name, principal = args["principal_name"], args["principal_type"]
        return (
            (principal == P.USER and name in users)
            or (principal == P.ROLE and name in roles)
            or (principal == P.GROUP and name in GROUPS)
        )
    if kind is None:
        return True  # HMS answers nothing
    user, groups = args["user_name"], args["group_names"] or []
    return (user is None or user in users) and set(groups) <= GROUPS


def _served(endpoint: MetastoreEndpoint, method: str) -> int:
    return endpoint.stats.by_method().get(method, {}).get("served", 0)


def test_privilege_reads_answer_as_hms_does(world: dict) -> None:
    metastore: EmbeddedMetastore = world["hms"]
    endpoint: MetastoreEndpoint = world["endpoint"]
    direct, via = RawClient(metastore.uri), RawClient(endpoint.uri)
    failures: list[str] = []
    not_served: list[str] = []
    count = served = 0
    try:
        for label in ("first", "again"):
            for method, args in cases():
                count += 1
                before = _served(endpoint, method)
                expected_raw, got_raw = direct.call(method, **args), via.call(method, **args)
                expected, got = decode_reply(expected_raw), decode_reply(got_raw)
                was_served = _served(endpoint, method) > before
                served += was_served
                if expected != got:
                    shown = differences(expected[2], got[2])[:5]
                    failures.append(f"{label}: {method}({args}):\n    " + "\n    ".join(shown))
                elif expected_raw != got_raw:  # the same but for map order: bytes differ
                    failures.append(f"{label}: {method}({args}): map order differs")
                if label == "again" and claimed_served(method, args) and not was_served:
                    not_served.append(f"{method}({args})")
    finally:
        direct.close()
        via.close()
    record_measurement("HMS endpoint privilege cases (two passes)", count, "")
    record_measurement("  of which served from the cache", served, "")
    print(f"\n{count} cases, {served} served, {len(failures)} differences")
    print("reasons:", endpoint.stats.reasons())
    assert not failures, f"{len(failures)} of {count} differ:\n" + "\n".join(failures[:30])
    assert not not_served, f"{len(not_served)} claimed but forwarded:\n" + "\n".join(
        not_served[:30]
    )


def _until_served(
    endpoint: MetastoreEndpoint, client: RawClient, method: str, args: dict[str, Any]
) -> list[Any]:
    """Every answer from right after a write until the endpoint serves the read."""
    answers = []
    deadline = time.monotonic() + SERVED_WITHIN_S
    while True:
        before = _served(endpoint, method)
        answers.append(decode_reply(client.call(method, **args)))
        if _served(endpoint, method) > before:
            return answers
        assert time.monotonic() < deadline, f"{method} not served within {SERVED_WITHIN_S}s"
        time.sleep(0.05)


def test_grants_and_roles_written_through_the_endpoint_read_back(world: dict) -> None:
    metastore: EmbeddedMetastore = world["hms"]
    endpoint: MetastoreEndpoint = world["endpoint"]
    via, direct = RawClient(endpoint.uri), RawClient(metastore.uri)
    t22 = R(objectType=K.TABLE, dbName=DB, objectName="t22")
    new = hms.HiveObjectPrivilege(
        hiveObject=t22,
        principalName=GRANT_USER,
        principalType=P.USER,
        grantInfo=hms.PrivilegeGrantInfo(
            privilege="Alter", createTime=0, grantor="admin", grantorType=P.USER, grantOption=False
        ),
    )
    listing = {"principal_name": GRANT_USER, "principal_type": P.USER, "hiveObject": t22}
    as_set = {"hiveObject": t22, "user_name": GRANT_USER, "group_names": [GRANT_GROUP]}
    roles = {"principal_name": GRANT_USER, "principal_type": P.USER, "hiveObject": R()}

    def check(steps: list[tuple[str, dict[str, Any]]], shows: Any) -> None:
        for method, args in steps:
            answers = _until_served(endpoint, via, method, args)
            for answer in answers:
                assert answer == decode_reply(direct.call(method, **args))
                assert shows(method, answer), f"{method} does not show the write: {answer}"

    try:
        marked = endpoint.stats.snapshot()
        # A grant: read back at once (forwarded while pending), then served.
        via.call("grant_privileges", privileges=hms.PrivilegeBag(privileges=[new]))
        check(
            [
                ("list_privileges", listing),
                ("get_privilege_set", as_set),
                ("list_privileges", roles),
            ],
            lambda method, answer: "Alter" in str(answer),
        )
        # Its revoke, read back the same way.
        via.call("revoke_privileges", privileges=hms.PrivilegeBag(privileges=[new]))
        check(
            [
                ("list_privileges", listing),
                ("get_privilege_set", as_set),
                ("list_privileges", roles),
            ],
            lambda method, answer: "Alter" not in str(answer),
        )
        # A new role granted to the user: its role map shows it.
        via.call("create_role", role=hms.Role(roleName="late22", createTime=0, ownerName="admin"))
        via.call(
            "grant_role",
            role_name="late22",
            principal_name=GRANT_USER,
            principal_type=P.USER,
            grantor="admin",
            grantorType=P.USER,
            grant_option=False,
        )
        check([("get_privilege_set", as_set)], lambda method, answer: "late22" in str(answer))
        via.call("revoke_role", role_name="late22", principal_name=GRANT_USER,
                 principal_type=P.USER)  # fmt: skip
        via.call("drop_role", role_name="late22")
        check([("get_privilege_set", as_set)], lambda method, answer: "late22" not in str(answer))
        assert endpoint.stats.snapshot() != marked
        pending = endpoint.stats.reasons().get("pending", {})
        assert pending.get("list_privileges") and pending.get("get_privilege_set"), pending
    finally:
        via.close()
        direct.close()
        with MetastoreClient(metastore.uri) as client:
            with contextlib.suppress(Exception):
                client.raw.revoke_privileges(hms.PrivilegeBag(privileges=[new]))
            with contextlib.suppress(Exception):
                client.raw.drop_role("late22")


# Hive's SQL-standard authorization set-up: HMS refuses the authorization API to remote
# clients (measured: MetaException "Metastore Authorization api invocation for remote
# metastore is disabled in this configuration. ...").
EMBED_ONLY = {
    "hive.metastore.pre.event.listeners": (
        "org.apache.hadoop.hive.ql.security.authorization.AuthorizationPreEventListener"
    ),
    "hive.security.metastore.authorization.manager": (
        "org.apache.hadoop.hive.ql.security.authorization.MetaStoreAuthzAPIAuthorizerEmbedOnly"
    ),
}


def test_an_hms_refusing_privilege_calls_is_never_answered_from_the_cache(
    tmp_path: Path, hms_cache_dir: Path
) -> None:
    """Grants read around HMS (as ``--hms-db`` reads them from its database) are
    cached; the endpoint still forwards every privilege call, and HMS refuses each."""
    user_grant = hms.HiveObjectPrivilege(
        hiveObject=R(objectType=K.GLOBAL),
        principalName="u",
        principalType=P.USER,
        grantInfo=hms.PrivilegeGrantInfo(
            privilege="SELECT", createTime=1, grantor="admin", grantorType=P.USER, grantOption=False
        ),
    )
    grants = HmsGrants(("public",), (), (user_grant,), (("u", "USER"), ("public", "ROLE")))
    server = CatalogServer(
        ServerConfig(
            bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*", heartbeat_interval_s=0.1
        )
    )
    server.commit(convert.encode_all(privilege_objects(grants))).result()
    server.start()
    calls = [
        ("list_privileges", {"principal_name": "u", "principal_type": P.USER, "hiveObject": R()}),
        ("get_privilege_set", {"hiveObject": R(objectType=K.GLOBAL), "user_name": "u"}),
        ("get_privilege_set", {"hiveObject": R(objectType=K.GLOBAL)}),
    ]
    try:
        with (
            EmbeddedMetastore(
                tmp_path, cache_dir=hms_cache_dir, extra_conf=EMBED_ONLY
            ) as metastore,
            CatalogSubscriber(server.endpoint) as sub,
        ):
            sub.wait_synced(30)
            with sub.metastore_endpoint(upstream=metastore.uri, max_lag_s=60) as endpoint:
                _wait_dialect(endpoint)
                direct, via = RawClient(metastore.uri), RawClient(endpoint.uri)
                try:
                    for method, args in calls * 2:
                        expected = direct.call(method, **args)
                        assert b"remote metastore is disabled" in expected
                        assert via.call(method, **args) == expected
                finally:
                    direct.close()
                    via.close()
                assert not _served(endpoint, "list_privileges")
                assert not _served(endpoint, "get_privilege_set")
    finally:
        server.close()
