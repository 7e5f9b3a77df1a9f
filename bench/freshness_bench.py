"""Issue 4's benchmarks: what freshness costs, against the real benchmark HMS.

::

    .venv/bin/python bench/freshness_bench.py [--poll-tables 1000] [--interval 5]

1. **Polling cost**: HMS calls of one change-detection cycle over a database of
   ``--poll-tables`` partitioned tables (created once over Thrift, reused), the
   cycle's duration, and the calls per second that costs at ``--interval``.
2. **Refresh of one partition** of ``bench.big`` (10,000 partitions): time of
   ``refresh --partition`` (HMS read included) and the bytes actually published
   for it, captured with a raw SUB socket; beside it, a whole-table refresh when
   one partition changed, and republishing the whole table as the baseline.
3. **DDL → subscriber** in polling mode: a table created over Thrift, seen by a
   subscriber (interval ``--visibility-interval``); the events mode is measured
   by ``tests/e2e/test_freshness_events.py`` against an HMS that logs events.

Catalogd runs in-process (server, operations, loader, detector) on loopback.
"""

from __future__ import annotations

import argparse
import time

import zmq
from support import synthetic
from support.hms import BIG, add_shape_arguments, running_hms, shape_from
from support.measure import Result, add_output_argument, finish, summarize

from catalogd.freshness.detector import ChangeDetector
from catalogd.hms.client import MetastoreClient
from catalogd.loading.table_loader import TableLoader
from catalogd.runtime_info import RuntimeInfo
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import ThriftSource
from catalogd.writes.operations import Operations
from subscriber.api import CatalogSubscriber

POLL_DB = "poll_bench"


def ensure_poll_tables(uri: str, count: int, warehouse: str) -> None:
    with MetastoreClient(uri) as client:
        try:
            existing = set(client.get_all_tables(POLL_DB))
        except Exception:  # noqa: BLE001
            existing = set()
        if not client.get_all_databases().count(POLL_DB):
            db = synthetic.database(warehouse)
            db.name = POLL_DB
            db.locationUri = f"{warehouse}/{POLL_DB}.db"
            client.raw.create_database(db)
        started = time.monotonic()
        made = 0
        for i in range(count):
            name = f"p{i:04d}"
            if name in existing:
                continue
            table = synthetic.table(name, warehouse)
            table.dbName = POLL_DB
            table.sd.location = f"{warehouse}/{POLL_DB}.db/{name}"
            client.raw.create_table(table)
            made += 1
        if made:
            print(f"created {made} tables in {time.monotonic() - started:.1f}s")


def start_catalogd(uri: str) -> tuple[CatalogServer, Operations, TableLoader]:
    server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*"))
    ops = Operations(server, lambda: ThriftSource(MetastoreClient(uri)))
    ops.load_names()
    server.start()
    loader = TableLoader(ops, pool_size=2).start()
    loader.enqueue_unloaded()
    if not loader.wait_idle(1800):
        raise RuntimeError("tables did not load in 30 minutes")
    return server, ops, loader


def polling_cost(
    ops: Operations, loader: TableLoader, tables: int, interval: float
) -> list[Result]:
    info = RuntimeInfo()
    detector = ChangeDetector(ops, loader, info, mode="poll", max_calls_per_s=1e9)
    detector.run_once()  # warm: connections, first decode
    calls_before, started = detector.stats.hms_calls, time.monotonic()
    detector.run_once()
    cycle = time.monotonic() - started
    calls = detector.stats.hms_calls - calls_before
    per_s = calls / max(interval, cycle)
    return [
        Result(f"poll cycle: HMS calls ({tables}+ tables)", calls, "calls"),
        Result("poll cycle: duration (no rate cap)", cycle, "s"),
        Result(
            f"poll cost at a {interval:g}s interval",
            per_s,
            "calls/s",
            note="1 + D + ceil(T/100) + P calls per cycle",
        ),
        Result(
            "poll cost with the default cap (100/s)",
            min(per_s, 100.0),
            "calls/s",
            note=f"cycle stretched to {calls / 100:.1f}s" if calls / 100 > interval else "",
        ),
    ]


