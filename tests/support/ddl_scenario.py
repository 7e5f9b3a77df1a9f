"""Spark DDL of each kind, and how long each takes to reach a subscriber.

Shared by the polling and the events freshness tests, so both modes are held to
the same scenario.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from subscriber.api import CatalogSubscriber
from subscriber.protocol.errors import NotFoundError

POLL_INTERVAL = 0.5  # the detector's cycle in these tests
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


def partitions(sub: CatalogSubscriber, table: str) -> list[str]:
    return [p.partition_name for p in sub.list_partitions(table)]


def run_ddl_scenario(
    sql: Callable[[str], Any], sub: CatalogSubscriber, *, alter_database: bool = False
) -> tuple[str, dict[str, float]]:
    """Run each DDL kind through ``sql`` and wait for ``sub`` to see it.

    Returns the database used and the seconds each step took to become visible.
    """
    db = f"fresh_{uuid.uuid4().hex[:6]}"
    table = f"{db}.clicks"
    times: dict[str, float] = {}

    def step(name: str, statement: str, condition: Callable[[], bool]) -> None:
        sql(statement)
        times[name] = visible(condition, name)

    def loaded_partition_columns() -> list[str]:
        columns = sub.get_table(table, load=True, timeout=5).clustering_columns
        return [c.columnName for c in columns]

    step("create database", f"CREATE DATABASE {db}", lambda: db in sub.list_databases())
    if alter_database:
        step(
            "alter database properties",
            f"ALTER DATABASE {db} SET DBPROPERTIES ('team'='web')",
            lambda: (sub.get_database(db).metastore_db.parameters or {}).get("team") == "web",
        )
    step(
        "create table",
        f"CREATE TABLE {table} (id BIGINT, url STRING) PARTITIONED BY (dt STRING) "
        "STORED AS PARQUET",
        lambda: loaded_partition_columns() == ["dt"],
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
    return db, times
