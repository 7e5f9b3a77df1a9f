"""The polling detector over an in-memory metastore: names every cycle, budgeted fingerprints."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import idl
from catalogd.freshness.detector import ChangeDetector
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.loading.table_loader import TableLoader
from catalogd.runtime_info import RuntimeInfo
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import InMemorySource
from catalogd.writes.operations import Operations

pytestmark = pytest.mark.timeout(120)
hms = idl.hive_metastore


def add_table(source: InMemorySource, db: str, name: str) -> None:
    table = thrift_table(
        db, name, f"file:/w/{db}/{name}", columns=[("a", "int")], partition_keys=[("p", "string")]
    )
    source.tables[(db, name)] = table
    source.table_partitions[(db, name)] = {}


def add_partition(source: InMemorySource, db: str, name: str, value: str) -> None:
    (part,) = thrift_partitions(source.tables[(db, name)], [(value,)])
    source.table_partitions[(db, name)][f"p={value}"] = part


@pytest.fixture
def world() -> Iterator[tuple[InMemorySource, CatalogServer, ChangeDetector]]:
    source = InMemorySource()
    for db, count in (("aaa", 1), ("mid", 130), ("zzz", 1)):
        source.databases[db] = hms.Database(
            name=db, description="", locationUri=f"file:/w/{db}", parameters={}
        )
        for i in range(count):
            add_table(source, db, f"t{i:03d}")
    server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*"))
    ops = Operations(server, lambda: source)
    ops.load_names()
    server.start()
    loader = TableLoader(ops, pool_size=2).start()
    loader.enqueue_unloaded()
    assert loader.wait_idle(60)
    # A budget (100 calls per cycle) smaller than one pass (132 tables, all partitioned).
    detector = ChangeDetector(
        ops, loader, RuntimeInfo(), mode="poll", interval_s=1.0, max_calls_per_s=100
    )
    yield source, server, detector
    loader.close()
    server.close()


def partitions(server: CatalogServer) -> list[str]:
    return server.submit(lambda c: sorted(c.keys_with_prefix("HDFS_PARTITION:"))).result()


def test_every_table_is_fingerprinted_although_a_pass_exceeds_the_budget(world) -> None:  # noqa: ANN001
    source, server, detector = world
    detector.run_once()  # moves the cursor into the middle database
    add_partition(source, "aaa", "t000", "x")
    add_partition(source, "zzz", "t000", "y")
    for _ in range(3):
        detector.run_once()
    assert partitions(server) == ["HDFS_PARTITION:aaa.t000:p=x", "HDFS_PARTITION:zzz.t000:p=y"]


def test_names_are_checked_every_cycle(world) -> None:  # noqa: ANN001
    source, server, detector = world
    add_table(source, "zzz", "fresh")
    del source.tables[("aaa", "t000")]
    detector.run_once()
    keys = server.submit(
        lambda c: set(c.keys_of_database("zzz")) | set(c.keys_of_database("aaa"))
    ).result()
    assert "TABLE:zzz.fresh" in keys and "TABLE:aaa.t000" not in keys
