"""PyIceberg (a real client from PyPI) through the HMS endpoint: same results, no lost commit.

Topology (all real): an HMS 2.3 with a working lock manager (``hms_locks``), a
:class:`CountingRelay` in front of it, catalogd loading from HMS directly with
change detection off (only the endpoints' reload requests make a change visible:
the hardest case for a cache), and in this process two subscribers, each with an
HMS endpoint forwarding to the relay (two hosts' sidecars). PyIceberg's
``HiveCatalog`` commits with ``lock`` -> ``get_table`` -> ``alter_table`` -> ``unlock`` on
one connection: the ``get_table`` under the lock must be HMS's.

The two-writer race runs ``ICEBERG_RACE_ROUNDS`` rounds (default 52, 13 of
each of four shapes: the stale loader on an endpoint or direct, the other writer
direct or on an endpoint; about half a second a round here).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from polling import wait_until
from support.catalogd_process import CatalogdProcess
from support.hms_relay import CountingRelay
from support.measurements import record_measurement
from support.table_order import wait_for_table_order

from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.api import CatalogSubscriber
from subscriber.metastore import MetastoreEndpoint

pa = pytest.importorskip("pyarrow")
hive_catalog = pytest.importorskip("pyiceberg.catalog.hive")
iceberg_types = pytest.importorskip("pyiceberg.types")
pytestmark = [pytest.mark.hms, pytest.mark.timeout(600)]

ROUNDS = int(os.environ.get("ICEBERG_RACE_ROUNDS", "52"))
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture(scope="module")
def world(
    hms_locks: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("iceberg-endpoint")
    relay = CountingRelay(hms_locks.uri)
    catalogd = CatalogdProcess(
        hms_locks.uri, root / "catalogd", extra=["--change-detection", "off"]
    )
    subs: list[CatalogSubscriber] = []
    endpoints: list[MetastoreEndpoint] = []
    try:
        catalogd.start()
        catalogd.wait_loaded()
        for _ in range(2):
            sub = CatalogSubscriber(catalogd.endpoint).start()
            subs.append(sub)
            sub.wait_synced(30)
            endpoints.append(sub.metastore_endpoint(upstream=relay.uri).start())
        warehouse = f"file://{root}/warehouse"
        yield {
            "relay": relay,
            "endpoints": endpoints,
            "subs": subs,
            "direct": _catalog("direct", hms_locks.uri, warehouse),
            "via": _catalog("via", endpoints[0].uri, warehouse),
            "via2": _catalog("via2", endpoints[1].uri, warehouse),
        }
    finally:
        for closer in [*endpoints, *subs]:
            closer.close()
        catalogd.stop()
        relay.close()


def _catalog(name: str, uri: str, warehouse: str) -> Any:
    return hive_catalog.HiveCatalog(name, uri=uri, warehouse=warehouse)


def _rows(table: Any) -> list[tuple[Any, ...]]:
    data = table.scan().to_arrow().to_pylist()
    return sorted(tuple(sorted(row.items())) for row in data)


def _scenario(cat: Any, ns: str) -> list[Any]:
    """Create, append, evolve, rename, drop; what the catalog shows after each step."""
    seen: list[Any] = []
    cat.create_namespace(ns)
    table = cat.create_table(f"{ns}.t", schema=SCHEMA)
    seen.append(("created", cat.list_tables(ns), cat.table_exists(f"{ns}.t")))
    table.append(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    table = cat.load_table(f"{ns}.t")
    seen.append(("append 1", _rows(table), len(table.snapshots())))
    table.append(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    table = cat.load_table(f"{ns}.t")
    seen.append(("append 2", _rows(table), len(table.snapshots())))
    with table.update_schema() as update:
        update.add_column("w", iceberg_types.LongType())
    table = cat.load_table(f"{ns}.t")
    seen.append(("evolved", [f.name for f in table.schema().fields]))
    wide = pa.schema([("id", pa.int64()), ("v", pa.string()), ("w", pa.int64())])
    table.append(pa.table({"id": [4], "v": ["d"], "w": [40]}, schema=wide))
    table = cat.load_table(f"{ns}.t")
    seen.append(("append 3", _rows(table), len(table.snapshots())))
    cat.create_table(f"{ns}.other", schema=SCHEMA)
    seen.append(("listed", sorted(cat.list_tables(ns))))
    cat.rename_table(f"{ns}.t", f"{ns}.t2")
    renamed = cat.load_table(f"{ns}.t2")
    seen.append(("renamed", _rows(renamed), len(renamed.snapshots())))
    cat.drop_table(f"{ns}.t2")
    seen.append(("dropped", cat.table_exists(f"{ns}.t2")))
    cat.drop_table(f"{ns}.other")
    # (the listing after a rename: test_a_renamed_table_s_old_name_is_gone_...)
    seen.append(("dropped other", cat.table_exists(f"{ns}.other")))
    cat.drop_namespace(ns)
    seen.append(("namespace dropped", (ns,) in cat.list_namespaces()))
    return [_anonymous(step, ns) for step in seen]


def _anonymous(step: Any, ns: str) -> Any:
    """``step`` with the namespace's name replaced (two runs use two namespaces)."""
    if isinstance(step, tuple | list):
        return type(step)(_anonymous(item, ns) for item in step)
    return "NS" if step == ns else step


