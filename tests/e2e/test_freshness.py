"""Spark DDL reaches subscribers with no admin command: change detection by polling.

(HMS notification events need a listener on the HMS classpath; the events mode
is tested where the embedded HMS runs with catalogd's listener.)
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from catalogd_process import CatalogdProcess
from hms_support import record_measurement

from catalogd.metastore.embedded import EmbeddedMetastore
from subscriber.api import CatalogSubscriber
from subscriber.errors import NotFoundError

pytestmark = [pytest.mark.hms, pytest.mark.spark, pytest.mark.timeout(900)]

POLL_INTERVAL = 0.5
MARGIN = 20.0  # generous: a shared 2-core machine also runs Spark and HMS


def visible(condition: Callable[[], bool], what: str) -> float:
    """Seconds until ``condition`` holds (fails after the poll interval plus a margin)."""
    started = time.monotonic()
    deadline = started + POLL_INTERVAL + MARGIN
    while True:
        try:
            if condition():
                return time.monotonic() - started
        except NotFoundError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not visible within {POLL_INTERVAL + MARGIN}s")
        time.sleep(0.02)


@pytest.fixture(scope="module")
def polling_catalogd(
    hms: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CatalogdProcess]:
    proc = CatalogdProcess(
        hms.uri,
        tmp_path_factory.mktemp("catalogd-poll"),
        extra=["--change-detection", "poll", "--poll-interval", str(POLL_INTERVAL)],
    ).start()
    proc.wait_loaded()
    yield proc
    proc.stop()


def partitions(sub: CatalogSubscriber, table: str) -> list[str]:
    return [p.partition_name for p in sub.list_partitions(table)]


def test_spark_ddl_of_each_kind_reaches_subscribers(
    spark: Any, polling_catalogd: CatalogdProcess
) -> None:
    db = f"fresh_{uuid.uuid4().hex[:6]}"
    table = f"{db}.clicks"
    times: dict[str, float] = {}
    with CatalogSubscriber(polling_catalogd.endpoint) as sub:
        sub.wait_synced(30)

        def step(name: str, sql: str, condition: Callable[[], bool]) -> None:
            spark.sql(sql)
            times[name] = visible(condition, name)

        step("create database", f"CREATE DATABASE {db}", lambda: db in sub.list_databases())
        step(
            "create table",
            f"CREATE TABLE {table} (id BIGINT, url STRING) PARTITIONED BY (dt STRING) "
            "STORED AS PARQUET",
            lambda: (
                [
                    c.columnName
                    for c in sub.get_table(table, load=True, timeout=5).clustering_columns
                ]
                == ["dt"]
            ),
        )
        step(
            "insert into a new partition",
            f"INSERT INTO {table} PARTITION (dt='2024-01-01') VALUES (1, 'a')",
            lambda: partitions(sub, table) == ["dt=2024-01-01"],
        )
        step(
            "alter table add partition",
            f"ALTER TABLE {table} ADD PARTITION (dt='2024-01-02')",
            lambda: partitions(sub, table) == ["dt=2024-01-01", "dt=2024-01-02"],
        )
        step(
            "alter table drop partition",
            f"ALTER TABLE {table} DROP PARTITION (dt='2024-01-01')",
            lambda: partitions(sub, table) == ["dt=2024-01-02"],
        )
        step(
            "alter table properties",
            f"ALTER TABLE {table} SET TBLPROPERTIES ('team'='web')",
            lambda: sub.get_table(table).metastore_table.parameters.get("team") == "web",
        )
        step(
            "create view",
            f"CREATE VIEW {db}.v AS SELECT id FROM {table}",
            lambda: "v" in sub.list_tables(db),
        )
        step("drop table", f"DROP TABLE {table}", lambda: "clicks" not in sub.list_tables(db))
        step("drop database", f"DROP DATABASE {db} CASCADE", lambda: db not in sub.list_databases())
    for name, seconds in times.items():
        record_measurement(f"poll: {name} visible", seconds, "s")
