"""A PySpark driver program: metadata from a CatalogSubscriber, data with spark.read.

Run as ``python spark_driver.py ENDPOINT TABLE [SPEC]``; prints one JSON line.
The SparkSession has no Hive support and no metastore URI: every piece of
metadata comes from catalogd's broadcast.
"""

from __future__ import annotations

import json
import sys
import time

from pyspark.sql import SparkSession

from subscriber.api import CatalogSubscriber
from subscriber.spark import plan_scan, read_table


def main() -> None:
    endpoint, table = sys.argv[1], sys.argv[2]
    spec = sys.argv[3] if len(sys.argv) > 3 else None
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("catalogd-e2e-driver")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    try:
        with CatalogSubscriber(endpoint) as sub:
            sub.wait_synced(60)
            started = time.perf_counter()
            ttable = sub.get_table(table)
            plan = plan_scan(sub, table, spec)
            metadata_ms = (time.perf_counter() - started) * 1000
            df = read_table(spark, sub, table, spec)
            rows = sorted(tuple(str(v) for v in r) for r in df.collect())
            print(
                json.dumps(
                    {
                        "table": ttable.tbl_name,
                        "format": plan.format,
                        "paths": list(plan.paths),
                        "columns": df.columns,
                        "rows": rows,
                        "metadata_ms": metadata_ms,
                        "catalog_version": sub.version,
                    }
                )
            )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