def test_a_table_s_life_is_the_same_through_the_endpoint(world: dict[str, Any]) -> None:
    direct = _scenario(world["direct"], "ice_direct")
    via = _scenario(world["via"], "ice_via")
    assert via == direct
    assert ("append 3", direct[4][1], 3) == direct[4] and len(direct[4][1]) == 4
    endpoint: MetastoreEndpoint = world["endpoints"][0]
    assert endpoint.stats.write_waits_timed_out == 0
    served = endpoint.stats.snapshot()["served"]
    assert served.get("get_table", 0) > 0  # loads came from the cache


def test_a_renamed_table_s_old_name_is_gone_through_the_endpoint(world: dict[str, Any]) -> None:
    cat = world["via"]
    cat.create_namespace("ice_ren")
    cat.create_table("ice_ren.a", schema=SCHEMA)
    cat.rename_table("ice_ren.a", "ice_ren.b")
    try:
        assert not cat.table_exists("ice_ren.a")
        assert cat.list_tables("ice_ren") == [("ice_ren", "b")]
    finally:
        world["direct"].drop_table("ice_ren.b")
        world["direct"].drop_namespace("ice_ren")


def _race(
    stale: Any, other: Any, name: str, round_no: int, relay: CountingRelay | None
) -> dict[str, int]:
    """``stale`` loads, ``other`` appends, ``stale`` appends; returns what reached HMS
    during ``stale``'s append (when ``relay`` counts it)."""
    loaded = stale.load_table(name)
    other.load_table(name).append(pa.table({"id": [2 * round_no], "v": ["other"]}, schema=SCHEMA))
    if relay is not None:
        relay.reset()
    loaded.append(pa.table({"id": [2 * round_no + 1], "v": ["stale"]}, schema=SCHEMA))
    return dict(relay.reset()) if relay is not None else {}


def test_two_writers_never_lose_a_commit(world: dict[str, Any]) -> None:
    direct, via, via2 = world["direct"], world["via"], world["via2"]
    relay: CountingRelay = world["relay"]
    # Made through an endpoint: with change detection off, only that makes the
    # caches know the table (the second subscriber gets the same update a moment later).
    via.create_namespace("ice_race")
    via.create_table("ice_race.t", schema=SCHEMA)
    wait_until(lambda: via2.table_exists("ice_race.t"), what="the second cache to see the table")
    shapes = [
        ("stale on endpoint, other direct", via, direct, relay),
        ("stale direct, other on endpoint", direct, via, None),
        ("both on endpoints", via, via2, relay),
        ("both on endpoints, swapped", via2, via, relay),
    ]
    started = time.monotonic()
    for round_no in range(ROUNDS):
        label, stale, other, counting = shapes[round_no % len(shapes)]
        reached = _race(stale, other, "ice_race.t", round_no, counting)
        table = direct.load_table("ice_race.t")
        assert len(table.snapshots()) == 2 * (round_no + 1), f"round {round_no} ({label})"
        ids = [row[0][1] for row in _rows(table)]
        assert ids == list(range(2 * round_no + 2)), f"round {round_no} ({label}): a lost commit"
        if counting is not None:
            # The stale writer's check under its lock went to HMS (and failed, then
            # PyIceberg retried): at least two locked get_table calls reached HMS.
            assert reached.get("lock", 0) >= 2 and reached.get("get_table", 0) >= 2, reached
    elapsed = time.monotonic() - started
    record_measurement("PyIceberg race round (2 commits, 1 retry)", elapsed / ROUNDS, "s")
    locked = sum(ep.stats.reasons()["locked"].get("get_table", 0) for ep in world["endpoints"])
    assert locked >= ROUNDS
    assert sum(ep.stats.stale_reloads for ep in world["endpoints"]) >= 1
    assert all(ep.stats.write_waits_timed_out == 0 for ep in world["endpoints"])
    direct.drop_table("ice_race.t")
    direct.drop_namespace("ice_race")


