"""Loading by SQL (``--hms-db``) vs by HMS Thrift, and SQL change detection cost.

::

    .venv/bin/python bench/sql_load_bench.py [--quick sizes: see run_all.py]

Both catalogs are written straight into throwaway PostgreSQL databases with SQL
inserts (``support/sql_catalog.py``: ``INSERT ... SELECT generate_series``, in
the rows HMS itself writes), kept in PostgreSQL between runs and rebuilt when
their shape changes, and read into the page cache before they are loaded
(``sql_catalog.prewarm``: minutes idle let the kernel reclaim them):

1. **large** (``--large-tables`` x ``--large-per-table`` partitions, 1,000,000 at
   full size): catalogd's SQL source loads it to *published* (in-process server,
   ``Operations``, the table loader pool and ``--processes`` load worker
   processes, as ``catalogd serve``), reporting partitions/s, the daemon's peak RSS
   growth per partition (measured first, in a fresh process) and the largest load
   worker's peak RSS; then the cost of one full SQL fingerprint pass (what
   detection runs after a write), of an idle detection cycle (nothing written: one
   query), and of one Thrift polling pass over the same catalog through an HMS
   started on that database (``--no-large-thrift-pass`` skips it).
2. **medium** (``--tables`` x ``--per-table`` + one ``big`` table of ``--big``
   partitions): a real HMS 2.3 runs on that database; the full load to
   published through SQL (``--sql-runs`` times after one untimed warm-up load, each
   with its worker processes started cold, no HMS running; the median counts) and
   through HMS Thrift, same
   pipeline, one Thrift
   polling pass (every table and partition name) vs one SQL fingerprint pass, and
   the latency from an ``ANALYZE``-like ``alter_partition`` through HMS to a
   subscriber, with SQL detection every second (``--changes`` of them).
"""

from __future__ import annotations

import argparse
import functools
import gc
import multiprocessing.forkserver
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support import sql_catalog
from support.measure import Result, add_output_argument, cpu_note, finish, peak_rss_bytes, rss_bytes

from catalogd.freshness.detector import ChangeDetector
from catalogd.freshness.polling import Poller
from catalogd.freshness.sql_detection import SqlPoller
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore, PostgresBackend
from catalogd.loading.table_loader import TableLoader
from catalogd.loading.workers import LoadWorkers
from catalogd.runtime_info import RuntimeInfo
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import MetastoreSource, ThriftSource
from catalogd.sources.sql import SqlSource
from catalogd.status import read_shape
from catalogd.writes.operations import Operations
from subscriber import CatalogSubscriber


def load_worker_pids() -> list[int]:
    """This process's load workers, found in ``/proc`` (``LoadWorkers`` lists none): its
    children that run its own command line (forked from it), and the children of its
    multiprocessing fork server."""
    me, own = os.getpid(), Path("/proc/self/cmdline").read_bytes()
    processes: dict[int, tuple[int, bytes]] = {}  # pid: (parent pid, command line)
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
            if stat:
                parent = int(stat.rpartition(")")[2].split()[1])
                processes[int(entry.name)] = (parent, (entry / "cmdline").read_bytes())
        except OSError:
            continue  # gone meanwhile
    servers = {
        pid
        for pid, (parent, command) in processes.items()
        if parent == me and b"multiprocessing.forkserver" in command
    }
    return sorted(
        pid
        for pid, (parent, command) in processes.items()
        if (parent == me and command == own) or parent in servers
    )


def pg_url(database: str) -> str:
    return f"postgresql+psycopg://postgres@127.0.0.1:5432/{database}"


@dataclass
class Loaded:
    seconds: float  # to published
    ops: Operations
    partitions: int  # published
    loader: TableLoader
    server: CatalogServer

    def __iter__(self) -> Iterator[Any]:
        return iter((self.seconds, self.ops, self.partitions))


