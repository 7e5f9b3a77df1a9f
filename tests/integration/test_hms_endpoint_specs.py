"""The HMS endpoint's partition-spec, partition-value and constraint reads against a
real HMS 2.3, byte-level: zero differences, and what is claimed served is served.

:func:`populate_specs` writes tables whose ``get_partitions_pspec`` answers take every
shape HMS 2.3 builds (docs/HMS-ENDPOINT.md, ``subscriber/metastore/spec_answers.py``):
no grouping, grouping with one SD group, partitions outside the table's location or
under a location that merely starts with the table's, two SD groups (forwarded), no
partitions, no partition keys. Each case is called through the same raw Thrift client
directly on HMS and through the endpoint (:mod:`support.hms_diff`), as in
``test_hms_endpoint_diff.py``. ``get_partition_values`` (not in HMS 2.3's service) and
the constraint reads are forwarded: their answers must be HMS's own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from polling import wait_until
from support.hms_diff import RawClient, decode_reply, differences
from support.measurements import record_measurement
from thriftpy2.thrift import TException

import idl
from catalogd.hms.builders import thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import ThriftSource, load_catalog
from subscriber.api import CatalogSubscriber
from subscriber.metastore import MetastoreEndpoint
from subscriber.metastore.spec_answers import GROUPING_PARAMETER, java_short
from subscriber.protocol.keys import make_partition_name

pytestmark = [pytest.mark.hms, pytest.mark.timeout(180)]

hms = idl.hive_metastore
DB = "spec22"

# table -> (grouping parameter or None, [(values, location suffix or None, fmt)]);
# None: under the table's location at its partition name; out-of-name-order on purpose.
TABLES: dict[str, tuple[str | None, list[tuple[str, str | None, str]]]] = {
    "plain": (None, [("b", None, "text"), ("a", None, "text"), ("c", "/elsewhere", "orc")]),
    "grp": (
        "true",
        [
            ("b", None, "text"),
            ("a", None, "text"),
            ("out", "/elsewhere", "text"),
            ("pre", "2/p=pre", "text"),  # "<table>2/...": starts with the table's location
            ("z", "/z=odd%2F", "text"),
        ],
    ),
    "grp_upper": ("TRUE", [("x", None, "text"), ("y", None, "text")]),
    "grp_out": ("true", [("x", "/far", "text"), ("w", "/far2", "text")]),
    "grp_two": ("true", [("x", None, "text"), ("y", None, "orc")]),
    "grp_off": ("false", [("x", None, "text")]),
    "grp_empty": ("true", []),
    "empty": (None, []),
}
UNPARTITIONED = {"flat": None, "flat_grp": "true"}


def populate_specs(uri: str, warehouse: str) -> None:
    """Create :data:`DB` with :data:`TABLES` and :data:`UNPARTITIONED` in HMS at ``uri``."""
    with MetastoreClient(uri) as client:
        raw = client.raw
        raw.create_database(hms.Database(name=DB, description="", locationUri=f"{warehouse}/db"))
        for name, (grouping, parts) in TABLES.items():
            params = {} if grouping is None else {GROUPING_PARAMETER: grouping}
            location = f"{warehouse}/{name}"
            table = thrift_table(
                DB,
                name,
                location,
                columns=[("c", "string")],
                partition_keys=[("p", "string")],
                parameters=params,
                fmt="text",
            )
            raw.create_table(table)
            for value, suffix, fmt in parts:
                part_name = make_partition_name(["p"], [value])
                where = f"{location}/{part_name}" if suffix is None else f"{location}{suffix}"
                sd = thrift_table(DB, name, where, columns=[("c", "string")], fmt=fmt).sd
                raw.add_partition(
                    hms.Partition(
                        values=[value],
                        dbName=DB,
                        tableName=name,
                        createTime=1700000000,
                        lastAccessTime=0,
                        parameters={"n": part_name},
                        sd=sd,
                    )
                )
        for name, grouping in UNPARTITIONED.items():
            params = {} if grouping is None else {GROUPING_PARAMETER: grouping}
            raw.create_table(
                thrift_table(
                    DB, name, f"{warehouse}/{name}", columns=[("x", "int")], parameters=params
                )
            )


@pytest.fixture(scope="module")
def served(
    hms: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MetastoreEndpoint]:
    populate_specs(hms.uri, f"file:{tmp_path_factory.mktemp('specs-wh')}")
    with MetastoreClient(hms.uri) as client:
        objects, _ = load_catalog(ThriftSource(client))
    from catalogd.conversion import objects as convert

    server = CatalogServer(
        ServerConfig(
            bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*", heartbeat_interval_s=0.1
        )
    )
    server.commit(convert.encode_all(objects)).result()
    server.start()
    try:
        with CatalogSubscriber(server.endpoint) as sub:
            sub.wait_synced(30)
            with sub.metastore_endpoint(upstream=hms.uri, max_lag_s=60) as endpoint:
                # pspec is served once the endpoint knows the upstream is HMS 2.x.
                wait_until(
                    lambda: endpoint._answers.upstream_reads_catalogs is not None,
                    what="the upstream HMS's dialect known",
                )
                yield endpoint
    finally:
        server.close()
        with MetastoreClient(hms.uri) as client, contextlib.suppress(TException):
            client.raw.drop_database(DB, False, True)


MAX_PARTS = (-65536, -5, -1, 0, 1, 2, 3, 100, 65535, 65536, 65537, 100000)


def spec_cases() -> Iterator[tuple[str, dict[str, Any]]]:
    for table in [*TABLES, *UNPARTITIONED, "nosuch", "GRP", "Plain"]:
        for mp in MAX_PARTS:
            yield "get_partitions_pspec", {"db_name": DB, "tbl_name": table, "max_parts": mp}
    for db in ("SPEC22", "nosuchdb"):
        yield "get_partitions_pspec", {"db_name": db, "tbl_name": "grp", "max_parts": -1}
    yield "get_partitions_pspec", {"db_name": DB, "tbl_name": "grp"}  # the IDL default


def claimed_served(args: dict[str, Any]) -> bool:
    """Whether the endpoint serves this pspec case: every table the cache has (names
    matched case-insensitively), except two SD groups (Java HashMap order) once two or
    more partitions are selected."""
    table = args["tbl_name"].lower()
    if args["db_name"].lower() != DB or table not in {*TABLES, *UNPARTITIONED}:
        return False
    limit = java_short(args.get("max_parts", -1))
    return table != "grp_two" or 0 <= limit < 2


def forwarded_cases() -> Iterator[tuple[str, dict[str, Any]]]:
    yield (
        "get_partition_values",
        {
            "request": hms.PartitionValuesRequest(
                dbName=DB,
                tblName="plain",
                partitionKeys=[hms.FieldSchema(name="p", type="string")],
            )
        },
    )
    for table in ("plain", "flat", "nosuch"):
        yield (
            "get_primary_keys",
            {"request": hms.PrimaryKeysRequest(db_name=DB, tbl_name=table)},
        )
        yield (
            "get_foreign_keys",
            {"request": hms.ForeignKeysRequest(foreign_db_name=DB, foreign_tbl_name=table)},
        )


def compare(
    direct: RawClient, via: RawClient, cases: list[tuple[str, dict[str, Any]]]
) -> list[str]:
    failures = []
    for method, args in cases:
        expected = decode_reply(direct.call(method, **args))
        got = decode_reply(via.call(method, **args))
        if expected != got:
            shown = differences(expected[2], got[2])[:5]
            failures.append(f"{method}({args}):\n    " + "\n    ".join(shown))
    return failures


def test_partition_specs_answer_as_hms_does(
    hms: EmbeddedMetastore, served: MetastoreEndpoint
) -> None:
    cases = list(spec_cases())
    direct, via = RawClient(hms.uri), RawClient(served.uri)
    try:
        before = served.stats.by_method().get("get_partitions_pspec", {}).get("served", 0)
        failures = compare(direct, via, cases)
    finally:
        direct.close()
        via.close()
    counts = served.stats.by_method()["get_partitions_pspec"]
    n_served = counts.get("served", 0) - before
    record_measurement("HMS endpoint get_partitions_pspec cases", len(cases), "")
    record_measurement("  of which served from the cache", n_served, "")
    print(f"\n{len(cases)} pspec cases, {n_served} served, {len(failures)} differences: {counts}")
    assert not failures, f"{len(failures)} of {len(cases)} differ:\n" + "\n".join(failures[:30])
    assert n_served == len([args for _, args in cases if claimed_served(args)])


def test_values_and_constraints_are_forwarded_exactly(
    hms: EmbeddedMetastore, served: MetastoreEndpoint
) -> None:
    cases = list(forwarded_cases())
    direct, via = RawClient(hms.uri), RawClient(served.uri)
    try:
        failures = compare(direct, via, cases)
    finally:
        direct.close()
        via.close()
    assert not failures, "\n".join(failures)
    by_method = served.stats.by_method()
    for method, _ in cases:
        assert "served" not in by_method[method], method
