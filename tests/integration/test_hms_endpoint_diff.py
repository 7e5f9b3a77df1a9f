"""The HMS endpoint against a real HMS 2.3, call by call, byte-level: zero differences.

One catalog of odd names and values (:mod:`support.hms_diff`) is written into the
session HMS; an in-process catalogd loads it and a subscriber's endpoint serves it.
Every method the endpoint answers from its cache (and the privilege reads, which it
forwards: docs/HMS-ENDPOINT.md) is then called with a table of argument cases, through
the same raw Thrift client, directly on HMS and through the endpoint; both replies are
decoded generically (field ids, wire types, values; optional fields present or absent)
and must be equal. Whether the endpoint served a case or forwarded it is counted and
printed, not asserted case by case: an exact forward is a correct answer, and the
served count must stay high.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from support.hms_diff import (
    DB,
    GRANT_GROUP,
    GRANT_ROLE,
    GRANT_USER,
    OTHER_DB,
    RawClient,
    decode_reply,
    differences,
    endpoint_over,
    grant,
    loaded,
    populate,
    revoke,
)
from support.measurements import record_measurement
from thriftpy2.thrift import TException

import idl
from catalogd.conversion import objects as convert
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.metastore import MetastoreEndpoint

pytestmark = [pytest.mark.hms, pytest.mark.timeout(120)]

hms = idl.hive_metastore


@pytest.fixture(scope="module")
def served(
    hms: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MetastoreEndpoint]:
    populate(hms.uri, f"file:{tmp_path_factory.mktemp('diff-wh')}")
    grant(hms.uri)
    with MetastoreClient(hms.uri) as client:
        functions = convert.function_objects(client.get_all_functions())
    try:
        with endpoint_over({**loaded(hms.uri), **functions}, hms.uri) as (_, endpoint):
            yield endpoint
    finally:
        revoke(hms.uri)
        with MetastoreClient(hms.uri) as client:
            for db in (DB, OTHER_DB):
                for fn in client.raw.get_functions(db, "*"):
                    with contextlib.suppress(TException):
                        client.raw.drop_function(db, fn)
                # HMS 2.3 cannot drop a function stored as "Alpha" (it looks for
                # "alpha"), so DB stays behind in this session's HMS, emptied.
                with contextlib.suppress(TException):
                    client.raw.drop_database(db, False, True)


MAX_PARTS = (-5, -1, 0, 1, 3, 100)
TABLES = ("typed", "strs", "t22", "empty", "v1", "nosuch", "TYPED")

FILTERS = [
    "",
    'str = "a/b"',
    "str = 'x=y'",
    'str != "plain"',
    'str = "Ü"',
    'str = "__HIVE_DEFAULT_PARTITION__"',
    "i = 3",
    # Not "i > 2" and the like: HMS 2.3 on Derby answers ordering comparisons on an
    # int key by direct SQL, whose CAST of every table's value at that key position
    # fails now and then (plan-dependent); its JDO fallback then raises MetaException.
    "(i) in (3, 10)",
    "(i) not in (3, 10)",
    "s = 1",
    "i = 3 or s = 7",
    "(i = 3 and s = 1) or str = 'Plain'",
    'd = "2024-01-02"',
    'd > "2024-01-02"',
    'v = "b"',
    'v > "a"',
    'str like "pla.*"',
    'str like "%lain"',
    "nosuchcol = 1",
    "i = ",
    'i = "3"',
]
STRS_FILTERS = ['a = "x"', 'b = "1"', 'a = "x" and b = "10"', 'a > "a"', 'a = "é"', "a = '%'"]


def cases() -> Iterator[tuple[str, dict[str, Any]]]:
    """(method, arguments): the table of cases."""
    yield "get_all_databases", {}
    for pattern in ("*", "diff22*", "DIFF22|default", "nosuch", "d?ff22", "*22b"):
        yield "get_databases", {"pattern": pattern}
    for db in (DB, "DIFF22", OTHER_DB, "nosuchdb"):
        yield "get_database", {"name": db}
        yield "get_all_tables", {"db_name": db}
        for pattern in ("*", "t*", "T22|strs", "nosuch"):
            yield "get_tables", {"db_name": db, "pattern": pattern}
        yield "get_functions", {"dbName": db, "pattern": "*"}
        yield "get_functions", {"dbName": db, "pattern": "a*|Z*"}
        yield "get_table_objects_by_name", {"dbname": db, "tbl_names": ["t22", "T22", "nosuch"]}
        yield "get_table_objects_by_name", {"dbname": db, "tbl_names": ["strs", "t22", "v1"]}
        yield "get_table_objects_by_name", {"dbname": db, "tbl_names": []}
        yield (
            "get_table_objects_by_name_req",
            {"req": hms.GetTablesRequest(dbName=db, tblNames=["t22", "T22", "nosuch"])},
        )
        for table in TABLES:
            yield "get_table", {"dbname": db, "tbl_name": table}
            yield "get_table_req", {"req": hms.GetTableRequest(dbName=db, tblName=table)}
            for method in ("get_fields", "get_schema"):
                yield method, {"db_name": db, "table_name": table}
                yield (
                    f"{method}_with_environment_context",
                    {
                        "db_name": db,
                        "table_name": table,
                        "environment_context": hms.EnvironmentContext(properties={"a": "b"}),
                    },
                )
    yield "get_all_functions", {}
    for fn in ("zeta", "ZETA", "Alpha", "alpha", "beta", "BETA", "mid", "nosuch"):
        for db in (DB, "DIFF22", OTHER_DB):
            yield "get_function", {"dbName": db, "funcName": fn}
    for table in TABLES:
        for mp in MAX_PARTS:
            yield "get_partition_names", {"db_name": DB, "tbl_name": table, "max_parts": mp}
            yield "get_partitions", {"db_name": DB, "tbl_name": table, "max_parts": mp}
            yield (
                "get_partitions_with_auth",
                {
                    "db_name": DB,
                    "tbl_name": table,
                    "max_parts": mp,
                    "user_name": "u",
                    "group_names": ["g"],
                },
            )
    for table, specs in (
        (
            "typed",
            [
                [],
                ["3"],
                ["3", "1"],
                ["", "1"],
                ["10", "2", "2024-01-10", "A", "x=y"],
                ["9"],
                ["3", "", "", "b"],
                ["1", "2", "3", "4", "5", "6"],
            ],
        ),
        ("strs", [[], ["x"], ["", "1"], ["%", "="], ["X", "1"], ["é"], ["nosuch"]]),
        ("empty", [[], ["x"]]),
        ("t22", [[], ["x"]]),
    ):
        for spec in specs:
            for mp in (-1, 0, 1, 2):
                args = {"db_name": DB, "tbl_name": table, "part_vals": spec, "max_parts": mp}
                yield "get_partitions_ps", args
                yield "get_partition_names_ps", args
                yield (
                    "get_partitions_ps_with_auth",
                    {**args, "user_name": "u", "group_names": ["g"]},
                )
    for table, names in (
        (
            "typed",
            [
                "i=3/s=1/d=2024-01-02/v=b/str=a%2Fb",
                "i=10/s=2/d=2024-01-10/v=A/str=x%3Dy",
                "i=3/s=1/d=2024-01-02/v=b/str=a/b",
                "nosuch",
            ],
        ),
        ("strs", ["a=x/b=2", "a=X/b=1", "a=x/b=1", "a=x/b=1", "a=%25/b=%3D", "a=%/b=="]),
        ("strs", []),
    ):
        yield "get_partitions_by_names", {"db_name": DB, "tbl_name": table, "names": names}
        for name in names:
            yield "get_partition_by_name", {"db_name": DB, "tbl_name": table, "part_name": name}
    for table, values in (
        ("typed", ["3", "1", "2024-01-02", "b", "a/b"]),
        ("typed", ["3", "1", "2024-01-02", "b", "nosuch"]),
        ("typed", ["3"]),
        ("strs", ["%", "="]),
        ("strs", ["é", "1"]),
        ("strs", ["X", "1"]),
        ("strs", []),
    ):
        yield "get_partition", {"db_name": DB, "tbl_name": table, "part_vals": values}
        yield (
            "get_partition_with_auth",
            {
                "db_name": DB,
                "tbl_name": table,
                "part_vals": values,
                "user_name": "u",
                "group_names": ["g"],
            },
        )
    for table, filters in (("typed", FILTERS), ("strs", STRS_FILTERS + [""]), ("empty", [""])):
        for text in filters:
            for mp in (-1, 0, 2):
                yield (
                    "get_partitions_by_filter",
                    {"db_name": DB, "tbl_name": table, "filter": text, "max_parts": mp},
                )
            yield "get_num_partitions_by_filter", {"db_name": DB, "tbl_name": table, "filter": text}
    yield from privilege_cases()


def privilege_cases() -> Iterator[tuple[str, dict[str, Any]]]:
    """``list_privileges`` and ``get_privilege_set`` over support.hms_diff's grants."""
    kind, ptype = hms.HiveObjectType, hms.PrincipalType
    refs = [
        hms.HiveObjectRef(),  # every grant of the principal
        hms.HiveObjectRef(objectType=kind.GLOBAL),
        hms.HiveObjectRef(objectType=kind.DATABASE, dbName=DB),
        hms.HiveObjectRef(objectType=kind.DATABASE, dbName=DB.upper()),
        hms.HiveObjectRef(objectType=kind.TABLE, dbName=DB, objectName="typed"),
        hms.HiveObjectRef(objectType=kind.TABLE, dbName=DB, objectName="TYPED"),
        hms.HiveObjectRef(objectType=kind.TABLE, dbName=DB, objectName="t22"),
        hms.HiveObjectRef(objectType=kind.TABLE, dbName=DB, objectName="nosuch"),
        hms.HiveObjectRef(objectType=kind.COLUMN, dbName=DB, objectName="typed", columnName="c1"),
        hms.HiveObjectRef(
            objectType=kind.PARTITION, dbName=DB, objectName="strs", partValues=["x", "2"]
        ),
    ]
    principals = [
        (GRANT_USER, ptype.USER),
        (GRANT_USER.lower(), ptype.USER),
        (GRANT_ROLE, ptype.ROLE),
        (GRANT_ROLE.lower(), ptype.ROLE),
        (GRANT_GROUP, ptype.GROUP),
        ("nobody", ptype.USER),
    ]
    for ref in refs:
        for name, principal_type in principals:
            yield (
                "list_privileges",
                {"principal_name": name, "principal_type": principal_type, "hiveObject": ref},
            )
        if ref.objectType is None:
            continue
        for user, groups in ((GRANT_USER, [GRANT_GROUP]), ("nobody", []), (None, None)):
            yield (
                "get_privilege_set",
                {"hiveObject": ref, "user_name": user, "group_names": groups},
            )


