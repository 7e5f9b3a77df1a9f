"""Unmodified Spark SQL through the subscriber's HMS endpoint: same answers, no HMS reads.

Topology (all real): an HMS of this module's own (it is stopped and started
again), a :class:`CountingRelay` in front of it that counts every call reaching
HMS, catalogd loading from HMS directly, and in this process a subscriber with
its HMS endpoint forwarding to the relay. Two Spark sessions in child processes
run the same statements: one straight at the relay ("direct"), one at the
endpoint. The tests run in file order and share that state; catalogd, the subscriber,
its endpoint and the endpoint's Spark session are made twice, for a replica subscriber
and for an on-demand one, over the one HMS, relay and direct session.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until
from support import hms_statements as stmts
from support.catalogd_process import CatalogdProcess
from support.hms_relay import CountingRelay
from support.measurements import record_measurement
from support.spark_sql_server import SparkSql

import idl
from catalogd.addresses import free_port
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.api import CatalogSubscriber
from subscriber.metastore import MetastoreEndpoint, framing

pytestmark = [pytest.mark.hms, pytest.mark.spark, pytest.mark.timeout(420)]

hms_api = idl.hive_metastore

SETUP, READS, WRITES = stmts.SETUP, stmts.READS, stmts.WRITES


@pytest.fixture(scope="module")
def metastore(
    tmp_path_factory: pytest.TempPathFactory, hms_cache_dir: Path
) -> Iterator[dict[str, Any]]:
    """The HMS, its relay and the direct Spark session, set up once for both modes (each
    mode's tests leave the catalog as they found it, the HMS running)."""
    root = tmp_path_factory.mktemp("hms-endpoint")
    hms = EmbeddedMetastore(root / "hms", port=free_port(), cache_dir=hms_cache_dir)
    hms.start()
    relay = CountingRelay(hms.uri)
    direct = None
    try:
        direct = SparkSql(relay.uri, hms.warehouse_dir, root / "spark-direct", {})
        record_measurement("Spark session start (child process)", direct.startup_s, "s")
        for statement in SETUP:
            direct.sql(statement)
        with MetastoreClient(hms.uri) as client:
            client.call(
                "create_function",
                hms_api.Function(
                    functionName="shout",
                    dbName="hx",
                    className="org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper",
                    ownerName="test",
                    ownerType=hms_api.PrincipalType.USER,
                    createTime=int(time.time()),
                    functionType=hms_api.FunctionType.JAVA,
                    resourceUris=[],
                ),
            )
        yield {"hms": hms, "relay": relay, "direct": direct, "root": root}
    finally:
        if direct is not None:
            direct.close()
        relay.close()
        hms.stop()


@pytest.fixture(scope="module", params=["replica", "on-demand"])
def world(request: pytest.FixtureRequest, metastore: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The topology above, with the subscriber a replica or on demand (reads fetched
    from catalogd on a miss: still none reaches HMS)."""
    hms: EmbeddedMetastore = metastore["hms"]
    root: Path = metastore["root"] / request.param
    root.mkdir()
    via = catalogd = sub = endpoint = None
    try:
        # No change detection: only the endpoint's reload requests make writes visible.
        catalogd = CatalogdProcess(
            hms.uri, root / "catalogd", extra=["--change-detection", "off"]
        ).start()
        catalogd.wait_loaded()
        sub = CatalogSubscriber(catalogd.endpoint, mode=request.param).start()
        sub.wait_synced(30)
        endpoint = sub.metastore_endpoint(upstream=metastore["relay"].uri).start()
        via = SparkSql(endpoint.uri, hms.warehouse_dir, root / "spark-endpoint", {})
        yield {**metastore, "via": via, "sub": sub, "endpoint": endpoint}
    finally:
        for closer in (via, endpoint, sub):
            if closer is not None:
                closer.close()
        if catalogd is not None:
            catalogd.stop()


def test_reads_match_direct_and_reach_hms_zero_times(world: dict[str, Any]) -> None:
    relay: CountingRelay = world["relay"]
    endpoint: MetastoreEndpoint = world["endpoint"]
    for statement in READS:
        _, expected = world["direct"].query(statement)
        relay.reset()
        _, got = world["via"].query(statement)
        assert got == expected, statement
        reached = relay.reset()
        assert not reached, f"{statement!r} reached HMS: {dict(reached)}"
    stats = endpoint.stats.snapshot()
    assert stats["served"]["get_table"] > 0
    assert stats["served"]["get_partitions_by_filter"] >= 3
    assert stats["served"]["get_function"] >= 1
    assert not stats["forwarded_stale"]


def test_writes_match_direct_and_are_read_at_once(world: dict[str, Any]) -> None:
    relay: CountingRelay = world["relay"]
    results: dict[str, list[Any]] = {}
    for session, table in (("direct", "w_direct"), ("via", "w_endpoint")):
        spark: SparkSql = world[session]
        seen: list[Any] = []
        for write, reads in WRITES:
            spark.sql(write.replace("hx.T", f"hx.{table}"))
            for read in reads:
                _, rows = spark.query(read.replace("hx.T", f"hx.{table}"))
                seen.append([[c.replace(table, "T") for c in row] for row in rows])
        results[session] = seen
    assert results["via"] == results["direct"]
    assert ["hx", "T", "False"] in results["via"][0]  # created, listed at once
    assert results["via"][2] == [["p=x"], ["p=y"]]
    assert ["spark_catalog.hx.T_fn"] in results["via"][4]  # a function, in the cache at once
    assert ["spark_catalog.hx.T_fn"] not in results["via"][5]
    assert ["hx", "T", "False"] not in results["via"][-1]  # dropped, gone at once
    # the writes themselves went to HMS, and each was in the cache before its answer
    assert world["endpoint"].stats.snapshot()["forwarded"]["add_partitions_req"] == 2
    assert world["endpoint"].stats.write_waits_timed_out == 0
    relay.reset()


def test_hms_down_reads_work_writes_fail_then_recover(world: dict[str, Any]) -> None:
    hms: EmbeddedMetastore = world["hms"]
    via: SparkSql = world["via"]
    expected = {s: world["direct"].query(s)[1] for s in READS[:4] + READS[9:11]}
    hms.stop()
    try:
        for statement, rows in expected.items():
            assert via.query(statement)[1] == rows, statement
        answer = via.attempt("CREATE TABLE hx.while_down (a INT) USING parquet")
        assert "error" in answer
        assert "unreachable" in answer["error"], answer["error"]
    finally:
        hms.start()
    via.sql("CREATE TABLE hx.after_down (a INT) USING parquet")
    _, rows = via.query("SHOW TABLES IN hx")
    assert ["hx", "after_down", "False"] in rows
    assert ["hx", "while_down", "False"] not in rows
    via.sql("DROP TABLE hx.after_down")


@pytest.mark.timeout(60)
def test_garbage_closes_that_connection_only(world: dict[str, Any]) -> None:
    endpoint: MetastoreEndpoint = world["endpoint"]
    host, port = endpoint.address
    garbage_before = endpoint.stats.garbage
    with socket.create_connection((host, port), timeout=10) as bad:
        bad.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert bad.recv(100) == b""  # closed by the endpoint
    half = framing.header_bytes("get_table", framing.CALL, 1) + b"\x0b\x00\x01\x00\x00"
    with socket.create_connection((host, port), timeout=10) as cut:
        cut.sendall(half)  # and hang up mid-message
    wait_until(lambda: endpoint.stats.garbage > garbage_before, timeout=10)
    with MetastoreClient(endpoint.uri, retries=0) as client:
        assert "hx" in client.get_all_databases()
        assert client.get_table("hx", "events").tableName == "events"
    _, rows = world["via"].query("SHOW PARTITIONS hx.events")
    assert rows == [["dt=2024-01-01"], ["dt=2024-01-02"]]