def test_the_locked_get_table_is_forwarded_and_counted(world: dict[str, Any]) -> None:
    via, direct = world["via"], world["direct"]
    endpoint: MetastoreEndpoint = world["endpoints"][0]
    relay: CountingRelay = world["relay"]
    via.create_namespace("ice_lock")
    try:
        table = via.create_table("ice_lock.t", schema=SCHEMA)
        via.load_table("ice_lock.t")
        relay.reset()
        before, reloads = endpoint.stats.by_method(), endpoint.stats.stale_reloads
        table.append(pa.table({"id": [1], "v": ["x"]}, schema=SCHEMA))
        reached = relay.reset()
        after = endpoint.stats.by_method()
        assert endpoint.stats.stale_reloads == reloads  # HMS's table equals the cached one
        assert reached["lock"] == 1 and reached["unlock"] == 1
        assert reached["get_table"] == 1  # the read under the lock, nothing else
        assert reached["alter_table_with_environment_context"] == 1
        gained = after["get_table"].get("locked", 0) - before.get("get_table", {}).get("locked", 0)
        assert gained == 1
        # a write (or, with an IDL that lacks the lock calls, an unknown method)
        assert after["lock"].get("write", 0) + after["lock"].get("unknown", 0) >= 1
        # outside the lock, reads are the cache's again once the commit's reload shows
        assert endpoint.wait_settled(10)
        relay.reset()
        assert _rows(via.load_table("ice_lock.t")) == [(("id", 1), ("v", "x"))]
        assert "get_table" not in relay.reset()
    finally:
        direct.drop_table("ice_lock.t")
        direct.drop_namespace("ice_lock")


def test_reads_are_served_from_the_cache(world: dict[str, Any]) -> None:
    """A read workload (load, scan planning, list) never reaches HMS: even the first
    ``list_tables``' ``get_table_objects_by_name`` of several tables (HMS answers them
    in its database's row order, no ORDER BY) is served, in the order catalogd learnt
    and published once the writes settled (catalogd/freshness/order_learner.py,
    docs/HMS-ENDPOINT.md)."""
    via, direct = world["via"], world["direct"]
    relay: CountingRelay = world["relay"]
    via.create_namespace("ice_read")
    try:
        for name in ("a", "b"):
            table = via.create_table(f"ice_read.{name}", schema=SCHEMA)
            table.append(pa.table({"id": [1], "v": ["x"]}, schema=SCHEMA))
        assert world["endpoints"][0].wait_settled(10)  # the writes' reloads show
        wait_for_table_order(world["subs"][0], "ice_read", 30)
        relay.reset()
        for _ in range(3):
            assert sorted(via.list_tables("ice_read")) == [("ice_read", "a"), ("ice_read", "b")]
            for name in ("a", "b"):
                table = via.load_table(f"ice_read.{name}")
                assert len(list(table.scan().plan_files())) == 1
            assert ("ice_read",) in via.list_namespaces()
        assert relay.reset() == {}
    finally:
        for name in ("a", "b"):
            direct.drop_table(f"ice_read.{name}")
        direct.drop_namespace("ice_read")


def test_a_transaction_s_reads_go_to_hms_until_it_commits(world: dict[str, Any]) -> None:
    """Hive ACID's shape with the Apache Thrift HMS client PyIceberg ships: after
    ``open_txns`` (and a ``lock`` in that transaction) every read is HMS's, until
    ``commit_txn`` ends both."""
    from hive_metastore import ttypes
    from hive_metastore.ThriftHiveMetastore import Client
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    via, direct = world["via"], world["direct"]
    endpoint: MetastoreEndpoint = world["endpoints"][0]
    relay: CountingRelay = world["relay"]
    via.create_namespace("ice_txn")
    via.create_table("ice_txn.t", schema=SCHEMA)
    host, port = endpoint.address
    transport = TTransport.TBufferedTransport(TSocket.TSocket(host, port))
    transport.open()
    try:
        client = Client(TBinaryProtocol.TBinaryProtocol(transport))
        assert endpoint.wait_settled(10)  # the create's reload shows
        relay.reset()
        client.get_table("ice_txn", "t")
        assert "get_table" not in relay.reset()  # no transaction: the cache's
        txn = client.open_txns(ttypes.OpenTxnRequest(1, "test", "localhost")).txn_ids[0]
        component = ttypes.LockComponent(
            type=ttypes.LockType.SHARED_READ, level=ttypes.LockLevel.TABLE,
            dbname="ice_txn", tablename="t",
        )  # fmt: skip
        lock = client.lock(ttypes.LockRequest([component], txn, "test", "localhost"))
        assert lock.state == ttypes.LockState.ACQUIRED
        client.get_table("ice_txn", "t")
        client.get_all_tables("ice_txn")
        reached = relay.reset()
        assert reached["get_table"] == 1 and reached["get_all_tables"] == 1
        client.commit_txn(ttypes.CommitTxnRequest(txn))
        relay.reset()
        client.get_table("ice_txn", "t")
        assert "get_table" not in relay.reset()  # committed: the lock went with it
    finally:
        transport.close()
        direct.drop_table("ice_txn.t")
        direct.drop_namespace("ice_txn")
