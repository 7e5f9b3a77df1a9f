"""pytest plugin: a real Hive Metastore, a real Spark session, and a warehouse made by both.

Session-scoped fixtures (each started once, on first use, stopped at the end):

* ``hms`` -- an :class:`EmbeddedMetastore` on Derby in a temp dir.
* ``spark`` -- a ``SparkSession`` (``local[1]``, Hive support) whose catalog is ``hms``.
* ``warehouse`` -- a :class:`WarehouseSpec`: databases, tables, a view, partitions
  made with Spark SQL the way users make them, plus roles, grants and a function
  made over Thrift where Spark cannot. Treat it as read-only: tests that write
  to ``hms`` use their own database names and drop them.
* ``hms_locks`` -- an :class:`EmbeddedMetastore` on Derby whose locks and
  transactions work (:mod:`support.hms_locks`: what PyIceberg commits need).
* ``hms_postgres`` -- an :class:`EmbeddedMetastore` on a fresh PostgreSQL database
  (random name, dropped at the end).

Tests that use these fixtures are marked ``hms``/``spark``/``postgres`` here
automatically, so ``-m "not spark"`` deselects them. Start-up artefacts (class
archive, PostgreSQL DDL) are cached in pytest's cache dir (``--hms-cache-dir``; with
``-p no:cacheprovider``, in a temp dir for this run only).
Start-up times, and whatever tests note with
:func:`support.measurements.record_measurement`, are printed in the terminal summary.
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore, PostgresBackend
from support.hms_locks import start_locking_metastore
from support.measurements import MEASUREMENTS, record_measurement
from support.warehouse import WarehouseSpec, populate_warehouse

POSTGRES_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres connect_timeout=10"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & {"spark", "warehouse"}:
            item.add_marker(pytest.mark.spark)
        if names & {"hms", "hms_client", "spark", "warehouse", "hms_postgres", "hms_locks"}:
            item.add_marker(pytest.mark.hms)
        if "hms_postgres" in names:
            item.add_marker(pytest.mark.postgres)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if MEASUREMENTS:
        terminalreporter.section("measured (real HMS / Spark)")
        for name, value in MEASUREMENTS.items():
            terminalreporter.write_line(f"{name}: {value}")


@pytest.fixture(scope="session")
def hms_cache_dir(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    option = pytestconfig.getoption("hms_cache_dir", None)
    if option:
        return Path(option).resolve()
    cache = getattr(pytestconfig, "cache", None)  # None under -p no:cacheprovider
    if cache is None:
        return tmp_path_factory.mktemp("hms-cache")  # kept for this run only
    return cache.mkdir("catalogd-hms")


@pytest.fixture(scope="session")
def hms(
    tmp_path_factory: pytest.TempPathFactory, hms_cache_dir: Path
) -> Iterator[EmbeddedMetastore]:
    metastore = EmbeddedMetastore(tmp_path_factory.mktemp("hms"), cache_dir=hms_cache_dir)
    with metastore:
        record_measurement("HMS start (Derby)", metastore.startup_seconds or 0.0, "s")
        yield metastore


@pytest.fixture(scope="session")
def hms_locks(
    tmp_path_factory: pytest.TempPathFactory, hms_cache_dir: Path
) -> Iterator[EmbeddedMetastore]:
    started = time.monotonic()
    data_dir = tmp_path_factory.mktemp("hms-locks")
    metastore = start_locking_metastore(data_dir, cache_dir=hms_cache_dir)
    try:
        record_measurement("HMS start with locks (Derby, twice)", time.monotonic() - started, "s")
        yield metastore
    finally:
        metastore.stop()


@pytest.fixture
def hms_client(hms: EmbeddedMetastore) -> Iterator[MetastoreClient]:
    with MetastoreClient(hms.uri, retries=1, backoff_s=0.05) as client:
        yield client


@pytest.fixture(scope="session")
def spark(hms: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    work = tmp_path_factory.mktemp("spark")
    log_conf = work / "log4j2.properties"
    log_conf.write_text(
        "rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\n"
        "appender.console.type = Console\nappender.console.name = console\n"
        "appender.console.target = SYSTEM_ERR\n"
        "appender.console.layout.type = PatternLayout\n"
        "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n\n"
    )
    # C1 only: the tests' queries are tiny, and it saves a few seconds of start-up.
    java_opts = f"-XX:TieredStopAtLevel=1 -Dlog4j.configurationFile=file:{log_conf}"
    started = time.monotonic()
    session = (
        SparkSession.builder.master("local[1]")
        .appName("catalogd-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.local.dir", str(work / "local"))
        .config("spark.pyspark.python", sys.executable)
        .config("spark.hadoop.hive.metastore.uris", hms.uri)
        .config("spark.sql.warehouse.dir", f"file:{hms.warehouse_dir}")
        .enableHiveSupport()
        .getOrCreate()
    )
    record_measurement("Spark session start", time.monotonic() - started, "s")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def warehouse(
    spark: Any, hms: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory
) -> WarehouseSpec:
    spec = populate_warehouse(spark, hms, tmp_path_factory.mktemp("external"))
    record_measurement("warehouse population", spec.timings["total_s"], "s")
    return spec


@pytest.fixture(scope="session")
def hms_postgres(
    tmp_path_factory: pytest.TempPathFactory, hms_cache_dir: Path
) -> Iterator[EmbeddedMetastore]:
    import psycopg

    database = f"catalogd_hms_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}"'.encode())
    try:
        metastore = EmbeddedMetastore(
            tmp_path_factory.mktemp("hms-pg"),
            backend=PostgresBackend(database=database),
            cache_dir=hms_cache_dir,
        )
        with metastore:
            record_measurement("HMS start (PostgreSQL)", metastore.startup_seconds or 0.0, "s")
            yield metastore
    finally:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'.encode())