@contextmanager
def published(
    factory: Callable[[], MetastoreSource], pool: int, processes: int = 0
) -> Iterator[Loaded]:
    """Load everything as ``catalogd serve`` does (``processes`` load workers, 0: none);
    yields what was loaded (unpacks as seconds to published, ops, partitions)."""
    with ExitStack() as stack:
        server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*"))
        if processes:
            # Every load starts its workers cold, as a daemon start does: no fork server
            # left running by an earlier load (private API: multiprocessing has no other).
            multiprocessing.forkserver._forkserver._stop()  # type: ignore[attr-defined]
        started = time.monotonic()
        workers = LoadWorkers(factory, processes).start() if processes else None
        if workers is not None:
            stack.callback(workers.close)
        ops = Operations(server, factory, workers=workers)
        stack.callback(ops.close)
        ops.load_names()
        server.start()
        stack.callback(server.close)
        loader = TableLoader(ops, pool_size=pool).start()
        stack.callback(loader.close)
        loader.enqueue_unloaded()
        assert loader.wait_idle(7200), "load did not finish"
        seconds = time.monotonic() - started
        parts = read_shape(server).objects_by_type.get("HDFS_PARTITION", 0)
        yield Loaded(seconds, ops, parts, loader, server)


def ops_server(ops: Operations) -> CatalogServer:
    """The server ``ops`` commits to (a second Operations over it only reads)."""
    return ops.server


class _NoActions:
    def relist(self, db: str) -> None: ...

    def reload(self, db: str, table: str) -> None: ...

    def refresh_partitions(self, db: str, table: str, names: list[str]) -> None: ...


def sql_pass(ops: Operations) -> tuple[float, int, float | None]:
    """One full SQL fingerprint pass (after a baseline): (seconds, SQL round trips), and
    the seconds of an idle cycle (the write position unmoved for two cycles; None if
    something kept writing to the database server)."""
    poller = SqlPoller(ops)
    poller.attach(lambda fn, *args: fn(*args), _NoActions())
    poller.baseline()
    before = poller.queries
    started = time.monotonic()
    poller.cycle()
    full, queries = time.monotonic() - started, poller.queries - before
    for _ in range(5):
        started = time.monotonic()
        poller.cycle()
        if poller.skipped:
            return full, queries, time.monotonic() - started
    return full, queries, None


def change_latencies(loaded: Loaded, hms_uri: str, changes: int) -> list[float]:
    """Seconds from an ``ANALYZE``-like ``alter_partition`` through HMS Thrift to a
    subscriber seeing the new parameters, with SQL detection every second."""
    detector = ChangeDetector(
        loaded.ops, loaded.loader, RuntimeInfo(), mode="poll", interval_s=1.0,
        poller=SqlPoller(loaded.ops),
    )  # fmt: skip
    latencies = []
    with ExitStack() as stack:
        stack.callback(detector.close)
        detector.start()
        sub = stack.enter_context(CatalogSubscriber(loaded.server.endpoint))
        sub.wait_synced(600)
        client = stack.enter_context(MetastoreClient(hms_uri, timeout_s=600))
        time.sleep(2.5)  # the detector's baseline and a first cycle
        token = str(time.time_ns())  # earlier runs left their own values in the database
        for i in range(changes):
            part = client.call("get_partition", "bench", "big", ["2024-01-01", f"r{i}"])
            wanted = f"{token}{i}"
            part.parameters = {**part.parameters, "numRows": wanted}
            started = time.monotonic()
            client.call("alter_partition", "bench", "big", part)
            spec = f"dt=2024-01-01/region=r{i}"
            while sub.list_partitions("bench.big", spec)[0].hms_parameters.get("numRows") != wanted:
                if time.monotonic() - started > 60:
                    raise TimeoutError(f"change {i} not seen in 60 s")
                time.sleep(0.005)
            latencies.append(time.monotonic() - started)
    return latencies


def thrift_pass(ops: Operations) -> tuple[float, int]:
    """One Thrift polling pass over every table: (seconds, HMS calls)."""
    calls = 0

    def call(fn: Callable[..., Any], *args: Any) -> Any:
        nonlocal calls
        calls += 1
        return fn(*args)

    started = time.monotonic()
    Poller(ops, call, _NoActions()).cycle(10**9)
    return time.monotonic() - started, calls


