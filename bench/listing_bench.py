"""Partition listing: catalogd's thread pool against a Spark job, same run, same files.

::

    .venv/bin/python bench/listing_bench.py [--dirs 10,100,1000,5000 --files 10 --repeat 3]

For each directory count: that many directories of ``--files`` small files each
on local disk (plus a ``_SUCCESS`` and a ``.crc`` file, which every lister skips),
listed by

* the thread pool (:func:`catalogd.files.listing.list_locations`, 8 threads):
  what catalogd uses for local paths below ``files.spark_listing_threshold``;
* :class:`~catalogd.files.spark_listing.SparkLister` with a Spark job
  (``local[*]``, Spark's ``HadoopFSUtils.parallelListLeafFiles``, four tasks per
  core): what catalogd uses above the threshold and for ``hdfs:``/``s3a:`` listings;
* the same in the driver's JVM, no job: what catalogd uses for small
  ``hdfs:``/``s3a:`` listings.

Each figure is the best of ``--repeat`` (the three alternate, so none gets a
warmer cache); every listing is checked equal to the thread pool's. The Spark
session's start is printed apart and is in no figure. Local disk only: HDFS and
object-store latencies, where a distributed listing can pay off, are not measured.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.measure import Result, add_output_argument, cpu_note, finish
from support.spark import local_builder

from catalogd.files.listing import list_locations
from catalogd.files.spark_listing import SparkLister


def make_directories(base: Path, dirs: int, files: int) -> list[str]:
    """``dirs`` partition-like directories of ``files`` files; their file: URIs."""
    locations = []
    for i in range(dirs):
        directory = base / f"k={i:06d}"
        directory.mkdir(parents=True)
        for j in range(files):
            (directory / f"part-{j:05d}-c000.snappy.parquet").write_bytes(b"x" * (j + 1))
        (directory / "_SUCCESS").write_bytes(b"")
        (directory / ".part-00000-c000.snappy.parquet.crc").write_bytes(b"")
        locations.append(f"file:{directory}")
    return locations


def spark_session(work: Path) -> Any:
    return local_builder("listing-bench", work).getOrCreate()


def _canonical(listed: list[Any]) -> list[list[Any]]:
    return [sorted(files or [], key=lambda f: f.relative_path) for files in listed]


def best_of(
    repeat: int, listers: dict[str, Callable[[], list[Any]]], expected: list[list[Any]]
) -> dict[str, float]:
    """The best wall time of each lister over ``repeat`` alternating rounds."""
    best = dict.fromkeys(listers, float("inf"))
    for _ in range(repeat):
        for name, run in listers.items():
            started = time.perf_counter()
            listed = run()
            best[name] = min(best[name], time.perf_counter() - started)
            if _canonical(listed) != expected:
                raise SystemExit(f"{name} listed other files than the thread pool")
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dirs", default="10,100,1000,5000", help="directory counts")
    parser.add_argument("--files", type=int, default=10, help="files per directory")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=None, help="unused (no cache kept)")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="listing-bench-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        spark = spark_session(work)
        results.append(
            Result("Spark session start (in no figure below)", time.perf_counter() - started, "s")
        )
        lister = SparkLister(spark)
        warm = make_directories(work / "warm", 50, 2)
        lister(warm)  # the first Spark job pays for class loading
        for dirs in (int(d) for d in args.dirs.split(",")):
            locations = make_directories(work / f"d{dirs}", dirs, args.files)
            expected = _canonical(list_locations(locations))
            best = best_of(
                args.repeat,
                {
                    "threads": lambda locations=locations: list_locations(locations),
                    "job": lambda locations=locations: lister(locations, distributed=True),
                    "driver": lambda locations=locations: lister(locations, distributed=False),
                },
                expected,
            )
            shape = f"{dirs} dirs x {args.files} files"
            results += [
                Result(f"thread pool, {shape}", best["threads"] * 1e3, "ms"),
                Result(f"Spark job, {shape}", best["job"] * 1e3, "ms"),
                Result(f"Spark in the driver's JVM, {shape}", best["driver"] * 1e3, "ms"),
                Result(
                    f"thread pool speed-up over the Spark job, {shape}",
                    best["job"] / best["threads"],
                    "x",
                    note=cpu_note(),
                ),
            ]
        spark.stop()
    return finish("partition listing: thread pool vs Spark", results, args)


if __name__ == "__main__":
    sys.exit(main())
