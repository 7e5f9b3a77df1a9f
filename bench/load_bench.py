"""Full catalog load from a real HMS over Thrift, and HMS ``get_table`` latency (the baseline).

::

    .venv/bin/python bench/load_bench.py [--data-dir DIR] [--loads 2] [--calls 500]

Starts the benchmark HMS (``support/hms.py``: built on first use, then reused),
loads everything with ``load_catalog(ThriftSource(...))`` ``--loads`` times
(the first load also warms the HMS's JIT) and reports tables/s, partitions/s
and total time of each, plus the time to encode the loaded objects for the
catalog core. Then ``get_table`` on one table ``--calls`` times after a
warm-up: the latency later benchmarks compare the subscriber cache against.
"""

from __future__ import annotations

import argparse
import time

from support import synthetic
from support.hms import add_shape_arguments, measure_get_table, running_hms, shape_from
from support.measure import Result, add_output_argument, cpu_note, finish, summarize

from catalogd.conversion import objects as convert
from catalogd.hms.client import MetastoreClient
from catalogd.sources import ThriftSource, load_catalog


def run(uri: str, loads: int, calls: int) -> list[Result]:
    results = []
    with MetastoreClient(uri, timeout_s=300) as client:
        for n in range(1, loads + 1):
            objects, stats = load_catalog(ThriftSource(client))
            started = time.monotonic()
            payloads = convert.encode_all(objects)
            encode_s = time.monotonic() - started
            total = stats.tables + stats.views
            print(
                f"  load {n}: {stats.databases} databases, {total} tables, "
                f"{stats.partitions} partitions in {stats.seconds:.2f} s; "
                f"encoding {len(payloads)} objects {encode_s:.2f} s"
            )
            results += [
                Result(
                    f"HMS Thrift full load #{n}: total",
                    stats.seconds,
                    "s",
                    note=f"{total} tables, {stats.partitions} partitions",
                ),
                Result(f"HMS Thrift full load #{n}: tables/s", total / stats.seconds, "tables/s"),
                Result(
                    f"HMS Thrift full load #{n}: partitions/s",
                    stats.partitions / stats.seconds,
                    "partitions/s",
                    note=f"+ {encode_s:.2f} s to encode for the core",
                ),
            ]
        summary = summarize(measure_get_table(client, synthetic.table_name(0), calls))
    print(f"  HMS get_table: {summary.ms()}")
    results += [
        Result(
            "HMS Thrift get_table mean (baseline)", summary.mean * 1e3, "ms", note=f"n={summary.n}"
        ),
        Result("HMS Thrift get_table p50", summary.p50 * 1e3, "ms"),
        Result("HMS Thrift get_table p99", summary.p99 * 1e3, "ms"),
    ]
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_shape_arguments(parser)
    parser.add_argument("--loads", type=int, default=2, help="full loads to run (default 2)")
    parser.add_argument("--calls", type=int, default=500, help="get_table calls (default 500)")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    results: list[Result] = []
    shape = shape_from(args)
    with running_hms(args.data_dir, shape, batch=args.batch, build_results=results) as uri:
        print(f"load: {shape}; {cpu_note()}")
        results += run(uri, args.loads, args.calls)
    return finish("HMS load and get_table baseline", results, args)


if __name__ == "__main__":
    raise SystemExit(main())