def test_every_served_method_answers_as_hms_does(
    hms: EmbeddedMetastore, served: MetastoreEndpoint
) -> None:
    started = time.monotonic()
    direct, via = RawClient(hms.uri), RawClient(served.uri)
    failures = []
    count = 0
    passes = []
    try:
        # Twice: what the first pass forwarded to learn (HMS's row order of several
        # tables or functions: subscriber/metastore/orders.py) the second serves.
        for label in ("first", "again"):
            for method, args in cases():
                count += 1
                expected = decode_reply(direct.call(method, **args))
                got = decode_reply(via.call(method, **args))
                if expected != got:
                    shown = differences(expected[2], got[2])[:5]
                    failures.append(f"{label}: {method}({args}):\n    " + "\n    ".join(shown))
            passes.append(served.stats.snapshot())
    finally:
        direct.close()
        via.close()
    first, both = passes
    n_served = sum(both["served"].values())
    again = {m: n - first["forwarded"].get(m, 0) for m, n in both["forwarded"].items()}
    record_measurement("HMS endpoint differential cases (two passes)", count, "")
    record_measurement("  of which served from the cache", n_served, "")
    record_measurement("  took", round(time.monotonic() - started, 1), "s")
    print(f"\n{count} cases, {n_served} served, {len(failures)} differences")
    print("forwarded, first pass:", dict(sorted(first["forwarded"].items())))
    print("forwarded, second pass:", {m: n for m, n in sorted(again.items()) if n})
    assert not failures, f"{len(failures)} of {count} differ:\n" + "\n".join(failures[:40])
    assert n_served > count // 2
    # The orders learnt in the first pass serve the second (what is still forwarded
    # there names a database the cache lacks: HMS's answer varies by call).
    assert (
        again.get("get_table_objects_by_name", 0) < first["forwarded"]["get_table_objects_by_name"]
    )
    assert not again.get("get_all_functions")
    for method in ("get_partitions_ps", "get_partition_names_ps"):
        assert again.get(method, 0) < first["forwarded"][method], method
