"""Propagation: one changed object committed -> applied in ALL of N subscriber processes.

::

    .venv/bin/python bench/propagation.py [--subscribers 1,10,50] [--changes 200] [--rate 10]
        [--mode replica|on-demand|floor]

catalogd runs in this process (an in-process :class:`CatalogServer` on loopback,
fed from memory: HMS time is not what this measures). For each N, N subscriber
processes (``support/subscriber_process.py fanout``) sync, then:

1. **raw baseline**: a plain pyzmq PUB in this process sends ``--changes``
   200-byte messages at ``--rate``/s to a plain SUB in every process: the
   physical limit of broadcast here;
2. **ours**: ``--changes`` commits at ``--rate``/s, each replacing one table
   header (``TABLE:bench.t0000``) with a new payload; every subscriber's
   listener notes when it applied each version.

Per change, "in all N" is the latest arrival among the N processes minus the send
time: the PUB send for raw; the moment the commit's Future resolved (the server
thread has handed the delta to the PUB socket) for ours, with the commit call as
a second, stricter start. All times are ``CLOCK_MONOTONIC`` readings taken in the
process where the event happened (one clock for the whole machine).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import Any

import zmq
from support import synthetic
from support.measure import Result, add_output_argument, cpu_note, finish, summarize

from catalogd.server.thread import CatalogServer, ServerConfig
from subscriber.protocol import codec

HERE = Path(__file__).resolve().parent
# Run from bench/ (``cwd=HERE``), where ``support`` is importable.
WORKER = [sys.executable, "-m", "support.subscriber_process"]
CHANGED_KEY = "TABLE:bench.t0000"
TARGET_P50_S, TARGET_P99_S = 0.005, 0.050


def changed_payloads(base: bytes, count: int) -> list[bytes]:
    """``count`` distinct versions of one table header (a parameter bumped each time)."""
    payloads = []
    for i in range(count):
        obj = codec.decode_object(base)
        obj.table.metastore_table.parameters["bench.change"] = str(i)
        payloads.append(codec.encode_object(obj))
    return payloads


def run_round(
    server: CatalogServer,
    payloads: list[bytes],
    n: int,
    rate: float,
    timeout_s: float,
    mode: str = "replica",
) -> list[Result]:
    """Start ``n`` subscriber processes, run the raw and the catalog phase, collect."""
    ctx: zmq.Context = zmq.Context.instance()
    raw = ctx.socket(zmq.PUB)
    raw.setsockopt(zmq.SNDHWM, 100_000)
    raw.bind("tcp://127.0.0.1:*")
    pull = ctx.socket(zmq.PULL)
    pull.bind("tcp://127.0.0.1:*")
    endpoints = [e.getsockopt(zmq.LAST_ENDPOINT).decode() for e in (raw, pull)]
    procs = [
        subprocess.Popen([*WORKER, "fanout", server.endpoint, *endpoints, str(i), mode], cwd=HERE)
        for i in range(n)
    ]
    try:
        started = time.monotonic()
        _wait_ready(raw, pull, n, deadline=started + timeout_s)
        print(f"  N={n}: {n} subscribers synced in {time.monotonic() - started:.1f} s")
        sent = _raw_phase(raw, len(payloads), rate)
        raw.send(b"M")  # the phases' boundary, for the per-thread CPU times
        time.sleep(0.2)  # which every process notes before the first change
        published, submitted = _catalog_phase(server, payloads, rate)
        final = max(published)
        reports = _collect(raw, pull, n, final, deadline=time.monotonic() + timeout_s)
    finally:
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        raw.close(linger=0)
        pull.close(linger=0)
    return _results(n, sent, published, submitted, reports)


def _wait_ready(raw: zmq.Socket, pull: zmq.Socket, n: int, deadline: float) -> None:
    # A SUB joins a PUB asynchronously: keep saying hello until all n heard one.
    ready: set[int] = set()
    while len(ready) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(ready)} of {n} subscribers became ready")
        raw.send(b"H")
        while pull.poll(50):
            ready.add(_recv_report(pull)["index"])


def _recv_report(pull: zmq.Socket) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(pull.recv())
    return report


def _pace(start: float, i: int, rate: float) -> None:
    delay = start + i / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)  # pacing the load, not waiting for readiness


def _raw_phase(raw: zmq.Socket, count: int, rate: float) -> dict[int, float]:
    sent: dict[int, float] = {}
    pad = b"x" * (200 - 9)
    start = time.monotonic()
    for i in range(count):
        _pace(start, i, rate)
        frame = b"P" + i.to_bytes(8, "big") + pad
        sent[i] = time.monotonic()
        raw.send(frame)
    return sent


def _catalog_phase(
    server: CatalogServer, payloads: list[bytes], rate: float
) -> tuple[dict[int, float], dict[int, float]]:
    published: dict[int, float] = {}
    submitted: dict[int, float] = {}
    lock = threading.Lock()

    def on_published(future: Future[Any], t_submit: float) -> None:
        now = time.monotonic()  # runs on the server thread right after the publish
        delta = future.result()
        with lock:
            published[delta.to_version] = now
            submitted[delta.to_version] = t_submit

    futures = []
    start = time.monotonic()
    for i, payload in enumerate(payloads):
        _pace(start, i, rate)
        t_submit = time.monotonic()
        future = server.commit({CHANGED_KEY: payload})
        future.add_done_callback(partial(on_published, t_submit=t_submit))
        futures.append(future)
    for future in futures:
        future.result(timeout=30)
    with lock:
        return dict(published), dict(submitted)


def _collect(
    raw: zmq.Socket, pull: zmq.Socket, n: int, final: int, deadline: float
) -> list[dict[str, Any]]:
    reports: dict[int, dict[str, Any]] = {}
    while len(reports) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(reports)} of {n} subscribers reported")
        raw.send(b"E%d" % final)  # repeated: a process may still be busy
        while pull.poll(200):
            report = _recv_report(pull)
            if "applied" in report:
                reports[report["index"]] = report
    return list(reports.values())


def _results(
    n: int,
    sent: dict[int, float],
    published: dict[int, float],
    submitted: dict[int, float],
    reports: Sequence[dict],
) -> list[Result]:
    raw_seen = [dict(r["raw"]) for r in reports]
    applied = [dict(r["applied"]) for r in reports]
    raw_all = [max(seen[seq] for seen in raw_seen) - t for seq, t in sent.items()]
    ours_all, ours_submit_all = [], []
    for version, t_pub in published.items():
        latest = max(seen[version] for seen in applied)
        ours_all.append(latest - t_pub)
        ours_submit_all.append(latest - submitted[version])
    raw_s, ours_s, sub_s = summarize(raw_all), summarize(ours_all), summarize(ours_submit_all)
    gaps = sum(r["gaps"] for r in reports)
    print(f"  N={n} raw PUB->all SUB:        {raw_s.ms()}")
    print(f"  N={n} published->applied all:  {ours_s.ms()}")
    print(f"  N={n} commit()->applied all:   {sub_s.ms()}  (gaps repaired: {gaps})")
    # CPU per change, per subscriber process; times N over the machine's cores, it
    # bounds how soon the last of N processes can be done with a change.
    count = len(published)
    cpu_raw = sum(r["cpu_raw"] for r in reports) / n / max(1, len(sent) - 1)
    cpu_ours = sum(r["cpu_ours"] for r in reports) / n / count
    print(
        f"  N={n} CPU per change in each subscriber process: raw {cpu_raw * 1e6:.0f} us, "
        f"ours {cpu_ours * 1e6:.0f} us (phases of equal length, idle ticks included)"
    )
    print(f"  N={n} of which, by thread: {_by_thread(reports, len(sent) - 1, count)}")
    at_target = n >= 50
    return [
        Result(
            f"propagation N={n} p50 (published->applied in all)",
            ours_s.p50 * 1e3,
            "ms",
            TARGET_P50_S * 1e3 if at_target else None,
            note=f"raw fan-out p50 {raw_s.p50 * 1e3:.2f} ms, "
            f"ours/raw {ours_s.p50 / raw_s.p50:.1f}x",
        ),
        Result(
            f"propagation N={n} p99 (published->applied in all)",
            ours_s.p99 * 1e3,
            "ms",
            TARGET_P99_S * 1e3 if at_target else None,
            note=f"raw fan-out p99 {raw_s.p99 * 1e3:.2f} ms, "
            f"ours/raw {ours_s.p99 / raw_s.p99:.1f}x",
        ),
        Result(
            f"propagation N={n} p50/p99 from commit() call",
            sub_s.p50 * 1e3,
            "ms",
            note=f"p99 {sub_s.p99 * 1e3:.2f} ms",
        ),
        Result(
            f"propagation N={n} subscriber CPU per change",
            cpu_ours * 1e6,
            "us",
            note=f"raw SUB {cpu_raw * 1e6:.0f} us; x N / cores bounds the latency to all",
        ),
    ]


def _by_thread(reports: Sequence[dict], raw_count: int, count: int) -> str:
    """Each thread's CPU per change (mean over the processes), raw phase -> ours."""
    per: dict[str, list[float]] = {}
    for report in reports:
        first, middle, last = report["threads"]
        for name in last:
            raw_ns = middle.get(name, 0) - first.get(name, 0)
            ours_ns = last[name] - middle.get(name, 0)
            got = per.setdefault(name, [0.0, 0.0])
            got[0] += raw_ns / 1e3 / raw_count / len(reports)
            got[1] += ours_ns / 1e3 / count / len(reports)
    ranked = sorted(per.items(), key=lambda item: -item[1][1])
    return ", ".join(f"{name} {raw:.0f} -> {ours:.0f} us" for name, (raw, ours) in ranked)


