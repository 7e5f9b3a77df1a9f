"""Iceberg tables in Spark through the HMS endpoint: same results, no lost snapshot.

Iceberg publishes no Spark runtime that loads on Spark 4.3 (the newest,
``iceberg-spark-runtime-4.1_2.13`` 1.12.0, fails there with an
IncompatibleClassChangeError), so this runs Spark 4.1 (pyspark 4.1.4) from a venv of
its own; ``.ci/fetch-spark-clients`` (``make spark-clients``) makes it and fetches
the runtime. Missing, the test fails: the set-up provides them.

Topology (all real): the session's HMS 2.3 with a working lock manager
(``hms_locks``), a :class:`CountingRelay` in front of it, catalogd loading from HMS
with change detection off (only the endpoints' reloads make a change visible), two
subscribers in this process, each with an HMS endpoint forwarding to the relay (two
hosts' sidecars), and two Spark sessions (child processes):

* ``a``: catalog ``ice`` = Iceberg's ``SparkCatalog`` (``type=hive``) at endpoint 1,
  catalog ``dir`` = the same at the relay (direct to HMS);
* ``b``: catalog ``ice`` at endpoint 2.

Iceberg's Hive catalog commits as ``lock`` -> ``check_lock`` -> ``get_table`` (is
``metadata_location`` still my base?) -> ``alter_table`` -> ``unlock`` on one
connection; the endpoint forwards every read of a connection holding a lock.
Spark's table cache is off (``cache-enabled=false``) so every statement
loads its table from the metastore.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.call_record import CallRecorder, Step, markdown
from support.catalogd_process import CatalogdProcess
from support.hms_relay import CountingRelay
from support.measurements import MEASUREMENTS, record_measurement
from support.spark_clients import IcebergSpark, SparkClientMissing, iceberg_spark
from support.spark_sql_server import SparkSql

from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.api import CatalogSubscriber
from subscriber.metastore import MetastoreEndpoint

pytestmark = [pytest.mark.hms, pytest.mark.spark, pytest.mark.timeout(600)]

APPENDS = 6  # per session in the race
STALE_ROUNDS = 3


def _iceberg_conf(spark: IcebergSpark, catalogs: dict[str, str], warehouse: Path) -> dict:
    conf = {
        "spark.jars": spark.runtime_jar,
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
    }
    for name, uri in catalogs.items():
        prefix = f"spark.sql.catalog.{name}"
        conf |= {
            prefix: "org.apache.iceberg.spark.SparkCatalog",
            f"{prefix}.type": "hive",
            f"{prefix}.uri": uri,
            f"{prefix}.warehouse": f"file:{warehouse}",
            f"{prefix}.cache-enabled": "false",
        }
    return conf


@pytest.fixture(scope="module")
def world(
    hms_locks: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    try:
        spark = iceberg_spark()
    except SparkClientMissing as exc:
        pytest.fail(str(exc))  # the set-up fetches it: missing is a broken set-up
    root = tmp_path_factory.mktemp("iceberg-spark")
    relay = CountingRelay(hms_locks.uri)
    catalogd = CatalogdProcess(
        hms_locks.uri, root / "catalogd", extra=["--change-detection", "off"]
    )
    subs: list[CatalogSubscriber] = []
    endpoints: list[MetastoreEndpoint] = []
    sessions: list[SparkSql] = []
    try:
        catalogd.start()
        catalogd.wait_loaded()
        for _ in range(2):
            sub = CatalogSubscriber(catalogd.endpoint).start()
            subs.append(sub)
            sub.wait_synced(30)
            endpoints.append(sub.metastore_endpoint(upstream=relay.uri).start())
        warehouse = root / "warehouse"
        for label, catalogs in (
            ("a", {"ice": endpoints[0].uri, "dir": relay.uri}),
            ("b", {"ice": endpoints[1].uri}),
        ):
            conf = _iceberg_conf(spark, catalogs, warehouse)
            session = SparkSql(
                relay.uri, hms_locks.warehouse_dir, root / label, conf, python=spark.python
            )
            sessions.append(session)
            record_measurement(
                f"Spark {spark.pyspark_version} + Iceberg start", session.startup_s, "s"
            )
        out = Path(os.environ.get("SPARK_CLIENTS_RECORD_DIR") or root / "recorded")
        out.mkdir(parents=True, exist_ok=True)
        yield {
            "relay": relay,
            "endpoints": endpoints,
            "a": sessions[0],
            "b": sessions[1],
            "out": out,
        }
    finally:
        for closer in [*sessions, *endpoints, *subs]:
            closer.close()
        catalogd.stop()
        relay.close()


SCENARIO = [  # {t} is {c}.{ns}.t
    "CREATE NAMESPACE {c}.{ns}",
    "CREATE TABLE {t} (id bigint, v string) USING iceberg",
    "INSERT INTO {t} VALUES (1, 'a'), (2, 'b')",
    "INSERT INTO {t} VALUES (3, 'c')",
    "INSERT INTO {t} VALUES (4, 'd')",
    "SELECT * FROM {t} ORDER BY id",
    "SELECT count(*) FROM {t}.snapshots",
    "CALL {c}.system.rewrite_data_files(table => '{ns}.t', options => map('min-input-files', '2'))",
    "SELECT count(*) FROM {t}.snapshots",
    "SELECT count(*) FROM {t}.files",
    "CALL {c}.system.expire_snapshots(table => '{ns}.t',"
    " older_than => TIMESTAMP '2100-01-01 00:00:00', retain_last => 1)",
    "SELECT count(*) FROM {t}.snapshots",
    "SELECT * FROM {t} ORDER BY id",
    "ALTER TABLE {t} ADD COLUMN w bigint",
    "INSERT INTO {t} VALUES (5, 'e', 50)",
    "SELECT * FROM {t} ORDER BY id",
    "SHOW TABLES IN {c}.{ns}",
    "DESCRIBE TABLE {t}",
    "DROP TABLE {t} PURGE",
    "SHOW TABLES IN {c}.{ns}",
    "DROP NAMESPACE {c}.{ns}",
]


def _scenario(spark: SparkSql, catalog: str, ns: str, recorder: CallRecorder) -> list[Step]:
    """Create, append, compact, expire, evolve, drop: each statement of ``SCENARIO``
    (as written there) with its answer (rows, or the error) and calls."""
    seen = []
    for template in SCENARIO:
        step = recorder.run(spark, template.format(t=f"{catalog}.{ns}.t", c=catalog, ns=ns))
        seen.append(replace(step, statement=template, answer=_anonymous(step.answer, ns)))
    return seen


def _anonymous(value: Any, ns: str) -> Any:
    if isinstance(value, str):
        return value.replace(ns, "NS")
    if isinstance(value, list | tuple):
        return type(value)(_anonymous(v, ns) for v in value)
    return value


def test_an_iceberg_table_s_life_is_the_same_through_the_endpoint(world: dict[str, Any]) -> None:
    a: SparkSql = world["a"]
    endpoint: MetastoreEndpoint = world["endpoints"][0]
    relay: CountingRelay = world["relay"]
    started = time.monotonic()
    direct = _scenario(a, "dir", "ice_direct", CallRecorder(relay))
    record_measurement("Iceberg scenario, direct", time.monotonic() - started, "s")
    started = time.monotonic()
    via = _scenario(a, "ice", "ice_via", CallRecorder(relay, endpoint, settle=False))
    record_measurement("Iceberg scenario, endpoint", time.monotonic() - started, "s")
    out = world["out"] / "iceberg-spark.md"
    out.write_text(f"Spark 4.1.4, Iceberg 1.12.0, HMS 2.3.10\n\n{markdown(direct, via)}")
    MEASUREMENTS["Iceberg on Spark: calls recorded in"] = str(out)
    errors = [(step.statement, step.answer) for step in direct if isinstance(step.answer, tuple)]
    assert not errors, errors
    for d, v in zip(direct, via, strict=True):
        assert v.answer == d.answer, d.statement
    answers = {step.statement: step.answer for step in direct}
    snapshots = [s.answer for s in direct if s.statement == "SELECT count(*) FROM {t}.snapshots"]
    assert snapshots == [[["3"]], [["4"]], [["1"]]]  # 3 appends, a rewrite, expired to 1
    assert answers["SELECT * FROM {t} ORDER BY id"][-1] == ["5", "e", "50"]
    assert endpoint.stats.write_waits_timed_out == 0
    by_method = endpoint.stats.by_method()
    assert by_method["get_table"].get("served", 0) > 0  # loads came from the cache
    assert by_method["get_table"].get("locked", 0) >= 6  # each commit's check under its lock


def test_two_sessions_appending_lose_no_snapshot(world: dict[str, Any]) -> None:
    """Stale bases, then a free-for-all. Each round ``a`` appends straight to HMS
    (``dir``: no cache hears of it, change detection is off), then ``b`` appends
    through endpoint 2, whose cache still shows the table before ``a``'s commit: the
    base Iceberg loads is stale, its check under the lock (HMS's ``get_table``) must
    see ``a``'s commit, fail, and retry from a fresh base (the forwarded read showed
    the cache behind: a reload). Then both append at once, each through its endpoint."""
    a: SparkSql = world["a"]
    b: SparkSql = world["b"]
    endpoints: list[MetastoreEndpoint] = world["endpoints"]
    t = "ice_race.t"
    a.sql("CREATE NAMESPACE ice.ice_race")
    retries = "'commit.retry.num-retries'='50', 'commit.retry.min-wait-ms'='50'"
    a.sql(f"CREATE TABLE ice.{t} (id bigint, who string) USING iceberg TBLPROPERTIES ({retries})")
    assert endpoints[0].wait_settled(10)
    locks_before = _locks(endpoints)
    for round_no in range(STALE_ROUNDS):
        a.sql(f"INSERT INTO dir.{t} VALUES ({2 * round_no}, 'a')")
        b.sql(f"INSERT INTO ice.{t} VALUES ({2 * round_no + 1}, 'b')")
        _, rows = a.query(f"SELECT id FROM dir.{t} ORDER BY id")
        assert [int(r[0]) for r in rows] == list(range(2 * round_no + 2)), f"round {round_no}"
    # b's commits are the endpoints' only locks here; each retry took one more
    stale_retries = _locks(endpoints) - locks_before - STALE_ROUNDS
    record_measurement(f"Iceberg stale-base rounds: commits retried (of {STALE_ROUNDS})",
                       stale_retries, "")  # fmt: skip
    assert stale_retries >= STALE_ROUNDS  # every stale commit failed its check once

    acknowledged: dict[str, list[int]] = {"a": [], "b": []}
    failed: dict[str, list[str]] = {"a": [], "b": []}

    def appends(label: str, spark: SparkSql, base: int) -> None:
        for i in range(APPENDS):
            answer = spark.attempt(f"INSERT INTO ice.{t} VALUES ({base + i}, '{label}')")
            if "error" in answer:
                failed[label].append(answer["error"][:300])
            else:
                acknowledged[label].append(base + i)

    locks_before = _locks(endpoints)
    started = time.monotonic()
    threads = [
        threading.Thread(target=appends, args=("a", a, 1000)),
        threading.Thread(target=appends, args=("b", b, 2000)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    record_measurement(f"Iceberg race, {2 * APPENDS} appends", time.monotonic() - started, "s")
    # a commit that found another one's metadata under its lock retried: one more lock
    retried = _locks(endpoints) - locks_before - 2 * APPENDS
    record_measurement(f"Iceberg race, commits retried (of {2 * APPENDS})", retried, "")
    assert not failed["a"] and not failed["b"], failed
    expected = sorted(
        [*range(2 * STALE_ROUNDS), *acknowledged["a"], *acknowledged["b"]]
    )  # fmt: skip
    for spark, catalog in ((a, "dir"), (a, "ice"), (b, "ice")):
        _, rows = spark.query(f"SELECT id FROM {catalog}.{t} ORDER BY id")
        assert [int(r[0]) for r in rows] == expected, catalog
        _, count = spark.query(f"SELECT count(*) FROM {catalog}.{t}.snapshots")
        assert count == [[str(len(expected))]], catalog  # one snapshot per append, none lost
    locked = sum(ep.stats.reasons()["locked"].get("get_table", 0) for ep in endpoints)
    assert locked >= 2 * (APPENDS + STALE_ROUNDS)
    a.sql(f"DROP TABLE ice.{t} PURGE")
    a.sql("DROP NAMESPACE ice.ice_race")


def _locks(endpoints: list[MetastoreEndpoint]) -> int:
    return sum(ep.stats.by_method().get("lock", {}).get("write", 0) for ep in endpoints)


def test_iceberg_metadata_reads_are_served_from_the_cache(world: dict[str, Any]) -> None:
    a: SparkSql = world["a"]
    relay: CountingRelay = world["relay"]
    endpoint: MetastoreEndpoint = world["endpoints"][0]
    a.sql("CREATE NAMESPACE ice.ice_read")
    for name in ("x", "y"):
        a.sql(f"CREATE TABLE ice.ice_read.{name} (id bigint) USING iceberg")
        a.sql(f"INSERT INTO ice.ice_read.{name} VALUES (1), (2)")
    assert endpoint.wait_settled(10)
    reads = [
        "SELECT count(*) FROM {c}.ice_read.x",
        "SELECT * FROM {c}.ice_read.y ORDER BY id",
        "SELECT count(*) FROM {c}.ice_read.x.snapshots",
        "DESCRIBE TABLE {c}.ice_read.y",
        "SHOW TABLES IN {c}.ice_read",
        "SHOW NAMESPACES IN {c}",
    ]
    expected = {s: a.query(s.format(c="dir"))[1] for s in reads}
    relay.reset()
    before = endpoint.stats.by_method()
    for _ in range(3):
        for statement in reads:
            assert a.query(statement.format(c="ice"))[1] == expected[statement], statement
    reached = dict(relay.reset())
    after = endpoint.stats.by_method()
    served = forwarded = 0
    for method, counts in after.items():
        for what, n in counts.items():
            gained = n - before.get(method, {}).get(what, 0)
            if what == "served":
                served += gained
            else:
                forwarded += gained
    record_measurement(
        "Iceberg read workload: calls served", 100 * served / (served + forwarded), "%"
    )
    tables = after["get_table"].get("served", 0) - before["get_table"].get("served", 0)
    record_measurement("Iceberg read workload: get_table served", tables, "calls")
    (world["out"] / "iceberg-spark-reads.json").write_text(
        json.dumps({"reached": reached, "before": before, "after": after}, indent=1)
    )
    assert after["get_table"]["served"] - before["get_table"]["served"] >= 3 * 4
    # Every read is the cache's, Iceberg's SHOW TABLES too: it asks
    # get_table_names_by_filter('hive_filter_field_params__table_type like "ICEBERG"')
    # (Iceberg 1.12 HiveCatalog.listTables), answered in HMS's HashSet order.
    assert reached == {}, reached
    assert forwarded == 0
    for name in ("x", "y"):
        a.sql(f"DROP TABLE ice.ice_read.{name} PURGE")
    a.sql("DROP NAMESPACE ice.ice_read")