def ensure(database: str, args: argparse.Namespace, **shape: int) -> list[Result]:
    expected = shape["tables"] * shape["per_table"] + shape["big"]
    if sql_catalog.built_partitions(database) == expected:
        return []
    print(f"building {database}: {shape} by SQL inserts")
    seconds = sql_catalog.build(
        database,
        warehouse=f"file:{args.data_dir}/warehouse",
        work_dir=args.data_dir / "work",
        cache_dir=args.data_dir / "cache",
        **shape,
    )
    return [
        Result(
            f"build {database} by SQL inserts",
            expected / seconds,
            "partitions/s",
            note=f"{expected} partitions in {seconds:.1f} s",
        )
    ]


def run(args: argparse.Namespace) -> list[Result]:
    results: list[Result] = []
    large, medium = "catalogd_bench_sql_large", "catalogd_bench_sql_medium"
    if args.quick_names:
        large, medium = large + "_quick", medium + "_quick"
    results += ensure(large, args, tables=args.large_tables, per_table=args.large_per_table, big=0)
    n_large = args.large_tables * args.large_per_table
    print(f"  {large}: read into the page cache in {sql_catalog.prewarm(large):.1f} s")
    gc.collect()
    rss_before = rss_bytes()
    with published(functools.partial(SqlSource, pg_url(large)), args.pool_size, args.processes) as (
        seconds,
        ops,
        parts,
    ):
        assert parts == n_large, (parts, n_large)
        peak = peak_rss_bytes() - rss_before
        worker_peaks = [peak_rss_bytes(pid) for pid in load_worker_pids()]
        print(f"  large by SQL: {parts} partitions to published in {seconds:.1f} s")
        fp_s, fp_q, idle_s = sql_pass(ops)
        large_poll: tuple[float, int] | None = None
        if args.large_thrift_pass:
            # The same catalog, compared by Thrift polling against an HMS on that database.
            with EmbeddedMetastore(
                args.data_dir / "hms-large",
                backend=PostgresBackend(database=large),
                fast_start=False,
            ) as hms_large:
                thrift_ops = Operations(
                    ops_server(ops),
                    lambda: ThriftSource(MetastoreClient(hms_large.uri, timeout_s=600)),
                )
                try:
                    large_poll = thrift_pass(thrift_ops)
                finally:
                    thrift_ops.close()
                    del thrift_ops  # it holds the large catalog's server too
    results += [
        Result(
            "SQL source: partitions/s to published (large)",
            parts / seconds,
            "partitions/s",
            target=20_000,
            goal="min",
            note=f"{parts} partitions in {seconds:.1f} s, {args.pool_size} loader threads, "
            f"{args.processes} load processes",
        ),
        Result(
            "catalogd peak RSS growth per partition (large, SQL)",
            peak / parts,
            "bytes/partition",
            note=f"{peak / 2**20:.0f} MiB over {parts} partitions",
        ),
        Result(
            "load worker peak RSS, largest (large, SQL)",
            max(worker_peaks, default=0) / 2**20,
            "MiB",
            note=f"{len(worker_peaks)} workers; each holds one table (or range) at a time",
        ),
        Result(
            "SQL fingerprint pass, full (large)",
            fp_s * 1000,
            "ms",
            note=f"{fp_q} source round trips, {parts} partitions; runs after writes",
        ),
        *(
            [
                Result(
                    "Thrift polling pass (large)",
                    large_poll[0] * 1000,
                    "ms",
                    note=f"{large_poll[1]} HMS calls; "
                    f"{large_poll[0] / fp_s:.0f}x the full SQL pass",
                )
            ]
            if large_poll
            else []
        ),
        Result(
            "SQL detection cycle, idle (large)",
            idle_s * 1000 if idle_s is not None else float("nan"),
            "ms",
            note="1 round trip: the write position unmoved for two cycles"
            if idle_s is not None
            else "never idle: something kept writing to the database server",
        ),
    ]
    # The large catalog (~1 GB) is garbage from here: left referenced, it stayed alive
    # through the first medium load, whose collections walked it.
    del ops
    gc.collect()

    results += ensure(medium, args, tables=args.tables, per_table=args.per_table, big=args.big)
    n_medium = args.tables * args.per_table + args.big
    print(f"  {medium}: read into the page cache in {sql_catalog.prewarm(medium):.1f} s")
    # The SQL loads first, with no HMS running beside them (a daemon reading the database
    # needs none), after one untimed load that brings the medium catalog back into the
    # database server's caches (the large one pushed it out; Thrift then finds it warm
    # too); the last one (untimed) serves the detection measurements, which need an HMS.
    sql_runs: list[float] = []
    for run in range(args.sql_runs + 1):
        with published(
            functools.partial(SqlSource, pg_url(medium)), args.pool_size, args.processes
        ) as (sql_s, ops, parts):
            assert parts == n_medium, (parts, n_medium)
            print(f"  medium by SQL: {n_medium} partitions in {sql_s:.1f} s", end="")
            print(" (warm-up, untimed)" if run == 0 else "")
            if run:
                sql_runs.append(sql_s)
        del ops  # each load starts with the previous one's catalog freed
        gc.collect()
    with EmbeddedMetastore(
        args.data_dir / "hms-medium", backend=PostgresBackend(database=medium), fast_start=False
    ) as hms:
        with published(
            lambda: ThriftSource(MetastoreClient(hms.uri, timeout_s=600)), args.pool_size
        ) as (
            thrift_s,
            ops,
            parts,
        ):
            assert parts == n_medium, (parts, n_medium)
            poll_s, poll_calls = thrift_pass(ops)
        print(f"  medium by Thrift: {n_medium} partitions in {thrift_s:.1f} s")
        with published(
            functools.partial(SqlSource, pg_url(medium)), args.pool_size, args.processes
        ) as loaded:
            fp_s, fp_q, idle_s = sql_pass(loaded.ops)
            latencies = sorted(change_latencies(loaded, hms.uri, args.changes))
        sql_s = statistics.median(sql_runs)
    shape_note = f"{args.tables}x{args.per_table} + {args.big} partitions"
    results += [
        Result("Thrift source: full load to published (medium)", thrift_s, "s", note=shape_note),
        Result("SQL source: full load to published (medium)", sql_s, "s", note=shape_note),
        Result(
            "SQL vs Thrift full load speed-up",
            thrift_s / sql_s,
            "x",
            target=5,
            goal="min",
            note=f"{n_medium / sql_s:,.0f} vs {n_medium / thrift_s:,.0f} partitions/s; SQL: "
            f"median of {len(sql_runs)} loads ({', '.join(f'{x:.2f}' for x in sql_runs)} s)",
        ),
        Result(
            "Thrift polling pass (medium)",
            poll_s * 1000,
            "ms",
            note=f"{poll_calls} HMS calls",
        ),
        Result(
            "SQL fingerprint pass (medium)",
            fp_s * 1000,
            "ms",
            note=f"{fp_q} source round trips; {poll_s / fp_s:.0f}x cheaper than Thrift polling",
        ),
        Result(
            "change -> subscriber, SQL detection every 1 s (medium), p50",
            latencies[len(latencies) // 2],
            "s",
            target=2.0,
            goal="max",
            note=f"alter_partition of one partition of 'big' via HMS; {len(latencies)} changes, "
            f"max {latencies[-1]:.2f} s",
        ),
    ]
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--per-table", type=int, default=100)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--large-tables", type=int, default=100)
    parser.add_argument("--large-per-table", type=int, default=10_000)
    parser.add_argument("--pool-size", type=int, default=4)
    parser.add_argument("--changes", type=int, default=10, help="changes timed for latency")
    parser.add_argument(
        "--large-thrift-pass",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time one Thrift polling pass over the large catalog (starts an HMS on it)",
    )
    parser.add_argument(
        "--processes", type=int, default=2, help="load worker processes (0: in the loader threads)"
    )
    parser.add_argument(
        "--sql-runs", type=int, default=3, help="SQL loads of the medium catalog (median taken)"
    )
    parser.add_argument(
        "--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "catalogd-bench-sql"
    )
    parser.add_argument(
        "--quick-names", action="store_true", help="use the *_quick databases (small sizes)"
    )
    add_output_argument(parser)
    args = parser.parse_args(argv)
    print(cpu_note())
    return finish("SQL source vs Thrift source", run(args), args)


if __name__ == "__main__":
    raise SystemExit(main())
