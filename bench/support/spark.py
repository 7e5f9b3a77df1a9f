"""The local Spark session the benchmarks build on: ``local[*]``, loopback only, no UI."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def local_builder(app: str, work: Path) -> Any:
    """A ``SparkSession.Builder`` for ``local[*]`` on loopback, scratch under ``work``;
    callers add their own settings and ``getOrCreate()``."""
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master("local[*]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.local.dir", str(work / "local"))
    )
