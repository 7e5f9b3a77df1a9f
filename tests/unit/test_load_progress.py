"""Load progress: counts, rate and ETA from catalog shapes (clock injected)."""

from __future__ import annotations

import logging

import pytest

from catalogd.loading.progress import LoadProgress
from catalogd.status import CatalogShape


def shape(loaded: int, unloaded: int, partitions: int) -> CatalogShape:
    return CatalogShape(
        version=1,
        delta_log_floor=0,
        objects_by_type={"TABLE": loaded + unloaded, "HDFS_PARTITION": partitions},
        tables_loaded=loaded,
        tables_not_loaded=unloaded,
    )


def test_rate_and_eta_by_partitions_when_they_are_known(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    progress = LoadProgress(lambda: 1000, log_interval_s=10, clock=lambda: now[0])
    now[0] = 110.0
    with caplog.at_level(logging.INFO):
        progress.observe(shape(2, 8, 250))
    report = progress.report()
    assert report["partitions_per_s"] == 25.0 and report["partitions_known"] == 1000
    assert report["eta_s"] == 30.0 and not report["done"]
    assert report["tables_loaded"] == 2 and report["tables_known"] == 10
    assert "2/10 tables, 250/1,000 partitions" in caplog.text and "ETA 30s" in caplog.text


def test_eta_by_tables_without_a_partition_count_then_done() -> None:
    now = [0.0]
    progress = LoadProgress(None, log_interval_s=10, clock=lambda: now[0])
    now[0] = 4.0
    progress.observe(shape(2, 6, 40))
    assert progress.report()["eta_s"] == 12.0 and progress.report()["partitions_known"] is None
    now[0] = 8.0
    progress.observe(shape(8, 0, 160))
    assert progress.report()["done"] and progress.report()["eta_s"] == 0.0
    now[0] = 20.0
    progress.observe(shape(9, 1, 170))  # after done: no more updates
    assert progress.report()["tables_loaded"] == 8


def test_a_failing_count_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def boom() -> int:
        raise RuntimeError("database gone")

    progress = LoadProgress(boom, log_interval_s=0, clock=lambda: 1.0)
    progress.observe(shape(0, 3, 0))
    assert "database gone" in caplog.text and progress.report()["partitions_known"] is None
