"""Unmodified Spark through the subscriber's HMS endpoint vs straight at HMS, in one run.

::

    .venv/bin/python bench/hms_endpoint_bench.py [--data-dir DIR] [--repeats 5] [--seconds 10]

The benchmark HMS (``support/hms.py``; ``bench.big`` has ``--big-dts x --big-regions``
partitions, 10,000 at full size) is loaded into an in-process catalogd
(:class:`CatalogServer`, committed before it starts) and a subscriber in this process serves an HMS
endpoint whose upstream is a counting relay in front of HMS. Two PySpark sessions
(child processes, ``tests/support/spark_sql_server.py``) run the same statements,
one at the relay ("direct"), one at the endpoint; each statement is timed by Spark's
driver (median of ``--repeats``, after one warm-up run each):

* ``spark.catalog.getTable("bench.big")``;
* ``SHOW PARTITIONS bench.big`` (every partition name);
* ``EXPLAIN`` of a pruned ``SELECT count(*) ... WHERE dt = X`` and of a full one
  (``WHERE region IS NOT NULL``): planning lists the table's partitions, pruned
  through ``get_partitions_by_filter``, full through ``get_partitions`` of all of them.

Targets: no statement slower through the endpoint; the full-table plan >= 2x faster;
HMS calls per pruned query 0 through the endpoint (counted at the relay); and
``get_table`` calls/s from 8 concurrent Thrift client processes, endpoint vs HMS,
>= 10x.
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from support import synthetic
from support.hms import BIG, add_shape_arguments, running_hms, shape_from
from support.measure import Result, add_output_argument, cpu_note, finish

from catalogd.conversion import objects as convert
from catalogd.hms.client import MetastoreClient
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import ThriftSource, load_catalog
from subscriber.api import CatalogSubscriber

TESTS_SUPPORT = Path(__file__).resolve().parents[1] / "tests" / "support"
TABLE = f"{synthetic.DB}.{BIG}"


def _load(name: str) -> ModuleType:
    """A module of ``tests/support`` (this directory has a ``support`` package of its own)."""
    spec = importlib.util.spec_from_file_location(f"_tests_{name}", TESTS_SUPPORT / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _statements(dt: str) -> dict[str, str]:
    return {
        "getTable": f"@getTable {TABLE}",
        "SHOW PARTITIONS": f"SHOW PARTITIONS {TABLE}",
        "plan pruned SELECT": f"EXPLAIN SELECT count(*) FROM {TABLE} WHERE dt = '{dt}'",
        # isnotnull() is a partition filter HMS cannot take: Spark plans it by fetching
        # every partition (get_partitions) and pruning itself. A filterless EXPLAIN
        # would list nothing: the file index lists partitions only when executed.
        "plan full SELECT": f"EXPLAIN SELECT count(*) FROM {TABLE} WHERE region IS NOT NULL",
    }


def _time_statements(spark: Any, statements: dict[str, str], repeats: int) -> dict[str, float]:
    for statement in statements.values():
        spark.query(statement, timeout=600)  # warm-up: JIT, connections, memos
    times: dict[str, list[float]] = {name: [] for name in statements}
    for _ in range(repeats):
        for name, statement in statements.items():
            times[name].append(spark.query(statement, timeout=600)[0])
    return {name: statistics.median(samples) for name, samples in times.items()}


def _get_table_loop(args: tuple[str, int, float]) -> int:
    host, port, seconds = args
    with MetastoreClient(f"thrift://{host}:{port}", retries=0, timeout_s=60) as client:
        client.get_table(synthetic.DB, BIG)
        calls = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            client.get_table(synthetic.DB, BIG)
            calls += 1
    return calls


def _throughput(uri: str, clients: int, seconds: float) -> float:
    host, _, port = uri.removeprefix("thrift://").rpartition(":")
    with multiprocessing.get_context("spawn").Pool(clients) as pool:
        counts = pool.map(_get_table_loop, [(host, int(port), seconds)] * clients)
    return sum(counts) / seconds


def run(uri: str, repeats: int, seconds: float, clients: int) -> list[Result]:
    relay_mod, spark_mod = _load("hms_relay"), _load("spark_sql_server")
    work = Path(tempfile.mkdtemp(prefix="catalogd-hms-endpoint-bench-"))
    with MetastoreClient(uri, timeout_s=300) as client:
        objects, stats = load_catalog(ThriftSource(client))
        names = client.get_partition_names(synthetic.DB, BIG)
    dts = sorted({n.split("/")[0].split("=")[1] for n in names})
    server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*"))
    server.commit(convert.encode_all(objects)).result()
    del objects
    print(f"  catalog: {stats.tables} tables, {stats.partitions} partitions")
    relay = relay_mod.CountingRelay(uri)
    with server, CatalogSubscriber(server.endpoint) as sub:
        sub.wait_synced(300)
        with sub.metastore_endpoint(upstream=relay.uri) as endpoint:
            statements = _statements(dts[len(dts) // 2])
            timings: dict[str, dict[str, float]] = {}
            calls: dict[str, int] = {}
            for mode, target in (("direct", relay.uri), ("endpoint", endpoint.uri)):
                spark = spark_mod.SparkSql(target, work / "warehouse", work / f"spark-{mode}", {})
                try:
                    timings[mode] = _time_statements(spark, statements, repeats)
                    relay.reset()
                    spark.query(statements["plan pruned SELECT"])
                    calls[mode] = sum(relay.reset().values())
                finally:
                    spark.close()
            hms_rate = _throughput(uri, clients, seconds)
            endpoint_rate = _throughput(endpoint.uri, clients, seconds)
            print(f"  endpoint calls: {endpoint.stats.snapshot()}")
    relay.close()
    results = []
    for name in statements:
        direct, via = timings["direct"][name], timings["endpoint"][name]
        full = name == "plan full SELECT"
        results.append(
            Result(
                f"Spark {name}, {len(names):,} partitions: direct / endpoint time",
                direct / via,
                "x",
                2.0 if full else 1.0,
                goal="min",
                note=f"direct {direct * 1e3:.0f} ms, endpoint {via * 1e3:.0f} ms (median)",
            )
        )
    results.append(
        Result(
            "HMS calls per pruned query through the endpoint",
            calls["endpoint"],
            "calls",
            0,
            goal="max",
            note=f"direct: {calls['direct']} calls",
        )
    )
    results.append(
        Result(
            f"get_table calls/s, {clients} client processes: endpoint / HMS",
            endpoint_rate / hms_rate,
            "x",
            10.0,
            goal="min",
            note=f"endpoint {endpoint_rate:,.0f}/s, HMS {hms_rate:,.0f}/s",
        )
    )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_shape_arguments(parser)
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per statement")
    parser.add_argument("--seconds", type=float, default=10.0, help="per throughput measure")
    parser.add_argument("--clients", type=int, default=8, help="concurrent Thrift clients")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    results: list[Result] = []
    shape = shape_from(args)
    with running_hms(args.data_dir, shape, batch=args.batch, build_results=results) as uri:
        print(f"HMS endpoint vs HMS: {shape}; {cpu_note()}")
        results += run(uri, args.repeats, args.seconds, args.clients)
    return finish("Spark through the HMS endpoint vs straight at HMS", results, args)


if __name__ == "__main__":
    raise SystemExit(main())
