"""A real, Derby-backed Hive Metastore holding the benchmark catalog, built once and reused.

Used by the HMS benchmarks (``load_bench.py``, ``cache_vs_hms.py``,
``freshness_bench.py``); to build or check it alone, from ``bench/``::

    ../.venv/bin/python -m support.hms [--data-dir DIR] [--tables 100] ...

Database ``bench``: ``--tables`` partitioned Parquet tables ``t0000``... with
``--table-dts * --table-regions`` partitions each (columns ``dt``, ``region``),
and ``bench.big`` with ``--big-dts * --big-regions`` partitions. Partitions are
added over Thrift with ``add_partitions`` in batches of ``--batch`` (adding them
one by one costs ~20-30 ms each on HMS 2.3); the creation rate is printed.
Table and partition directories are made before the HMS is told about them, as
a job writing data files would: an HMS on the local filesystem without Hadoop's
native library forks ``chmod``-like helper processes for every directory it
creates itself, which made it ~4x slower here (seen with jstack: "process
reaper" threads busy under ``add_partitions``).

The built catalog lives in ``--data-dir`` with a manifest naming its shape; a
later run with the same shape reuses it, another shape rebuilds it (the default
directory is ``catalogd-bench-hms`` in the system's temporary directory). Use
:func:`running_hms` to start the HMS on it. The HMS runs with the JVM's full
JIT (``fast_start=False``): these benchmarks measure its steady-state speed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from support import synthetic
from support.measure import Result, add_output_argument, finish

DEFAULT_DIR = Path(tempfile.gettempdir()) / "catalogd-bench-hms"
MANIFEST = "bench-manifest.json"
BIG = "big"


@dataclass(frozen=True)
class HmsShape:
    """How much the benchmark HMS holds."""

    tables: int = 100
    table_dts: int = 10
    table_regions: int = 10
    big_dts: int = 100
    big_regions: int = 100

    @property
    def partitions(self) -> int:
        return self.tables * self.table_dts * self.table_regions + self.big_partitions

    @property
    def big_partitions(self) -> int:
        return self.big_dts * self.big_regions


def add_shape_arguments(parser: argparse.ArgumentParser, default_dir: Path = DEFAULT_DIR) -> None:
    d = HmsShape()
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=default_dir,
        help=f"where the built HMS is cached (default {default_dir})",
    )
    parser.add_argument("--tables", type=int, default=d.tables)
    parser.add_argument("--table-dts", type=int, default=d.table_dts)
    parser.add_argument("--table-regions", type=int, default=d.table_regions)
    parser.add_argument("--big-dts", type=int, default=d.big_dts)
    parser.add_argument("--big-regions", type=int, default=d.big_regions)
    parser.add_argument("--batch", type=int, default=500, help="partitions per add_partitions")


def shape_from(args: argparse.Namespace) -> HmsShape:
    return HmsShape(args.tables, args.table_dts, args.table_regions, args.big_dts, args.big_regions)


def ensure_built(data_dir: Path, shape: HmsShape, *, batch: int = 500) -> list[Result]:
    """Build the benchmark catalog in ``data_dir`` unless a build of ``shape`` is there.

    Returns the creation measurements (empty when the cache was reused). Blocks
    for minutes on a first build. Raises RuntimeError rather than wipe a
    directory that does not look like one of ours.
    """
    manifest = data_dir / MANIFEST
    if manifest.is_file() and json.loads(manifest.read_text()).get("shape") == asdict(shape):
        print(f"reusing the benchmark HMS in {data_dir} ({shape})")
        return []
    if data_dir.exists() and any(data_dir.iterdir()):
        if not (manifest.exists() or (data_dir / "conf" / "hive-site.xml").exists()):
            raise RuntimeError(f"{data_dir} is not empty and not a benchmark HMS; pick another")
        print(f"rebuilding {data_dir}: it holds another or an unfinished build")
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    results = _build(data_dir, shape, batch)
    manifest.write_text(json.dumps({"shape": asdict(shape), "built_at": time.time()}))
    return results


def _build(data_dir: Path, shape: HmsShape, batch: int) -> list[Result]:
    print(
        f"building the benchmark HMS in {data_dir}: {shape.tables} tables x "
        f"{shape.table_dts * shape.table_regions} partitions + {BIG} with "
        f"{shape.big_partitions} partitions, batches of {batch}"
    )
    with (
        EmbeddedMetastore(data_dir, fast_start=False) as metastore,
        MetastoreClient(metastore.uri, timeout_s=600) as client,
    ):
        warehouse = f"file:{metastore.warehouse_dir}"
        db = synthetic.database(warehouse)
        _make_dir(db.locationUri)
        client.call("create_database", db)
        small_values = synthetic.partition_values(shape.table_dts, shape.table_regions)
        plan = [(synthetic.table_name(i), small_values) for i in range(shape.tables)]
        plan.append((BIG, synthetic.partition_values(shape.big_dts, shape.big_regions)))
        add_seconds = {"small": 0.0, "big": 0.0}
        started = time.monotonic()
        for n, (name, values) in enumerate(plan):
            tbl = synthetic.table(name, warehouse)
            _make_dir(tbl.sd.location)
            client.call("create_table", tbl)
            kind = "big" if name == BIG else "small"
            for start in range(0, len(values), batch):
                parts = synthetic.partitions(tbl, values[start : start + batch], start=start)
                for part in parts:
                    _make_dir(part.sd.location)
                t0 = time.monotonic()
                client.call("add_partitions", parts)
                add_seconds[kind] += time.monotonic() - t0
            if n % 10 == 9 or name == BIG:
                done = sum(len(v) for _, v in plan[: n + 1])
                print(
                    f"  {n + 1}/{len(plan)} tables, {done} partitions, "
                    f"{time.monotonic() - started:.0f} s"
                )
        total = time.monotonic() - started
    small_n = shape.tables * len(small_values)
    return [
        Result(
            f"HMS add_partitions rate ({len(small_values)}-partition tables)",
            small_n / add_seconds["small"] if small_n else 0.0,
            "partitions/s",
            note=f"{small_n} partitions in {add_seconds['small']:.1f} s",
        ),
        Result(
            f"HMS add_partitions rate ({BIG}, batch {batch})",
            shape.big_partitions / add_seconds["big"] if shape.big_partitions else 0.0,
            "partitions/s",
            note=f"{shape.big_partitions} partitions in {add_seconds['big']:.1f} s",
        ),
        Result("HMS catalog build, total", total, "s", note=f"{shape.partitions} partitions"),
    ]


def _make_dir(location: str) -> None:
    if location.startswith("file:"):
        Path(location.removeprefix("file:")).mkdir(parents=True, exist_ok=True)


# The HMS's JIT needs a few hundred calls: here the first 500 had a p50 of ~10 ms,
# the next 500 of 2.4-5 ms.
WARMUP_CALLS = 500


def measure_get_table(
    client: MetastoreClient, table: str, calls: int, warmup: int = WARMUP_CALLS
) -> list[float]:
    """Latencies (s) of ``calls`` HMS ``get_table`` calls on ``bench.<table>``, after
    ``warmup`` unmeasured ones."""
    for _ in range(warmup):
        client.get_table(synthetic.DB, table)
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        client.get_table(synthetic.DB, table)
        samples.append(time.perf_counter() - started)
    return samples


@contextmanager
def running_hms(
    data_dir: Path = DEFAULT_DIR,
    shape: HmsShape = HmsShape(),
    *,
    batch: int = 500,
    build_results: list[Result] | None = None,
) -> Iterator[str]:
    """Build the catalog if needed, start the HMS on it and yield its ``thrift://`` URI.

    Creation measurements of a fresh build are appended to ``build_results``.
    Blocks for the HMS start (~5-10 s) and, on a first build, for minutes.
    The HMS is stopped on exit.
    """
    results = ensure_built(data_dir, shape, batch=batch)
    if build_results is not None:
        build_results.extend(results)
    with EmbeddedMetastore(data_dir, fast_start=False) as metastore:
        yield metastore.uri


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build (or check) the benchmark HMS.")
    add_shape_arguments(parser)
    parser.add_argument("--rebuild", action="store_true", help="discard the cached build")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    if args.rebuild and (args.data_dir / MANIFEST).exists():
        (args.data_dir / MANIFEST).unlink()
    results: list[Result] = []
    with (
        running_hms(
            args.data_dir, shape_from(args), batch=args.batch, build_results=results
        ) as uri,
        MetastoreClient(uri) as client,
    ):
        tables = client.get_all_tables(synthetic.DB)
        big = len(client.get_partition_names(synthetic.DB, BIG))
        results.append(Result("tables in bench", len(tables), "tables"))
        results.append(Result(f"partitions in bench.{BIG}", big, "partitions"))
    return finish("benchmark HMS", results, args)


if __name__ == "__main__":
    raise SystemExit(main())
