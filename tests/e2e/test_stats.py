"""The statistics job against real PySpark and a real HMS, published by a real catalogd.

Two tables with the same rows: Spark's own ``ANALYZE TABLE ... FOR ALL COLUMNS``
on one, ``catalogd stats compute`` (:func:`run_job`) on the other. Exact counts
and min/max (timestamps too, byte for byte: the job runs in another session
time zone than ``ANALYZE``) must be equal, distinct counts within the job's
stated error; Spark must then show the job's figures (``DESCRIBE EXTENDED t
col``, ``EXPLAIN COST``) and a subscriber must see them at the version the
refresh printed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.catalogd_process import CatalogdProcess

from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.stats.compute import NDV_RSE
from catalogd.stats.job import run_job
from subscriber.api import CatalogSubscriber
from subscriber.stats import partition_stats, table_stats

pytestmark = [pytest.mark.hms, pytest.mark.spark, pytest.mark.timeout(600)]

COLUMNS = ["id", "name", "amount", "flag", "d", "dec"]  # with HMS column statistics
# Spark's keys only (HMS 2.3 has no timestamp statistics). ts: before and after
# 1970, with microseconds, all null in partition p=0; tn: all null.
TIMESTAMPS = ["ts", "tn"]
TS_MIN, TS_MAX = "1969-12-10 17:01:33.843751", "1970-01-22 06:58:26.156249"  # ids 1, 299
JOB_TIME_ZONE = "America/Los_Angeles"  # ANALYZE runs in the session default (UTC here)
SPARK = "spark.sql.statistics."


def _ndv_close(ours: int, theirs: int) -> bool:
    # Spark's HLL++ at its default 5 % rsd against ours at NDV_RSE: 3 sigma of each.
    return abs(ours - theirs) <= max(2, 3 * (NDV_RSE + 0.05) * theirs)


@pytest.fixture(scope="module")
def stats_db(spark: Any) -> Iterator[str]:
    db = f"st_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE DATABASE {db}")
    rows = (
        "SELECT id, IF(id % 7 = 0, NULL, concat('n', CAST(id % 50 AS STRING))) AS name, "
        "CAST(id AS DOUBLE) / 4 AS amount, id % 3 = 0 AS flag, "
        "date_add(DATE'2024-01-01', CAST(id % 30 AS INT)) AS d, "
        "CAST(id / 8 AS DECIMAL(10,2)) AS dec, "
        "IF(id % 3 = 0, NULL, timestamp_micros((id - 150) * 12345678901)) AS ts, "
        "CAST(NULL AS TIMESTAMP) AS tn, CAST(id % 3 AS STRING) AS p FROM range(300)"
    )
    for name in ("ours", "theirs"):
        spark.sql(
            f"CREATE TABLE {db}.{name} (id BIGINT, name STRING, amount DOUBLE, flag BOOLEAN, "
            "d DATE, dec DECIMAL(10,2), ts TIMESTAMP, tn TIMESTAMP) "
            "PARTITIONED BY (p STRING) STORED AS PARQUET"
        )
        spark.sql(f"INSERT INTO {db}.{name} PARTITION (p) {rows}")
    spark.sql(f"ANALYZE TABLE {db}.theirs COMPUTE STATISTICS FOR ALL COLUMNS")
    yield db
    spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


@pytest.fixture(scope="module")
def job(spark: Any, hms: EmbeddedMetastore, stats_db: str) -> Any:
    spark.conf.set("spark.sql.session.timeZone", JOB_TIME_ZONE)
    try:
        with MetastoreClient(hms.uri) as client:
            report = run_job(spark, client, stats_db, "ours")
    finally:
        spark.conf.unset("spark.sql.session.timeZone")
    spark.catalog.refreshTable(f"{stats_db}.ours")
    return report


def _params(hms: EmbeddedMetastore, db: str, table: str) -> dict[str, str]:
    with MetastoreClient(hms.uri) as client:
        return dict(client.get_table(db, table).parameters)


def test_job_equals_spark_analyze(hms: EmbeddedMetastore, stats_db: str, job: Any) -> None:
    ours, theirs = _params(hms, stats_db, "ours"), _params(hms, stats_db, "theirs")
    assert ours[SPARK + "numRows"] == theirs[SPARK + "numRows"] == "300"
    assert ours["numRows"] == "300"
    assert ours["numFiles"] == str(job.result.table_level.files) != "0"
    for col in COLUMNS + TIMESTAMPS:
        p = f"{SPARK}colStats.{col}."
        for key in ("nullCount", "min", "max", "avgLen", "maxLen", "version"):
            assert ours.get(p + key) == theirs.get(p + key), (col, key)
        assert _ndv_close(int(ours[p + "distinctCount"]), int(theirs[p + "distinctCount"])), col
    # ANALYZE's timestamp text: UTC whatever the session's zone, six fraction digits.
    assert (ours[SPARK + "colStats.ts.min"], ours[SPARK + "colStats.ts.max"]) == (TS_MIN, TS_MAX)
    assert SPARK + "colStats.tn.min" not in ours and ours[SPARK + "colStats.tn.nullCount"] == "300"
    accurate = json.loads(ours["COLUMN_STATS_ACCURATE"])
    assert accurate["BASIC_STATS"] == "true" and set(accurate["COLUMN_STATS"]) == set(COLUMNS)


def test_job_writes_hms_column_statistics(hms: EmbeddedMetastore, stats_db: str, job: Any) -> None:
    import idl

    request = idl.hive_metastore.TableStatsRequest(
        dbName=stats_db, tblName="ours", colNames=COLUMNS + TIMESTAMPS
    )
    with MetastoreClient(hms.uri) as client:
        objs = {o.colName: o for o in client.call("get_table_statistics_req", request).tableStats}
        part = client.get_partitions_by_names(stats_db, "ours", ["p=0"])[0]
    assert set(objs) == set(COLUMNS)  # none for timestamps: HMS 2.3 has no type for them
    assert objs["id"].statsData.longStats.numNulls == 0
    assert (objs["id"].statsData.longStats.lowValue, objs["id"].statsData.longStats.highValue) == (
        0,
        299,
    )
    assert objs["name"].statsData.stringStats.numNulls == 43  # multiples of 7 in 0..299
    assert objs["flag"].statsData.booleanStats.numTrues == 100
    assert part.parameters["numRows"] == "100"


def test_spark_shows_the_job_stats(spark: Any, stats_db: str, job: Any) -> None:
    rows = spark.sql(f"DESCRIBE EXTENDED {stats_db}.ours id").collect()
    info = {r[0]: r[1] for r in rows}
    assert info["min"] == "0" and info["max"] == "299" and info["num_nulls"] == "0"
    assert int(info["distinct_count"]) == job.result.table_level.columns["id"].distinct
    # Spark parses the job's timestamp min/max as it parses ANALYZE's.
    shown = [
        {r[0]: r[1] for r in spark.sql(f"DESCRIBE EXTENDED {stats_db}.{t} ts").collect()}
        for t in ("ours", "theirs")
    ]
    assert shown[0]["min"] == shown[1]["min"] and shown[0]["max"] == shown[1]["max"], shown
    # Spark shows row counts in plans only with CBO (or plan stats) on.
    spark.conf.set("spark.sql.cbo.enabled", "true")
    try:
        plan = spark.sql(f"EXPLAIN COST SELECT * FROM {stats_db}.ours").collect()[0][0]
    finally:
        spark.conf.unset("spark.sql.cbo.enabled")
    assert "rowCount=300" in plan, plan


DETECTION_INTERVAL_S = 1.0


@pytest.fixture(scope="module")
def server(
    hms: EmbeddedMetastore, stats_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    # Polling HMS plus file listing for the test database's tables (file metadata).
    extra = ["--change-detection", "poll", "--poll-interval", str(DETECTION_INTERVAL_S)]
    extra += ["--file-metadata", stats_db]
    proc = CatalogdProcess(hms.uri, tmp_path_factory.mktemp("catalogd-stats"), extra=extra).start()
    proc.wait_loaded()
    yield proc
    proc.stop()


def test_subscriber_sees_stats_at_the_refresh_version(
    server: CatalogdProcess, stats_db: str, job: Any
) -> None:
    code, answer, out = server.admin("refresh", f"{stats_db}.ours")
    assert code == 0, out
    with CatalogSubscriber(server.endpoint) as sub:
        sub.wait_synced(30)
        sub.wait_for_version(answer["version"], 30)
        name = f"{stats_db}.ours"
        table = sub.get_table(name, load=True)
        stats = table_stats(table)
        assert stats.num_rows == 300
        assert stats.columns["id"].num_distinct == job.result.table_level.columns["id"].distinct
        assert (stats.columns["id"].low, stats.columns["id"].high) == (0, 299)
        assert stats.columns["name"].num_nulls == 43
        # Timestamps: published from Spark's keys (HMS has none), as ANALYZE's text.
        assert (stats.columns["ts"].low, stats.columns["ts"].high) == (TS_MIN, TS_MAX)
        assert stats.columns["ts"].num_nulls == 100
        assert (stats.columns["tn"].low, stats.columns["tn"].high) == (None, None)
        assert table.columns[0].col_stats.num_nulls == 0
        assert table.clustering_columns[0].col_stats.num_distinct_values == 3  # p
        parts = {p.partition_name: partition_stats(p) for p in sub.list_partitions(name)}
        assert parts["p=1"].num_rows == 100 and parts["p=1"].num_files
        # Spark's own ANALYZE is published too (from spark.sql.statistics.*).
        theirs = table_stats(sub.get_table(f"{stats_db}.theirs", load=True))
        assert theirs.num_rows == 300 and theirs.columns["name"].num_nulls == 43


def _standalone_master(tmp: Path) -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    """A Spark standalone master and one worker on loopback (skips when they cannot start)."""
    import pyspark

    home = Path(pyspark.__file__).parent
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java")
    from catalogd.addresses import free_port

    port, ui, wport, wui = free_port(), free_port(), free_port(), free_port()
    cp = f"{home}/jars/*"
    # The worker's executor launcher needs the Scala version (bin/load-spark-env.sh
    # sets it in a Spark distribution; the pyspark wheel runs no such script).
    scala = next((home / "jars").glob("scala-library-*.jar")).name.split("-")[2]
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_SCALA_VERSION": ".".join(scala.split(".")[:2]),
    }
    base = [java, "-Xmx256m", "-cp", cp]
    procs = []
    log = open(tmp / "standalone.log", "ab")  # noqa: SIM115 - handed to the children
    procs.append(
        subprocess.Popen(
            [
                *base,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
            ],
            stdout=log,
            stderr=log,
            env=env,
        )
    )
    url = f"spark://127.0.0.1:{port}"
    procs.append(
        subprocess.Popen(
            [
                *base,
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--port",
                str(wport),
                "--webui-port",
                str(wui),
                "--cores",
                "1",
                "--memory",
                "768m",
                "--work-dir",
                str(tmp / "work"),
                url,
            ],
            stdout=log,
            stderr=log,
            env=env,
        )
    )
    yield url, procs
    for proc in procs:
        proc.terminate()
        proc.wait(20)
    log.close()


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.spark_standalone
def test_job_on_a_standalone_cluster_matches_local(
    hms: EmbeddedMetastore, stats_db: str, job: Any, tmp_path: Path
) -> None:
    from polling import wait_until

    gen = _standalone_master(tmp_path)
    url, procs = next(gen)
    try:
        port = int(url.rsplit(":", 1)[1])
        try:
            wait_until(lambda: _port_open(port), timeout=60, what="standalone master")
        except AssertionError:
            pytest.skip("Spark standalone master did not start here")
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "catalogd.cli",
                "stats",
                "compute",
                f"{stats_db}.ours",
                "--hms",
                hms.uri,
                "--master",
                url,
                "--no-refresh",
                "--json",
                "--conf",
                "spark.executor.memory=512m",
            ],
            capture_output=True,
            text=True,
            timeout=240,
            env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        )
        assert result.returncode == 0, result.stderr[-3000:]
        out = json.loads(result.stdout.strip().splitlines()[-1])
        assert (out["rows"], out["files"], out["bytes"]) == (
            job.result.table_level.rows,
            job.result.table_level.files,
            job.result.table_level.bytes,
        )
        params = _params(hms, stats_db, "ours")
        for name, col in job.result.table_level.columns.items():
            assert params[f"{SPARK}colStats.{name}.distinctCount"] == str(col.distinct)
            assert params[f"{SPARK}colStats.{name}.nullCount"] == str(col.nulls)
    finally:
        next(gen, None)


def _sorted_rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_file_metadata_follows_files_copied_in_and_reads_use_it(
    spark: Any, hms: EmbeddedMetastore, server: CatalogdProcess, stats_db: str, job: Any
) -> None:
    from subscriber.protocol.files import partition_files
    from subscriber.spark import read_table

    name = f"{stats_db}.ours"
    code, answer, out = server.admin("refresh", name, "--files")
    assert code == 0, out
    with MetastoreClient(hms.uri) as client:
        part = client.get_partitions_by_names(stats_db, "ours", ["p=0"])[0]
    directory = Path(part.sd.location.removeprefix("file:"))
    with CatalogSubscriber(server.endpoint) as sub:
        sub.wait_synced(30)
        sub.wait_for_version(answer["version"], 30)
        (before,) = sub.list_partitions(name, {"p": "0"})
        files = partition_files(before)
        on_disk = sorted(p.name for p in directory.iterdir() if not p.name.startswith((".", "_")))
        assert files is not None and [f.relative_path for f in files] == on_disk
        assert partition_stats(before).num_files == int(part.parameters["numFiles"])
        # A plain copy into the partition: HMS knows nothing of it.
        shutil.copy(directory / on_disk[0], directory / "part-copied.parquet")
        code, answer, out = server.admin("refresh", name)
        assert code == 0, out
        sub.wait_for_version(answer["version"], 30)
        (after,) = sub.list_partitions(name, {"p": "0"})
        assert partition_stats(after).num_files == len(on_disk) + 1
        assert "part-copied.parquet" in {f.relative_path for f in partition_files(after) or []}
        spark.catalog.refreshTable(name)
        for spec, where in ((None, "true"), ({"p": "1"}, "p = '1'"), ({"p": "0"}, "p = '0'")):
            expected = _sorted_rows(spark.table(name).where(where))
            assert _sorted_rows(read_table(spark, sub, name, spec, files=True)) == expected
            assert _sorted_rows(read_table(spark, sub, name, spec)) == expected


def test_files_copied_behind_hms_back_reach_subscribers(
    hms: EmbeddedMetastore, server: CatalogdProcess, stats_db: str, job: Any
) -> None:
    import time

    from polling import wait_until

    from subscriber.protocol.files import partition_files

    name = f"{stats_db}.ours"
    with MetastoreClient(hms.uri) as client:
        part = client.get_partitions_by_names(stats_db, "ours", ["p=2"])[0]
    directory = Path(part.sd.location.removeprefix("file:"))
    with CatalogSubscriber(server.endpoint) as sub:
        sub.wait_synced(30)
        sub.get_table(name, load=True)

        def names() -> set[str]:
            (p,) = sub.list_partitions(name, {"p": "2"})
            return {f.relative_path for f in partition_files(p) or []}

        wait_until(lambda: bool(names()), timeout=60, what="file metadata of p=2")
        source = next(p for p in directory.iterdir() if p.name.endswith(".parquet"))
        copied = time.monotonic()
        shutil.copy(source, directory / "part-behind-hms.parquet")
        # Two detection intervals, plus slack for a loaded two-core machine.
        wait_until(
            lambda: "part-behind-hms.parquet" in names(),
            timeout=2 * DETECTION_INTERVAL_S + 30,
            what="the copied file in the subscriber's file list",
        )
        print(f"copied file reached the subscriber in {time.monotonic() - copied:.2f}s")
        (p,) = sub.list_partitions(name, {"p": "2"})
        assert partition_stats(p).num_files == len(names())


def test_incremental_recomputes_only_partitions_whose_files_changed(
    spark: Any, hms: EmbeddedMetastore, stats_db: str, job: Any
) -> None:
    with MetastoreClient(hms.uri) as client:
        run_job(spark, client, stats_db, "ours")  # everything current
        again = run_job(spark, client, stats_db, "ours", incremental=True)
        assert again.partitions_skipped == 3 and again.hms_calls == 0
        part = client.get_partitions_by_names(stats_db, "ours", ["p=1"])[0]
        directory = Path(part.sd.location.removeprefix("file:"))
        source = next(p for p in directory.iterdir() if p.name.endswith(".parquet"))
        shutil.copy(source, directory / "part-incremental.parquet")
        spark.catalog.refreshTable(f"{stats_db}.ours")
        report = run_job(spark, client, stats_db, "ours", incremental=True)
        assert report.partitions_skipped == 2
        assert [p.name for p in report.result.partitions] == ["p=1"]
        part = client.get_partitions_by_names(stats_db, "ours", ["p=1"])[0]
        rows_p1 = spark.table(f"{stats_db}.ours").where("p = '1'").count()
        assert rows_p1 > 100 and part.parameters["numRows"] == str(rows_p1)
        on_disk = [p for p in directory.iterdir() if not p.name.startswith((".", "_"))]
        assert part.parameters["numFiles"] == str(len(on_disk))
        table = client.get_table(stats_db, "ours")
    total = spark.table(f"{stats_db}.ours").count()
    assert table.parameters["numRows"] == str(total)
