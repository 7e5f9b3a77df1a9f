"""catalogd against each Hive Metastore it supports: 2.3 (pyspark wheel), 3.1.3, 4.0.1.

For each version, an embedded HMS of that version (Derby) gets one catalog written
over HMS Thrift (:mod:`support.hms_versions`: databases, partitioned, external and
view tables, partitions with odd values, column statistics, functions, a role and
grants); on 3.1, Spark SQL (the wheel's Hive 2.3 client, in a child process) adds a
table and rows the way users do. ``catalogd serve`` loads it, a subscriber syncs,
and every cached object must equal what that HMS answers, field by field, read raw
with the calls the version has (the oracle: :class:`support.hms_versions.RawHms`).
Then a table and a partition written over Thrift must reach the cache without an
admin command: by notification events on 2.3 (catalogd's listener) and 3.1 (the
stock ``DbNotificationListener``), by polling on 4.x (no listener on Maven Central).

Spark SQL is not run on 4.x: HMS 4.0 has no ``get_table``, which Spark's built-in
Hive 2.3 client calls for every table.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until
from support.catalogd_process import CatalogdProcess
from support.hms_versions import ROLE, RawHms, populate
from support.measurements import record_measurement
from support.spark_sql_server import SparkSql

import idl
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.api import CatalogSubscriber
from subscriber.protocol.hms_partition import rebuild
from subscriber.protocol.keys import database_of

pytestmark = [pytest.mark.hms, pytest.mark.timeout(420)]
hms = idl.hive_metastore


@pytest.fixture(scope="module", params=["2.3", "3.1", "4.x"])
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, hms_cache_dir: Path
) -> Iterator[dict[str, Any]]:
    version: str = request.param
    root = tmp_path_factory.mktemp(f"hms-{version}")
    metastore = EmbeddedMetastore(
        root / "hms", version=version, cache_dir=hms_cache_dir, notification_events=True
    )
    with metastore:
        record_measurement(f"HMS {version} start (Derby)", metastore.startup_seconds or 0.0, "s")
        warehouse = f"file:{metastore.warehouse_dir}"
        dbs = populate(metastore.uri, warehouse, "mx")
        if version == "3.1":
            spark = SparkSql(metastore.uri, metastore.warehouse_dir, root / "spark", {})
            try:
                spark.sql(
                    "CREATE TABLE mx_b.sparked (id INT, v STRING, d STRING) USING parquet "
                    "PARTITIONED BY (d)"
                )
                spark.sql("INSERT INTO mx_b.sparked PARTITION (d='one') VALUES (1, 'a')")
                spark.sql("INSERT INTO mx_b.sparked PARTITION (d='two') VALUES (2, 'b')")
            finally:
                spark.close()
        server = CatalogdProcess(
            metastore.uri, root / "catalogd", extra=["--poll-interval", "0.5"]
        ).start()
        raw = RawHms(metastore.uri, version)
        try:
            server.wait_loaded()
            with CatalogSubscriber(server.endpoint) as sub:
                sub.wait_synced(30)
                yield {"version": version, "hms": metastore, "sub": sub, "raw": raw, "dbs": dbs}
        finally:
            raw.close()
            assert server.stop() == 0


def cached_keys(sub: CatalogSubscriber) -> set[str]:
    return {e.key for e in sub._machine.cache.view.entries() if database_of(e.key)}


def cached_partitioned(sub: CatalogSubscriber, count: int) -> set[str]:
    """Tables of ``mx_b`` with ``count`` partitions in the cache."""
    return {
        f"mx_b.{t}"
        for t in sub.list_tables("mx_b")
        if len(sub.list_partitions(f"mx_b.{t}")) == count
    }


def expected_keys(raw: RawHms) -> set[str]:
    """Every database object key of HMS's default catalog, from raw reads."""
    keys = set()
    for db in raw.raw.get_all_databases():
        keys.add(f"DATABASE:{db}")
        for table in raw.tables(db):
            kind = "VIEW" if table.tableType == "VIRTUAL_VIEW" else "TABLE"
            keys.add(f"{kind}:{db}.{table.tableName}")
            if table.partitionKeys:
                names = raw.raw.get_partition_names(db, table.tableName, -1)
                keys.update(f"HDFS_PARTITION:{db}.{table.tableName}:{n}" for n in names)
        keys.update(f"FUNCTION:{db}.{f}" for f in raw.raw.get_functions(db, "*"))
    return keys


