"""Reads from a synced subscriber cache vs the same reads from the real HMS over Thrift.

::

    .venv/bin/python bench/cache_vs_hms.py [--data-dir DIR] [--hms-calls 500]

The benchmark HMS (``support/hms.py``) is loaded with the loader, committed
(before ``start``) into an in-process :class:`CatalogServer` on loopback and served to a
:class:`CatalogSubscriber` in this process (as in a Spark driver). Then:

(a) ``get_table("bench.t0000")`` from the cache vs HMS ``get_table`` on the same
    table (target >= 1000x);
(b) ``list_partitions("bench.big", {"dt": X})`` vs HMS ``get_partitions_ps``
    with the same partial values ``[X]``, X rotating over every ``dt`` of the
    table (target >= 100x). Both must return the same partition names.

Cache reads are shown cold (the first read of each object decodes its payload)
and warm (decoded objects are memoized); the targets are judged on warm p50,
the steady state of a driver that asks again, and the cold figures are printed
beside them.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from support import synthetic
from support.hms import BIG, add_shape_arguments, measure_get_table, running_hms, shape_from
from support.measure import Result, Summary, add_output_argument, cpu_note, finish, summarize

from catalogd.conversion import objects as convert
from catalogd.hms.client import MetastoreClient
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import ThriftSource, load_catalog
from subscriber.api import CatalogSubscriber
from subscriber.protocol.keys import make_partition_name

TARGET_GET_TABLE = 1000.0
TARGET_PARTITIONS = 100.0


def timed(fn: Callable[[], Any], calls: int) -> Summary:
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return summarize(samples)


def compare_get_table(
    sub: CatalogSubscriber,
    client: MetastoreClient,
    tables: list[str],
    hms_calls: int,
    cache_calls: int,
) -> list[Result]:
    name = tables[0]
    hms = summarize(measure_get_table(client, name, hms_calls))
    cold_samples = []
    for table in tables:  # the first read of each table decodes its payload
        started = time.perf_counter()
        sub.get_table(f"{synthetic.DB}.{table}")
        cold_samples.append(time.perf_counter() - started)
    cold = summarize(cold_samples)
    warm = timed(lambda: sub.get_table(f"{synthetic.DB}.{name}"), cache_calls)
    print(f"  HMS get_table:          {hms.ms()}")
    print(f"  cache get_table (cold): {cold.us()}")
    print(f"  cache get_table (warm): {warm.us()}")
    return [
        Result(
            "get_table: cache vs HMS, warm p50 speed-up",
            hms.p50 / warm.p50,
            "x",
            TARGET_GET_TABLE,
            goal="min",
            note=f"HMS p50 {hms.p50 * 1e3:.2f} ms, cache p50 {warm.p50 * 1e6:.2f} us; "
            f"mean ratio {hms.mean / warm.mean:,.0f}x",
        ),
        Result(
            "get_table: cache vs HMS, cold p50 speed-up",
            hms.p50 / cold.p50,
            "x",
            TARGET_GET_TABLE,
            goal="min",
            note=f"first read of each of {cold.n} tables: p50 {cold.p50 * 1e6:.1f} us",
        ),
    ]


def compare_partitions(
    sub: CatalogSubscriber,
    client: MetastoreClient,
    dts: list[str],
    hms_calls: int,
    warm_rounds: int,
) -> list[Result]:
    table = f"{synthetic.DB}.{BIG}"
    # Cold first: the first read of each dt decodes its partitions' payloads.
    cold = summarize([_time(partial(sub.list_partitions, table, {"dt": d})) for d in dts])
    warm = summarize(
        [
            _time(partial(sub.list_partitions, table, {"dt": d}))
            for _ in range(warm_rounds)
            for d in dts
        ]
    )
    keys = [c.columnName for c in sub.get_table(table).clustering_columns]
    mismatches = 0
    for dt in dts[: min(len(dts), 50)]:  # warm the HMS JIT for this call
        client.get_partitions_ps(synthetic.DB, BIG, [dt])
    hms_samples = []
    for i in range(max(hms_calls, len(dts))):
        dt = dts[i % len(dts)]
        started = time.perf_counter()
        parts = client.get_partitions_ps(synthetic.DB, BIG, [dt])
        hms_samples.append(time.perf_counter() - started)
        if i < len(dts):
            expected = sorted(make_partition_name(keys, p.values) for p in parts)
            got = [p.partition_name for p in sub.list_partitions(table, {"dt": dt})]
            mismatches += expected != got
    hms = summarize(hms_samples)
    size = len(sub.list_partitions(table, {"dt": dts[0]}))
    print(f"  HMS get_partitions_ps dt=X ({size} partitions): {hms.ms()}")
    print(f"  cache list_partitions dt=X (first read): {cold.us()}")
    print(f"  cache list_partitions dt=X (warm):       {warm.us()}")
    print(f"  partition names identical for all {len(dts)} dt values: {mismatches == 0}")
    return [
        Result(
            "list_partitions dt=X: cache vs HMS get_partitions_ps, warm p50",
            hms.p50 / warm.p50,
            "x",
            TARGET_PARTITIONS,
            goal="min",
            note=f"{size} of {len(dts) * size} partitions; HMS p50 {hms.p50 * 1e3:.2f} ms, "
            f"cache p50 {warm.p50 * 1e6:.1f} us; same results: {mismatches == 0}",
        ),
        Result(
            "list_partitions dt=X: cold (first read decodes), p50 speed-up",
            hms.p50 / cold.p50,
            "x",
            TARGET_PARTITIONS,
            goal="min",
            note=f"cache p50 {cold.p50 * 1e3:.2f} ms",
        ),
    ]


def _time(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def run(uri: str, hms_calls: int, cache_calls: int, warm_rounds: int) -> list[Result]:
    with MetastoreClient(uri, timeout_s=300) as client:
        started = time.monotonic()
        objects, stats = load_catalog(ThriftSource(client))
        server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*"))
        server.commit(convert.encode_all(objects)).result()
        print(
            f"  loaded {stats.tables} tables, {stats.partitions} partitions from HMS and "
            f"committed in {time.monotonic() - started:.1f} s"
        )
        tables = sorted(t for t in client.get_all_tables(synthetic.DB) if t != BIG)
        dts = sorted(
            {
                name.split("/")[0].split("=")[1]
                for name in client.get_partition_names(synthetic.DB, BIG)
            }
        )
        del objects
        with server, CatalogSubscriber(server.endpoint) as sub:
            sub.wait_synced(300)
            results = compare_get_table(sub, client, tables, hms_calls, cache_calls)
            results += compare_partitions(sub, client, dts, hms_calls, warm_rounds)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_shape_arguments(parser)
    parser.add_argument("--hms-calls", type=int, default=500, help="HMS calls per measure")
    parser.add_argument("--cache-calls", type=int, default=100_000)
    parser.add_argument(
        "--warm-rounds",
        type=int,
        default=20,
        help="passes over every dt value for warm list_partitions",
    )
    add_output_argument(parser)
    args = parser.parse_args(argv)
    results: list[Result] = []
    shape = shape_from(args)
    with running_hms(args.data_dir, shape, batch=args.batch, build_results=results) as uri:
        print(f"cache vs HMS: {shape}; {cpu_note()}")
        results += run(uri, args.hms_calls, args.cache_calls, args.warm_rounds)
    return finish("subscriber cache vs HMS", results, args)


if __name__ == "__main__":
    raise SystemExit(main())