def wire_bytes(server: CatalogServer, action) -> tuple[int, float]:  # noqa: ANN001
    """Bytes published (deltas only, heartbeats excluded) while ``action`` runs."""
    ctx = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"d")
    sub.setsockopt(zmq.SUBSCRIBE, b"c")
    sub.connect(server.pub_endpoint)
    time.sleep(0.5)  # let the subscription reach the publisher
    started = time.monotonic()
    action()
    elapsed = time.monotonic() - started
    total = 0
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        if sub.poll(100):
            total += sum(len(f) for f in sub.recv_multipart())
    sub.close(linger=0)
    return total, elapsed


def refresh_costs(uri: str, server: CatalogServer, ops: Operations) -> list[Result]:
    results = []
    with MetastoreClient(uri) as client:
        names = client.get_partition_names(synthetic.DB, BIG)
        part = client.get_partitions_by_names(synthetic.DB, BIG, [names[0]])[0]
        times = []
        for i in range(5):
            part.parameters = dict(part.parameters, numRows=str(1000 + i))
            client.raw.alter_partition(synthetic.DB, BIG, part)
            nbytes, elapsed = wire_bytes(
                server, lambda: ops.refresh_partitions(synthetic.DB, BIG, [names[0]])
            )
            times.append(elapsed)
        results.append(
            Result(
                f"refresh 1 partition of {len(names)}: time (HMS read incl.)",
                summarize(times).p50,
                "s",
            )
        )
        results.append(Result("refresh 1 partition: bytes on the wire", nbytes, "B", target=2048))
        part.parameters = dict(part.parameters, numRows="999999")
        client.raw.alter_partition(synthetic.DB, BIG, part)
        whole, elapsed = wire_bytes(server, lambda: ops.load_table(synthetic.DB, BIG))
        results.append(Result("refresh whole table, 1 partition changed: time", elapsed, "s"))
        results.append(Result("refresh whole table, 1 partition changed: bytes", whole, "B"))

    baseline = sum(
        len(server.submit(lambda c, k=k: c.get(k).payload).result())
        for k in server.submit(lambda c: sorted(c.table_keys(synthetic.DB, BIG))).result()
    )
    results.append(Result("baseline: the whole table's objects (uncompressed)", baseline, "B"))
    return results


def visibility(uri: str, warehouse: str, interval: float, rounds: int) -> list[Result]:
    server, ops, loader = start_catalogd(uri)
    detector = ChangeDetector(ops, loader, RuntimeInfo(), mode="poll", interval_s=interval).start()
    samples = []
    try:
        with CatalogSubscriber(server.endpoint) as sub, MetastoreClient(uri) as client:
            sub.wait_synced(60)
            for i in range(rounds):
                name = f"vis{int(time.time())}_{i}"
                table = synthetic.table(name, warehouse)
                started = time.monotonic()
                client.raw.create_table(table)
                while name not in sub.list_tables(synthetic.DB):
                    time.sleep(0.005)
                samples.append(time.monotonic() - started)
                client.raw.drop_table(synthetic.DB, name, True)
    finally:
        detector.close()
        loader.close()
        server.close()
        ops.close()
    s = summarize(samples)
    return [
        Result(f"DDL -> subscriber, polling every {interval:g}s: p50", s.p50, "s"),
        Result(f"DDL -> subscriber, polling every {interval:g}s: max", s.max, "s"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_shape_arguments(parser)
    parser.add_argument("--poll-tables", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--visibility-interval", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=10)
    add_output_argument(parser)
    args = parser.parse_args(argv)
    results: list[Result] = []
    with running_hms(args.data_dir, shape_from(args), batch=args.batch) as uri:
        warehouse = f"file:{args.data_dir}/warehouse"
        ensure_poll_tables(uri, args.poll_tables, warehouse)
        server, ops, loader = start_catalogd(uri)
        try:
            results += polling_cost(ops, loader, args.poll_tables, args.interval)
            results += refresh_costs(uri, server, ops)
        finally:
            loader.close()
            server.close()
            ops.close()
        results += visibility(uri, warehouse, args.visibility_interval, args.rounds)
    return finish("freshness (issue 4)", results, args)


if __name__ == "__main__":
    raise SystemExit(main())