def run(
    subscribers: Sequence[int],
    changes: int,
    rate: float,
    tables: int = 10,
    timeout_s: float = 300.0,
    mode: str = "replica",
) -> list[Result]:
    print(f"propagation: N in {list(subscribers)}, {changes} changes at {rate}/s; {cpu_note()}")
    server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*"))
    catalog: dict[str, bytes] = {}
    for table_payloads in synthetic.catalog_payloads(tables, 10, 10):
        catalog.update(table_payloads)
    server.commit(catalog).result()
    server.start()
    results = []
    try:
        for n in subscribers:
            payloads = changed_payloads(catalog[CHANGED_KEY], changes)
            catalog[CHANGED_KEY] = payloads[-1]
            got = run_round(server, payloads, n, rate, timeout_s, mode)
            if mode != "replica":
                got = [dataclasses.replace(r, measure=f"{mode}: {r.measure}") for r in got]
            results += got
    finally:
        server.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--subscribers", default="1,10,50", help="comma-separated N values")
    parser.add_argument("--changes", type=int, default=200, help="changes per N (default 200)")
    parser.add_argument("--rate", type=float, default=10.0, help="changes per second")
    parser.add_argument(
        "--mode",
        choices=("replica", "on-demand", "floor"),
        default="replica",
        help="subscriber mode; floor: no subscriber, the least any Python one does per "
        "change (blocking recv, the scan, the cache's apply), for comparison",
    )
    add_output_argument(parser)
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.subscribers.split(",")]
    return finish("propagation", run(counts, args.changes, args.rate, mode=args.mode), args)


if __name__ == "__main__":
    raise SystemExit(main())
