"""``make run`` as a new user sees it: ``catalogd serve --demo`` on the embedded default.

The demo warehouse must show rows end to end: a subscriber syncs, and a PySpark
``read_table`` over the cached metadata reads the demo's data files. A restart on
the same data directory reuses the warehouse and leaves its files alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.catalogd_process import CatalogdProcess

from catalogd.hms.demo import DAYS, USERS
from subscriber import CatalogSubscriber, read_table

pytestmark = [pytest.mark.hms, pytest.mark.spark, pytest.mark.timeout(300)]


def _files(data_dir: Path) -> dict[str, bytes]:
    root = data_dir / "warehouse"
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*.csv")}


def test_demo_reads_rows_through_the_cache(spark: Any, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = CatalogdProcess("", data_dir, extra=["--demo"]).start(timeout=180)
    try:
        with CatalogSubscriber(first.endpoint) as sub:
            sub.wait_synced(30)
            assert "demo" in sub.list_databases()
            sub.get_table("demo.events", load=True)
            sub.get_table("demo.users", load=True)
            eu = read_table(spark, sub, "demo.events", {"region": "eu"})
            assert eu.count() == 4 * len(DAYS)
            assert {r.region for r in eu.select("region").collect()} == {"eu"}
            assert read_table(spark, sub, "demo.events").count() == 4 * len(DAYS) * 2
            users = read_table(spark, sub, "demo.users").orderBy("id").collect()
            assert [(r.id, r.name) for r in users] == list(USERS)
    finally:
        assert first.stop() == 0
    files = _files(data_dir)
    assert len(files) == 1 + 2 * len(DAYS)

    second = CatalogdProcess("", data_dir, extra=["--demo"]).start(timeout=180)
    try:
        log = second.log_path.read_text(errors="replace")
        assert log.count("created the demo warehouse") == 1
        assert _files(data_dir) == files
    finally:
        assert second.stop() == 0
