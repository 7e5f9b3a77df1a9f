"""catalogd serving many on-demand subscribers' fetches: server-thread stall and latency.

::

    .venv/bin/python bench/fetch_storm.py [--tables 100] [--clients 50] [--period 0.01]

A catalog of ``tables`` x 1,000 partitions (realistic payloads, cached by
``sync_bench.py``) in an in-process :class:`CatalogServer`; ``--clients`` raw DEALER
clients (in ``--procs`` processes, ``support/fetcher_process.py``) each fetch a random
table's header every ``--period`` seconds for ``--seconds``. A separate process
watches the heartbeats (``support/catalogd_target.Heartbeats``): a gap beyond the
interval is a stall of the server thread. Measured first with no clients (the
baseline, same run). Targets (issue 25): stall max <= 100 ms, fetch p99 <= 10 ms.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zmq
from support.catalogd_target import Heartbeats
from support.measure import Result, add_output_argument, cpu_note, finish, percentile
from sync_bench import cached_catalog

from catalogd.server.thread import CatalogServer, ServerConfig

HERE = Path(__file__).resolve().parent
DEFAULT_DIR = Path(tempfile.gettempdir()) / "catalogd-bench-sync"
HEARTBEAT_S = 0.05


def run(args: argparse.Namespace) -> list[Result]:
    every = f"{args.period * 1e3:g} ms"
    print(f"fetch storm: {args.clients} clients, one fetch each per {every}; {cpu_note()}")
    changes: dict[str, bytes] = {}
    for payloads in cached_catalog(args.data_dir, args.tables, 100, 10):
        changes.update(payloads)
    server = CatalogServer(
        ServerConfig(
            bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*", heartbeat_interval_s=HEARTBEAT_S
        )
    )
    server.commit(changes).result()
    del changes
    server.start()
    beats = Heartbeats(server.pub_endpoint, HEARTBEAT_S)
    ctx: zmq.Context = zmq.Context.instance()
    pull = ctx.socket(zmq.PULL)
    pull.bind("tcp://127.0.0.1:*")
    report = pull.getsockopt(zmq.LAST_ENDPOINT).decode()
    try:
        time.sleep(1.0)
        beats.start()
        time.sleep(args.seconds)
        idle = sorted(beats.stop()) or [0.0]
        per_proc = -(-args.clients // args.procs)
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "support.fetcher_process",
                    server.endpoint,
                    report,
                    str(per_proc),
                    str(args.tables),
                    str(args.period),
                    str(args.seconds),
                ],
                cwd=HERE,
            )  # fmt: skip
            for _ in range(args.procs)
        ]
        beats.start()
        times: list[float] = []
        errors = 0
        for _ in procs:
            if not pull.poll(int((args.seconds + 60) * 1000)):
                raise TimeoutError("a fetcher process did not report")
            got = pull.recv_json()
            times += got["times"]
            errors += got["errors"]
        stalls = sorted(beats.stop()) or [0.0]
        for proc in procs:
            proc.wait(30)
        fetches = server.stats.fetches
    finally:
        beats.close()
        pull.close(linger=0)
        server.close()
    times.sort()
    rate = len(times) / args.seconds
    wanted = args.clients / args.period
    return [
        Result(
            "fetch round trip p99",
            percentile(times, 99) * 1e3,
            "ms",
            10,
            note=f"p50 {percentile(times, 50) * 1e3:.2f} ms; {len(times):,} fetches "
            f"({rate:,.0f}/s of {wanted:,.0f}/s asked), {errors} errors, "
            f"server counted {fetches:,}",
        ),
        Result(
            "server-thread stall max under fetches",
            stalls[-1] * 1e3,
            "ms",
            100,
            note=f"p99 {percentile(stalls, 99) * 1e3:.1f} ms; idle baseline max "
            f"{idle[-1] * 1e3:.1f} ms, p99 {percentile(idle, 99) * 1e3:.1f} ms",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--tables", type=int, default=100, help="tables of 1,000 partitions")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--procs", type=int, default=2, help="fetcher processes")
    parser.add_argument("--period", type=float, default=0.01, help="seconds between fetches")
    parser.add_argument("--seconds", type=float, default=10.0)
    add_output_argument(parser)
    return finish("fetch_storm", run(parser.parse_args(argv)), parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
