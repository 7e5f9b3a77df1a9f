"""Statistics and file metadata: read planning with cached files, the stats job, memory.

::

    .venv/bin/python bench/stats_bench.py [--partitions 1000 --files 10 --rows 10000000]
    .venv/bin/python bench/stats_bench.py --partitions 100 --files 10 --rows 1000000  # quick

One embedded HMS (Derby) and one ``local[*]`` Spark session, in this process:

* **plan and start reading** a ``--partitions`` x ``--files`` Parquet table
  (files copied from one small Parquet file Spark wrote; partitions added over
  Thrift): wall time of ``df.limit(1).collect()`` from nothing, for
  ``read_table(files=True)`` (the cached file list), ``read_table`` (the cached
  partition directories) and ``spark.table`` (Spark asks HMS, then lists),
  each the best of ``--repeat`` (Spark's relation and file-status caches are
  dropped before every ``spark.table`` run). The "subscriber" here is the
  catalog objects catalogd would publish (``convert`` + ``FileMetadata.attach``),
  kept encoded and decoded per read as the real cache does. Local filesystem
  only: object-store listing costs are not measured here.
* **stats job throughput** on a ``--rows`` table (Parquet, 4 partitions):
  ``catalogd stats compute`` (:func:`run_job`) against Spark's own
  ``ANALYZE TABLE ... COMPUTE STATISTICS FOR ALL COLUMNS``, same run; rows/s and
  bytes/s; target: not slower.
* **subscriber memory per cached file**: growth of the encoded partition
  objects (what a subscriber keeps resident) per file; target <= 150 B.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from support.measure import Result, add_output_argument, cpu_note, finish

from catalogd.files.metadata import FileMetadata
from catalogd.metastore import convert
from catalogd.metastore.builders import thrift_partitions, thrift_table
from catalogd.metastore.client import MetastoreClient
from catalogd.metastore.embedded import EmbeddedMetastore
from catalogd.stats.job import run_job
from subscriber.protocol import codec
from subscriber.protocol.keys import PARTITION_PREFIX

DB = "statsbench"


class EncodedCatalog:
    """The subset of CatalogSubscriber that read_table uses, over encoded objects."""

    def __init__(self, objects: dict[str, Any]) -> None:
        self.payloads = convert.encode_all(objects)

    def get_table(self, name: str) -> Any:
        db, table = name.split(".")
        return codec.decode_object(self.payloads[f"TABLE:{db}.{table}"]).table

    def list_partitions(self, name: str, spec: Any = None) -> list[Any]:
        prefix = f"{PARTITION_PREFIX}{name}:"
        return [
            codec.decode_object(p).hdfs_partition
            for k, p in sorted(self.payloads.items())
            if k.startswith(prefix)
        ]


def spark_session(hms: EmbeddedMetastore, work: Path) -> Any:
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master("local[*]")
        .appName("stats-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.local.dir", str(work / "local"))
        .config("spark.hadoop.hive.metastore.uris", hms.uri)
        .config("spark.sql.warehouse.dir", f"file:{hms.warehouse_dir}")
        .enableHiveSupport()
        .getOrCreate()
    )


def build_file_table(spark: Any, client: MetastoreClient, base: Path, parts: int, files: int):
    """A parts x files Parquet table: one Spark-written file copied everywhere."""
    seed = base / "seed"
    spark.range(100).selectExpr("id", "CAST(id AS STRING) AS s").coalesce(1).write.parquet(
        str(seed)
    )
    source = next(seed.glob("*.parquet"))
    location = base / "files_table"
    values = [(f"{i:05d}",) for i in range(parts)]
    for (v,) in values:
        directory = location / f"k={v}"
        directory.mkdir(parents=True)
        for j in range(files):
            shutil.copy(source, directory / f"part-{j:05d}-{source.name[11:]}")
    table = thrift_table(
        DB,
        "files_table",
        f"file:{location}",
        columns=[("id", "bigint"), ("s", "string")],
        partition_keys=[("k", "string")],
    )
    client.raw.create_table(table)
    batch = thrift_partitions(table, values)
    for start in range(0, len(batch), 200):
        client.raw.add_partitions(batch[start : start + 200])
    return client.get_table(DB, "files_table")


def time_first_row(make_df: Any, repeat: int, before: Any = None) -> float:
    best = float("inf")
    for _ in range(repeat):
        if before is not None:
            before()
        started = time.perf_counter()
        make_df().limit(1).collect()
        best = min(best, time.perf_counter() - started)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=None, help="unused (no cache kept)")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    from subscriber.spark import read_table

    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="stats-bench-") as tmp:
        work = Path(tmp)
        with EmbeddedMetastore(work / "hms") as hms, MetastoreClient(hms.uri) as client:
            spark = spark_session(hms, work)
            spark.sql(f"CREATE DATABASE {DB}")
            table = build_file_table(spark, client, work, args.partitions, args.files)
            objects = convert.table_objects(table, client.iter_partitions(DB, "files_table"))
            plain = EncodedCatalog(objects)
            listed = FileMetadata([DB])
            started = time.perf_counter()
            nfiles = listed.attach(objects)
            list_s = time.perf_counter() - started
            with_files = EncodedCatalog(objects)
            name = f"{DB}.files_table"
            shape = f"{args.partitions} partitions x {args.files} files"

            def drop_spark_caches() -> None:
                spark.catalog.refreshTable(name)

            t_files = time_first_row(
                lambda: read_table(spark, with_files, name, files=True), args.repeat
            )
            t_dirs = time_first_row(lambda: read_table(spark, plain, name), args.repeat)
            t_spark = time_first_row(lambda: spark.table(name), args.repeat, drop_spark_caches)
            results += [
                Result(f"plan+first row, read_table cached files ({shape})", t_files * 1e3, "ms"),
                Result(f"plan+first row, read_table directories ({shape})", t_dirs * 1e3, "ms"),
                Result(f"plan+first row, spark.table via HMS ({shape})", t_spark * 1e3, "ms"),
                Result("speed-up of cached files over spark.table", t_spark / t_files, "x"),
                Result("speed-up of cached files over directories", t_dirs / t_files, "x"),
                Result(
                    f"catalogd listing of {nfiles} files (thread pool, local)", list_s * 1e3, "ms"
                ),
            ]
            extra = sum(len(p) for p in with_files.payloads.values()) - sum(
                len(p) for p in plain.payloads.values()
            )
            results.append(
                Result(
                    "subscriber state per cached file (encoded partitions)",
                    extra / max(1, nfiles),
                    "B",
                    target=150,
                    note="a Spark part-file name of ~60 characters",
                )
            )
            # The stats job against Spark's ANALYZE, same data, same run.
            spark.sql(
                f"CREATE TABLE {DB}.big (id BIGINT, name STRING, amount DOUBLE, d DATE) "
                "PARTITIONED BY (p INT) STORED AS PARQUET"
            )
            spark.sql(
                f"INSERT INTO {DB}.big PARTITION (p) SELECT id, concat('n', CAST(id % 100000 AS "
                "STRING)), CAST(id AS DOUBLE) / 7, date_add(DATE'2020-01-01', CAST(id % 1000 AS "
                f"INT)), CAST(id % 4 AS INT) FROM range({args.rows})"
            )
            started = time.perf_counter()
            spark.sql(f"ANALYZE TABLE {DB}.big COMPUTE STATISTICS FOR ALL COLUMNS")
            analyze_s = time.perf_counter() - started
            started = time.perf_counter()
            report = run_job(spark, client, DB, "big")
            job_s = time.perf_counter() - started
            size = report.result.table_level.bytes
            results += [
                Result("Spark ANALYZE ... FOR ALL COLUMNS", args.rows / analyze_s, "rows/s"),
                Result("catalogd stats compute", args.rows / job_s, "rows/s"),
                Result("catalogd stats compute", size / job_s / 1e6, "MB/s"),
                Result(
                    "  of which the Spark scan / the HMS writes",
                    report.scan_s,
                    "s",
                    note=f"HMS writes {report.write_s:.2f} s ({report.hms_calls} calls)",
                ),
                Result(
                    "stats job speed relative to ANALYZE",
                    analyze_s / job_s,
                    "x",
                    target=1.0,
                    goal="min",
                    note=f"{args.rows} rows, {size / 1e6:.1f} MB Parquet; {cpu_note()}",
                ),
            ]
            spark.stop()
    return finish("statistics and file metadata", results, args)


if __name__ == "__main__":
    sys.exit(main())
