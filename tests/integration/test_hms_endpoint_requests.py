"""The HMS endpoint's Hive 4 request reads and ``get_table_names_by_filter`` against a
real HMS, byte-level: zero differences (subscriber/metastore/request_answers.py).

The pattern of ``test_hms_endpoint_diff.py``: a small catalog (tables whose
``table_type`` parameter and owner vary) is written into an HMS, an in-process catalogd
loads it, and every case is called directly and through a subscriber's endpoint with
the same raw Thrift client; both replies must decode the same. Run against the session
HMS 2.3 (where ``get_database_req`` is an unknown method: forwarded, so the same
error) and an embedded HMS 4.0.1 (where it is served). The cases the endpoint is
meant to serve are asserted served.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until
from support.hms_diff import RawClient, decode_reply, differences, endpoint_over, loaded
from support.measurements import record_measurement

import idl
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.metastore import MetastoreEndpoint

pytestmark = [pytest.mark.hms, pytest.mark.timeout(240)]

hms = idl.hive_metastore
DB = "req4"
EMPTY_DB = "req4b"
# (name, table_type parameter or None, owner): enough names for HashSet orders.
TABLES = [
    ("ice_a", "ICEBERG", "alice"),
    ("ice_b", "ICEBERG", "bob"),
    ("ice_lower", "iceberg", "alice"),
    ("plain", None, "alice"),
    ("hudi_t", "HUDI", "Alice"),
    ("events", "ICEBERG", "carol"),
    ("clicks", None, "bob"),
    ("t9", "ICEBERG", "alice"),
]


def _populate(uri: str, warehouse: str) -> None:
    with MetastoreClient(uri) as client:
        for db in (DB, EMPTY_DB):
            client.raw.create_database(
                hms.Database(name=db, description="d", locationUri=f"{warehouse}/{db}.db")
            )
        for name, kind, owner in TABLES:
            params = {"EXTERNAL": "TRUE", **({"table_type": kind} if kind else {})}
            client.raw.create_table(
                thrift_table(
                    DB,
                    name,
                    f"{warehouse}/{name}",
                    columns=[("c", "string")],
                    owner=owner,
                    parameters=params,
                    table_type="EXTERNAL_TABLE",
                )
            )
        _populate_parts(client, warehouse)


PARTS = "parts"  # partitioned, for the request-style partition reads
PARTITION_VALUES = [["2026-01-01", "1"], ["2026-01-01", "7"], ["2026-01-02", "10"], ["x y", "1"]]


def _populate_parts(client: MetastoreClient, warehouse: str) -> None:
    table = thrift_table(
        DB,
        PARTS,
        f"{warehouse}/{PARTS}",
        columns=[("c", "string")],
        partition_keys=[("dt", "string"), ("n", "int")],
        owner="dave",
        parameters={"EXTERNAL": "TRUE"},
        table_type="EXTERNAL_TABLE",
    )
    client.raw.create_table(table)
    client.raw.add_partitions(thrift_partitions(table, PARTITION_VALUES))


def _drop(uri: str) -> None:
    with MetastoreClient(uri) as client:
        for db in (DB, EMPTY_DB):
            client.raw.drop_database(db, False, True)


# HMS 4.0.1 (20-70 s to start) runs with HMS_ENDPOINT_ALL_VERSIONS=1. On Derby it fails
# every table-parameter filter (JDOException: Derby cannot compare its CLOB
# PARAM_VALUE) and the failed query leaves a lock: the same call from another
# connection then never answers (measured with two plain clients, no endpoint between).
# So its run leaves those filters out.
UPSTREAMS = ["2.3", "4.0.1"] if os.environ.get("HMS_ENDPOINT_ALL_VERSIONS") else ["2.3"]


@pytest.fixture(scope="module", params=UPSTREAMS)
def upstream(
    request: pytest.FixtureRequest,
    hms: EmbeddedMetastore,
    tmp_path_factory: pytest.TempPathFactory,
    hms_cache_dir: Path,
) -> Iterator[tuple[str, str]]:
    if request.param == "2.3":
        yield "2.3", hms.uri
        return
    metastore = EmbeddedMetastore(
        tmp_path_factory.mktemp("hms4"), version="4.x", cache_dir=hms_cache_dir
    )
    with metastore:
        record_measurement("HMS 4.0.1 start (Derby)", metastore.startup_seconds or 0.0, "s")
        yield "4.0.1", metastore.uri


@pytest.fixture(scope="module")
def served(
    upstream: tuple[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, MetastoreEndpoint]]:
    version, uri = upstream
    _populate(uri, f"file:{tmp_path_factory.mktemp('req-wh')}")
    try:
        with endpoint_over(loaded(uri), uri) as (_, endpoint):
            dialect = endpoint._dialect
            wait_until(lambda: dialect.serves_requests is not None, what="the HMS probed")
            yield version, endpoint
    finally:
        _drop(uri)


FILTERS = [
    "",
    'hive_filter_field_params__table_type = "ICEBERG"',
    'hive_filter_field_params__table_type like "ICEBERG"',
    "hive_filter_field_params__table_type LIKE 'ICEBERG'",
    'hive_filter_field_params__table_type = "HUDI"',
    'hive_filter_field_params__table_type = "iceberg"',
    'hive_filter_field_params__table_type = "nosuch"',
    'hive_filter_field_params__nokey = "x"',
    'hive_filter_field_owner__ = "alice"',
    'hive_filter_field_owner__ = "carol"',
    # Forwarded (not evaluated here), answered by HMS all the same:
    'hive_filter_field_params__table_type like "ICE.*"',
    'hive_filter_field_params__table_type <> "ICEBERG"',
    'hive_filter_field_owner__ like "a.*"',
    "hive_filter_field_params__table_type = ",
]


def cases(version: str = "2.3") -> Iterator[tuple[str, dict[str, Any], bool]]:
    """(method, arguments, whether the endpoint is meant to serve it on HMS 4)."""
    for name in (DB, DB.upper(), EMPTY_DB, "default", "nosuch"):
        for catalog in ("hive", "HIVE", None, "spark"):
            for caps in (None, [], ["EXTREAD", "EXTWRITE"]):
                request = hms.GetDatabaseRequest(
                    name=name, catalogName=catalog, processorCapabilities=caps
                )
                serve = catalog in ("hive", "HIVE") and not caps
                yield "get_database_req", {"request": request}, serve
    yield "get_database_req", {"request": hms.GetDatabaseRequest(catalogName="hive")}, False
    for db in (DB, DB.upper(), EMPTY_DB, "@hive#" + DB, "nosuch"):
        for text in FILTERS:
            if version == "4.0.1" and "_params__" in text:
                continue  # fails on Derby, and hangs the next such call (see UPSTREAMS)
            for max_tables in (-1, 0, 2, 100):
                evaluated = FILTERS.index(text) < 10 and db != "nosuch"
                yield (
                    "get_table_names_by_filter",
                    {"dbname": db, "filter": text, "max_tables": max_tables},
                    evaluated,
                )


def partition_cases() -> Iterator[tuple[str, dict[str, Any], bool]]:
    """Hive 4's request-style partition reads (what Spark's 4.0.1 client sends)."""
    for table in (PARTS, "PARTS", "nosuch"):
        for catalog in (None, "hive", "spark"):
            for max_parts in (None, -1, 0, 1, 2, 100):
                serve = table != "nosuch" and catalog == "hive"
                req = hms.PartitionsRequest(
                    catName=catalog, dbName=DB, tblName=table, maxParts=max_parts
                )
                yield "fetch_partition_names_req", {"partitionReq": req}, serve
        for values in ([], ["2026-01-01"], ["", "1"], ["x y", "1"], ["nope"]):
            for max_parts in (-1, 0, 1):
                req = hms.GetPartitionNamesPsRequest(
                    catName="hive", dbName=DB, tblName=table, partValues=values, maxParts=max_parts
                )
                # Several matches come in HMS's row order: forwarded (orders.py learns
                # from the 2.x call's answers only).
                several = values in (["2026-01-01"], ["", "1"])
                yield "get_partition_names_ps_req", {"req": req}, table != "nosuch" and not several
        for text in ("", 'dt = "2026-01-01"', "n > 5", 'dt like "2026.*"', "nope = 1"):
            for max_parts in (-1, 0, 1, 100):
                req = hms.GetPartitionsByFilterRequest(
                    catName="hive", dbName=DB, tblName=table, filter=text, maxParts=max_parts
                )
                evaluated = "like" not in text and "nope" not in text  # filters.py
                yield "get_partitions_by_filter_req", {"req": req}, table != "nosuch" and evaluated
        for names in ([], ["dt=2026-01-01/n=1"], ["dt=x y/n=1", "dt=2026-01-02/n=10", "n=1"]):
            for stats in (None, False, True):
                for engine in (None, "hive"):  # Spark's Hive 4 client: "hive", no stats
                    req = hms.GetPartitionsByNamesRequest(
                        db_name=DB, tbl_name=table, names=names, get_col_stats=stats, engine=engine
                    )
                    serve = table != "nosuch" and not stats
                    yield "get_partitions_by_names_req", {"req": req}, serve
    req = hms.PartitionsRequest(dbName=DB, tblName=PARTS, validWriteIdList="1:1::")
    yield "fetch_partition_names_req", {"partitionReq": req}, False


PARTITION_REQUESTS = (
    "fetch_partition_names_req",
    "get_partition_names_ps_req",
    "get_partitions_by_filter_req",
    "get_partitions_by_names_req",
)


def test_request_reads_answer_as_hms_does(served: tuple[str, MetastoreEndpoint]) -> None:
    version, endpoint = served
    started = time.monotonic()
    direct, via = RawClient(endpoint.config.upstream), RawClient(endpoint.uri)
    failures, count, meant = [], 0, 0
    before = endpoint.stats.by_method()
    try:
        for method, args, serve in (*cases(version), *partition_cases()):
            count += 1
            meant += serve
            expected = decode_reply(direct.call(method, **args))
            got = decode_reply(via.call(method, **args))
            if expected != got:
                shown = differences(expected[2], got[2])[:5]
                failures.append(f"{method}({args}):\n    " + "\n    ".join(shown))
    finally:
        direct.close()
        via.close()
    after = endpoint.stats.by_method()
    served_n = {
        m: after[m].get("served", 0) - before.get(m, {}).get("served", 0)
        for m in ("get_database_req", "get_table_names_by_filter", *PARTITION_REQUESTS)
        if m in after
    }
    took = round(time.monotonic() - started, 1)
    record_measurement(f"HMS {version} request-read cases", count, "")
    record_measurement(f"  of which served ({version})", sum(served_n.values()), "")
    print(
        f"\nHMS {version}: {count} cases, served {served_n}, {len(failures)} differences, {took} s"
    )
    assert not failures, f"{len(failures)} of {count} differ:\n" + "\n".join(failures[:30])
    if version == "2.3":
        assert served_n.get("get_database_req", 0) == 0  # HMS 2.3 has no such call
    else:
        assert served_n.get("get_database_req", 0) == sum(
            1 for m, _, s in cases(version) if s and m == "get_database_req"
        )
    # get_table_names_by_filter: meant-to-serve cases are served unless HMS's own
    # order depends on what the cache cannot see (max_tables cutting rows, a bucket
    # shared by two names, a value only a collation tells apart; on HMS 2.3 "@hive#db"):
    # measured on HMS 2.3, 68 of 160.
    meant_filter = sum(1 for m, _, s in cases(version) if s and m == "get_table_names_by_filter")
    assert served_n.get("get_table_names_by_filter", 0) * 3 >= meant_filter
    # The request-style partition reads: none served against HMS 2.3 (it lacks them);
    # against HMS 4 exactly the plain requests over a cached table (partition_cases).
    served_parts = sum(served_n.get(m, 0) for m in PARTITION_REQUESTS)
    meant_parts = sum(1 for _, _, s in partition_cases() if s)
    record_measurement(f"  partition requests served ({version})", served_parts, "")
    if version == "2.3":
        assert served_parts == 0
    else:
        assert served_parts == meant_parts, (served_parts, meant_parts)


PROJECTIONS: list[list[str] | None] = [
    None,
    ["dbName", "tableName", "owner", "ownerType"],  # what Spark's Hive 4 client asks
    ["tableName"],
    ["owner"],  # forwarded: no names to order the rows by
    ["tableName", "sd.location"],  # forwarded: not modelled
    [],
]
PATTERNS = [None, ".*", "*", "ev*|T9", "ice_*", "ice.a", "[ai].*", "e%", ""]


def table_request_cases() -> Iterator[tuple[dict[str, Any], bool]]:
    """``get_table_objects_by_name_req`` with names, patterns and projections, and
    whether the endpoint is meant to serve it (on HMS 4, once the order is learnt)."""

    def request(db: str, names: Any, pattern: Any, fields: Any, catalog: Any = "hive") -> Any:
        spec = None if fields is None else hms.GetProjectionsSpec(fieldList=fields)
        return hms.GetTablesRequest(
            dbName=db, tblNames=names, catName=catalog, tablesPattern=pattern, projectionSpec=spec
        )

    for fields in PROJECTIONS:
        for pattern in PATTERNS:
            for names in (None, ["ice_a", "events", "nosuch", "ICE_B", "ice_a"]):
                modelled = fields is None or (
                    bool(fields) and "tableName" in fields and "sd.location" not in fields
                )
                serve = (
                    modelled
                    and (names is not None or pattern is not None)
                    and (pattern is None or "[" not in pattern and "%" not in pattern)
                )
                yield {"req": request(DB, names, pattern, fields)}, serve
    spark = ["dbName", "tableName", "owner", "ownerType"]
    for db, serve in ((DB.upper(), True), ("@hive#" + DB, False), (EMPTY_DB, True)):
        yield {"req": request(db, None, ".*", spark)}, serve
    for db in ("nosuch", "req.", "REQ*", ""):
        yield {"req": request(db, None, ".*", spark)}, False
    yield {"req": request(DB, None, ".*", spark, catalog="spark")}, False
    caps = hms.ClientCapabilities(values=[hms.ClientCapability.INSERT_ONLY_TABLES])
    for names in (["ice_a"], ["ice_a", "t9"]):  # as Spark's Hive 4 client sends them
        yield {"req": hms.GetTablesRequest(dbName=DB, tblNames=names, capabilities=caps)}, True
    spec = hms.GetProjectionsSpec(fieldList=spark)
    request = hms.GetTablesRequest(
        dbName=DB, catName="hive", tablesPattern=".*", projectionSpec=spec, capabilities=caps
    )
    yield {"req": request}, True


def test_table_requests_answer_as_hms_does(served: tuple[str, MetastoreEndpoint]) -> None:
    """Each case twice (the first call of a row set may be forwarded to learn HMS's row
    order): every answer as HMS's, and on HMS 4 the meant cases served the second time."""
    version, endpoint = served
    direct, via = RawClient(endpoint.config.upstream), RawClient(endpoint.uri)
    failures, served_second, meant = [], 0, 0
    method = "get_table_objects_by_name_req"
    try:
        for args, serve in table_request_cases():
            meant += serve
            for attempt in (1, 2):
                before = endpoint.stats.by_method().get(method, {}).get("served", 0)
                expected = decode_reply(direct.call(method, **args))
                got = decode_reply(via.call(method, **args))
                if expected != got:
                    shown = differences(expected[2], got[2])[:5]
                    failures.append(f"{args} (call {attempt}):\n    " + "\n    ".join(shown))
                after = endpoint.stats.by_method().get(method, {}).get("served", 0)
                if attempt == 2 and after > before:
                    served_second += 1
                    assert serve or version == "2.3", args  # served only what is modelled
    finally:
        direct.close()
        via.close()
    record_measurement(
        f"HMS {version} table-request cases served (of {meant} meant)", served_second, ""
    )
    assert not failures, f"{len(failures)} differ:\n" + "\n".join(failures[:30])
    if version == "2.3":  # HMS 2.3 ignores patterns and projections: forwarded
        assert served_second == sum(
            1 for args, _ in table_request_cases()
            if args["req"].tablesPattern is None and args["req"].projectionSpec is None
            and args["req"].tblNames is not None
        )  # fmt: skip
    else:
        assert served_second == meant