def test_the_cache_equals_the_metastore_field_by_field(world: dict[str, Any]) -> None:
    sub: CatalogSubscriber = world["sub"]
    raw: RawHms = world["raw"]
    wait_until(
        lambda: {k.split("(")[0] for k in cached_keys(sub)} == expected_keys(raw),
        what="every object loaded",
    )
    tables = 0
    for db in raw.raw.get_all_databases():
        assert sub.get_database(db).metastore_db == raw.raw.get_database(db), db
        for table in raw.tables(db):
            name = f"{db}.{table.tableName}"
            cached = sub.get_table(name, load=True)
            assert cached.metastore_table == table, name
            tables += 1
            if table.partitionKeys:
                got = {
                    p.partition_name: rebuild(cached.metastore_table, p)
                    for p in sub.list_partitions(name)
                }
                want = raw.partitions(db, table.tableName)
                assert len(got) == len(want) and list(got.values()) != []
                for part in want:
                    assert part in got.values(), (name, part.values)
    assert tables >= 4 + (world["version"] == "3.1")
    functions = [
        sub._decode(e).fn.hms_function
        for e in sub._machine.cache.view.entries()
        if e.key.startswith("FUNCTION:")
    ]
    want_functions = [f for f in raw.raw.get_all_functions().functions or []]
    assert sorted(functions, key=repr) == sorted(want_functions, key=repr)
    # Grants: the role's, as HMS lists them, against the cached privileges.
    granted = raw.raw.list_privileges(ROLE, hms.PrincipalType.ROLE, hms.HiveObjectRef())
    want_grants = {
        (p.hiveObject.dbName, p.hiveObject.objectName, p.grantInfo.privilege.lower())
        for p in granted
    }
    assert len(want_grants) == 2
    cached_grants = {(p.db, p.table, p.level.lower()) for p in sub.privileges_of(ROLE, "ROLE")}
    assert cached_grants == want_grants
    # Column statistics (TAB_COL_STATS), as HMS answers get_table_statistics_req.
    (stats,) = raw.column_stats("mx_a", "ext", ["x"])
    column = sub.get_table("mx_a.ext").columns[0]
    assert column.col_stats.num_distinct_values == stats.statsData.longStats.numDVs
    assert column.col_stats.num_nulls == stats.statsData.longStats.numNulls


def test_changes_reach_the_cache_without_admin_commands(world: dict[str, Any]) -> None:
    sub: CatalogSubscriber = world["sub"]
    raw: RawHms = world["raw"]
    metastore: EmbeddedMetastore = world["hms"]
    assert metastore.notification_events == (world["version"] != "4.x")
    events = raw.raw.get_current_notificationEventId().eventId
    assert (events > 0) == metastore.notification_events
    table = thrift_table(
        "mx_b", "later", f"file:{metastore.warehouse_dir}/later", columns=[("x", "int")],
        partition_keys=[("p", "string")],
    )  # fmt: skip
    started = time.monotonic()
    raw.raw.create_table(table)
    raw.raw.add_partitions(thrift_partitions(table, [["a"], ["b"]]))
    wait_until(lambda: "mx_b.later" in cached_partitioned(sub, 2), what="new table seen")
    record_measurement(
        f"HMS {world['version']}: new table + partitions in the cache",
        time.monotonic() - started,
        "s",
    )
    cached = sub.get_table("mx_b.later", load=True)
    assert cached.metastore_table == raw.table("mx_b", "later")
    if metastore.notification_events:
        assert raw.raw.get_current_notificationEventId().eventId > events


def test_serve_runs_the_embedded_version_it_is_told(tmp_path: Path) -> None:
    server = CatalogdProcess(
        "", tmp_path / "catalogd", extra=["--embedded-hms-version", "4.x", "--poll-interval", "0.5"]
    ).start(timeout=180)
    try:
        code, status, _ = server.admin("status")
        assert code == 0, status
        embedded = status["detail"]["hms"]["embedded"]
        assert embedded["version"] == "4.x" and embedded["state"] == "running"
        assert embedded["notification_events"] is False
        assert (tmp_path / "catalogd" / "hms-4.x" / "metastore_db").is_dir()
        uri = status["detail"]["hms"]["address"]
        with CatalogSubscriber(server.endpoint) as sub:
            sub.wait_synced(30)
            populate(uri, f"file:{tmp_path}/wh", "sv")
            wait_until(
                lambda: (
                    "sv_a" in sub.list_databases()
                    and "events" in sub.list_tables("sv_a")
                    and len(sub.list_partitions("sv_a.events")) == 4
                ),
                what="polled in",
            )
    finally:
        assert server.stop() == 0
