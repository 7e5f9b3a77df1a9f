"""Unmodified Spark through the subscriber's HMS endpoint vs straight at HMS, in one run.

::

    .venv/bin/python bench/hms_endpoint_bench.py [--data-dir DIR] [--repeats 5] [--seconds 10]
        [--iceberg-only | --no-iceberg] [--iceberg-commits 20] [--iceberg-rounds 52]

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

PyIceberg (``pyiceberg[hive]``) against an HMS of its own with a working lock
manager (``tests/support/hms_locks.py``), a catalogd process loading from it
(change detection off) and an endpoint in this process:

* the fraction of read calls served from the cache for a read workload (``list_tables``,
  ``load_table`` and scan planning of each table) -- target 100%;
* a commit (``append`` of one row) through the endpoint vs direct, median of
  ``--iceberg-commits`` each, interleaved -- target <= 1.2x (the locked path: ``lock``,
  the ``get_table`` under it forwarded, ``alter_table``, ``unlock``; the answer does not
  wait for catalogd's reload: the table is pending, its reads forwarded, until the
  cache reaches the version catalogd confirmed the reload at);
* ``--iceberg-rounds`` rounds of the two-writer race (one writer loads, the other
  commits, the first commits), in four shapes -- target: no commit lost.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from support import synthetic
from support.hms import BIG, add_shape_arguments, running_hms, shape_from
from support.measure import Result, add_output_argument, cpu_note, finish
from support.tests_support import load

from catalogd.conversion import objects as convert
from catalogd.hms.client import MetastoreClient
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import ThriftSource, load_catalog
from subscriber.api import CatalogSubscriber

TABLE = f"{synthetic.DB}.{BIG}"


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
    relay_mod, spark_mod = load("hms_relay"), load("spark_sql_server")
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
            print(f"  endpoint calls: {endpoint.stats.summary()}")
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


def run_iceberg(commits: int, rounds: int) -> list[Result]:
    """The PyIceberg measures (see the module docstring)."""
    import pyarrow as pa
    from pyiceberg.catalog.hive import HiveCatalog

    locks_mod, relay_mod = load("hms_locks"), load("hms_relay")
    catalogd_mod = load("catalogd_process")
    work = Path(tempfile.mkdtemp(prefix="catalogd-iceberg-bench-"))
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    hms = locks_mod.start_locking_metastore(work / "hms")
    relay = relay_mod.CountingRelay(hms.uri)
    catalogd = catalogd_mod.CatalogdProcess(
        hms.uri, work / "catalogd", extra=["--change-detection", "off"]
    )
    try:
        catalogd.start()
        catalogd.wait_loaded()
        with (
            CatalogSubscriber(catalogd.endpoint) as sub,
            CatalogSubscriber(catalogd.endpoint) as sub2,
        ):
            sub.wait_synced(60)
            sub2.wait_synced(60)
            with (
                sub.metastore_endpoint(upstream=relay.uri) as endpoint,
                sub2.metastore_endpoint(upstream=relay.uri) as endpoint2,
            ):
                warehouse = f"file://{work}/warehouse"
                # "direct" through the relay too: both paths take the same extra hop
                direct = HiveCatalog("direct", uri=relay.uri, warehouse=warehouse)
                via = HiveCatalog("via", uri=endpoint.uri, warehouse=warehouse)
                via2 = HiveCatalog("via2", uri=endpoint2.uri, warehouse=warehouse)
                via.create_namespace("ib")
                for name in ("a", "b", "c"):
                    table = via.create_table(f"ib.{name}", schema=schema)
                    table.append(pa.table({"id": [1], "v": ["x"]}, schema=schema))
                assert endpoint.wait_settled(30)  # the creates' and appends' reloads show
                order_s = load("table_order").wait_for_table_order(sub, "ib", 30)
                served, forwarded, reached = _read_workload(via, endpoint, relay)
                before = _pending_counts(endpoint)
                direct_s, via_s = _commit_times(direct, via, schema, commits)
                after = _pending_counts(endpoint)
                cleared = after[1] - before[1]
                pending_ms = 1e3 * (after[0] - before[0]) / max(1, cleared)
                pending_reads = after[2] - before[2]
                expired = after[3] - before[3]
                lost, race_s = _race_rounds(direct, via, via2, schema, rounds, sub2)
                print(f"  endpoint calls: {endpoint.stats.summary()}")
    finally:
        catalogd.stop()
        relay.close()
        hms.stop()
    return [
        Result(
            "PyIceberg read workload: read calls served from the cache",
            100.0 * served / max(1, served + forwarded),
            "%",
            100.0,
            goal="min",
            note=f"{served} served, {forwarded} forwarded, {reached} calls reached HMS; "
            f"catalogd's order of the tables published {order_s:.2f} s after the writes settled",
        ),
        Result(
            "PyIceberg commit (append): endpoint / direct time",
            via_s / direct_s,
            "x",
            1.2,
            goal="max",
            note=f"direct {direct_s * 1e3:.0f} ms, endpoint {via_s * 1e3:.0f} ms (median); "
            f"read-your-writes: the answer waits for nothing; objects pending {pending_ms:.0f} "
            f"ms each until seen cleared ({cleared} seen, {expired} reached the bound), "
            f"{pending_reads} reads forwarded as pending",
        ),
        Result(
            f"PyIceberg two-writer race, {rounds} rounds: commits lost",
            lost,
            "commits",
            0,
            goal="max",
            note=f"{race_s:.2f} s a round (2 commits, 1 retry)",
        ),
    ]


def _read_workload(via: Any, endpoint: Any, relay: Any) -> tuple[int, int, int]:
    """Reads (list, load, plan) through ``via``: (served, forwarded, calls reaching HMS)."""
    from subscriber.metastore import methods

    def reads(kinds: set[str]) -> int:
        return sum(
            n
            for method, counts in endpoint.stats.by_method().items()
            if not methods.is_write(method)
            for kind, n in counts.items()
            if kind in kinds
        )

    forwarded_kinds = {"locked", "pending", "stale", "unknown", "not_cached", "cannot_evaluate"}
    served0, forwarded0 = reads({"served"}), reads(forwarded_kinds)
    relay.reset()
    for _ in range(5):
        for ident in via.list_tables("ib"):
            table = via.load_table(ident)
            list(table.scan().plan_files())
        via.list_namespaces()
    reached = sum(relay.reset().values())
    return reads({"served"}) - served0, reads(forwarded_kinds) - forwarded0, reached


def _pending_counts(endpoint: Any) -> tuple[float, int, int, int]:
    """(seconds objects were pending, pending objects seen cleared, reads forwarded as
    pending, objects that reached the bound) so far."""
    stats = endpoint.stats
    pending_reads = sum(stats.reasons()["pending"].values())
    return stats.pending_seconds, stats.pending_cleared, pending_reads, stats.write_waits_timed_out


def _commit_times(direct: Any, via: Any, schema: Any, commits: int) -> tuple[float, float]:
    import pyarrow as pa

    times: dict[str, list[float]] = {"direct": [], "via": []}
    for i in range(commits + 1):
        # one table each: a commit of the other writer would make the next one race
        for mode, cat, name in (("direct", direct, "ib.b"), ("via", via, "ib.a")):
            table = cat.load_table(name)
            rows = pa.table({"id": [i], "v": [mode]}, schema=schema)
            started = time.perf_counter()
            table.append(rows)
            if i:  # the first of each: a warm-up
                times[mode].append(time.perf_counter() - started)
    return statistics.median(times["direct"]), statistics.median(times["via"])


def _race_rounds(
    direct: Any, via: Any, via2: Any, schema: Any, rounds: int, sub2: Any
) -> tuple[int, float]:
    """Rounds of: ``stale`` loads, ``other`` commits, ``stale`` commits. (lost, s/round)"""
    import pyarrow as pa

    via.create_table("ib.race", schema=schema)
    deadline = time.monotonic() + 30
    while not via2.table_exists("ib.race") and time.monotonic() < deadline:
        time.sleep(0.05)
    shapes = [(via, direct), (direct, via), (via, via2), (via2, via)]
    lost = 0
    started = time.monotonic()
    for i in range(rounds):
        stale, other = shapes[i % len(shapes)]
        loaded = stale.load_table("ib.race")
        other.load_table("ib.race").append(pa.table({"id": [2 * i], "v": ["o"]}, schema=schema))
        loaded.append(pa.table({"id": [2 * i + 1], "v": ["s"]}, schema=schema))
        ids = {r["id"] for r in direct.load_table("ib.race").scan().to_arrow().to_pylist()}
        lost = 2 * (i + 1) - len(ids & set(range(2 * i + 2)))
        if lost:
            print(f"  round {i}: {lost} commit(s) lost")
            break
    return lost, (time.monotonic() - started) / max(1, rounds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_shape_arguments(parser)
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per statement")
    parser.add_argument("--seconds", type=float, default=10.0, help="per throughput measure")
    parser.add_argument("--clients", type=int, default=8, help="concurrent Thrift clients")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--iceberg-only", action="store_true", help="only the PyIceberg part")
    which.add_argument("--no-iceberg", action="store_true", help="skip the PyIceberg part")
    parser.add_argument("--iceberg-commits", type=int, default=20, help="timed commits each")
    parser.add_argument("--iceberg-rounds", type=int, default=52, help="two-writer race rounds")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    results: list[Result] = []
    shape = shape_from(args)
    if not args.iceberg_only:
        with running_hms(args.data_dir, shape, batch=args.batch, build_results=results) as uri:
            print(f"HMS endpoint vs HMS: {shape}; {cpu_note()}")
            results += run(uri, args.repeats, args.seconds, args.clients)
    if not args.no_iceberg:
        print(f"PyIceberg through the HMS endpoint vs straight at HMS; {cpu_note()}")
        results += run_iceberg(args.iceberg_commits, args.iceberg_rounds)
    return finish("Spark through the HMS endpoint vs straight at HMS", results, args)


if __name__ == "__main__":
    raise SystemExit(main())
