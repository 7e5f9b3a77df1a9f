"""``catalogd serve`` as a real process, a real HMS, subscribers and a PySpark driver."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from polling import wait_until
from support.catalogd_process import CatalogdProcess

from catalogd import sources as loader
from catalogd.conversion import objects as convert
from catalogd.hms.client import MetastoreClient
from subscriber.api import CatalogSubscriber
from subscriber.protocol.keys import database_of

pytestmark = [pytest.mark.hms, pytest.mark.spark, pytest.mark.timeout(600)]
HERE = Path(__file__).resolve().parent


def hms_keys(uri: str) -> set[str]:
    """What catalogd publishes for database objects: the catalog and the functions."""
    with MetastoreClient(uri) as client:
        source = loader.ThriftSource(client)
        objects, _ = loader.load_catalog(source)
        functions = convert.function_objects(source.all_functions())
    return set(objects) | set(functions)


def cached_keys(sub: CatalogSubscriber) -> set[str]:
    """Keys of database objects (privileges and cache pools are compared elsewhere)."""
    return {e.key for e in sub._machine.cache.view.entries() if database_of(e.key)}


def test_subscriber_follows_kill_and_restart(warehouse, tmp_path: Path) -> None:  # noqa: ANN001
    first = CatalogdProcess(warehouse.uri, tmp_path / "catalogd").start()
    try:
        with CatalogSubscriber(first.endpoint) as sub:
            sub.wait_synced(30)
            assert sub.service_id == first.service_id
            first.wait_loaded()
            wait_until(lambda: cached_keys(sub) == hms_keys(warehouse.uri), what="full load")
            table = sub.get_table("sales.orders")
            assert [c.columnName for c in table.clustering_columns] == ["dt", "region"]
            parts = sub.list_partitions("sales.orders", {"region": "eu"})
            assert [p.partition_name for p in parts] == [
                "dt=2024-01-01/region=eu",
                "dt=2024-01-02/region=eu",
            ]
            first.kill()  # SIGKILL: no final heartbeat
            wait_until(lambda: sub.is_stale, what="stale after SIGKILL")
            assert sub.get_table("sales.orders").tbl_name == "orders"  # still served
            second = CatalogdProcess(warehouse.uri, tmp_path / "catalogd", port=first.port).start()
            try:
                wait_until(lambda: sub.service_id == second.service_id, what="resync")
                assert sub.service_id != first.service_id and not sub.is_stale
                # Names at once (never an empty catalog), then the full load.
                assert {k for k in cached_keys(sub) if not k.startswith("HDFS")} >= {
                    k for k in hms_keys(warehouse.uri) if k.startswith(("DATABASE", "TABLE"))
                }
                second.wait_loaded()
                wait_until(lambda: cached_keys(sub) == hms_keys(warehouse.uri), what="reload")
            finally:
                assert second.stop() == 0
    finally:
        first.kill()


def test_pyspark_driver_reads_data_through_the_cache(warehouse, tmp_path: Path) -> None:  # noqa: ANN001
    server = CatalogdProcess(warehouse.uri, tmp_path / "catalogd").start()
    server.wait_loaded()
    try:
        result = subprocess.run(
            [
                sys.executable,
                str(HERE / "spark_driver.py"),
                server.endpoint,
                "sales.orders",
                "region=eu",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        out = json.loads(result.stdout.strip().splitlines()[-1])
        assert out["format"] == "parquet"
        assert len(out["paths"]) == 2 and all("region=eu" in p for p in out["paths"])
        assert out["rows"] == [
            ["1", "10.50", "ann", "2024-01-01", "eu"],
            ["2", "20.00", "bob", "2024-01-01", "eu"],
            ["4", "99.99", "ann", "2024-01-02", "eu"],
        ]
    finally:
        server.stop()
