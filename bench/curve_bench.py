"""CURVE on vs off: what encryption and authentication cost, measured in the same run.

::

    .venv/bin/python bench/curve_bench.py [--subscribers 1,10,50] [--changes 200] [--rate 20]
                                          [--tables 1000 --partitions 1000]

For each mode (``plain``, then ``curve``: every socket a CURVE server, a ZAP
handler checking each subscriber's key) catalogd runs in this process (an
in-process :class:`CatalogServer` on loopback, fed from memory):

1. **propagation**: N subscriber processes (this script with ``--worker``) sync,
   then ``--changes`` commits at ``--rate``/s each replace one table header;
   per change, the latest time any of the N applied it minus the ``commit()``
   call (the Future's callback, which runs after the publish, can run after a
   fast subscriber applied it on a busy machine: it would go negative). p50 and
   p99 per N and mode;
2. **sync**: a fresh subscriber (in this process) joins a catalog of
   ``--tables`` tables of ``--partitions`` partitions each and installs the
   whole snapshot: seconds from ``start()`` to ``is_synced``, best of
   ``--sync-rounds`` rounds that alternate which mode goes first.

The target is CURVE at most 1.5x plaintext for each figure. Times are
``CLOCK_MONOTONIC`` readings (one clock for the whole machine).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import zmq
from support import synthetic
from support.measure import Result, add_output_argument, cpu_note, finish, summarize

from catalogd.security import contexts
from catalogd.security.authenticator import ADMIN, SUBSCRIBERS, KeyAuthenticator
from catalogd.security.curve import CurveServer
from catalogd.security.keys import generate, load_server_keys
from catalogd.server.thread import CatalogServer, ServerConfig
from subscriber.api import CatalogSubscriber
from subscriber.protocol import codec

HERE = Path(__file__).resolve().parent
CHANGED_KEY = "TABLE:bench.t0000"
TARGET_RATIO = 1.5
MODES = ("plain", "curve")


def make_keys(directory: Path) -> Path:
    """A server pair and one subscriber pair, the subscriber's public key allowed."""
    generate("server", directory)
    generate("bench", directory)
    (directory / "subscribers").mkdir()
    (directory / "admin").mkdir()
    shutil.copy(directory / "bench.key", directory / "subscribers")
    return directory


@contextmanager
def serving(mode: str, keys: Path, catalog: Iterator[dict[str, bytes]]) -> Iterator[CatalogServer]:
    """A started server in ``mode`` holding ``catalog``; closed (with its ZAP handler) after."""
    context = zmq.Context()
    authenticator = None
    curve = None
    if mode == "curve":
        authenticator = KeyAuthenticator(
            context, {SUBSCRIBERS: keys / "subscribers", ADMIN: keys / "admin"}
        )
        authenticator.start()
        server_keys = load_server_keys(keys / "server.key_secret")
        curve = CurveServer(server_keys.public, server_keys.secret)
    config = ServerConfig(
        bind="tcp://127.0.0.1:*",
        pub_bind="tcp://127.0.0.1:*",
        heartbeat_interval_s=0.5,
        curve=curve,
    )
    server = CatalogServer(config, context=context)
    for changes in catalog:
        server.commit(changes).result()
    server.start()
    try:
        yield server
    finally:
        server.close()
        if authenticator is not None:
            authenticator.stop()
        contexts.end(context)  # the daemon's own order and bound (Security.close)


def subscriber_keys(mode: str, keys: Path) -> dict[str, Any]:
    if mode == "plain":
        return {}
    return {"server_key": keys / "server.key", "client_key": keys / "bench.key_secret"}


# -- propagation ----------------------------------------------------------------------


def worker(endpoint: str, mode: str, keys: Path) -> int:
    """One subscriber process: sync, say ``ready``, then report when each version applied."""
    applied: dict[int, float] = {}

    def on_change(event: Any) -> None:
        applied.setdefault(event.version, time.monotonic())

    with CatalogSubscriber(endpoint, **subscriber_keys(mode, keys)) as sub:
        sub.add_listener(on_change)
        sub.start()
        sub.wait_synced(300)
        print("ready", flush=True)
        final = int(sys.stdin.readline())
        sub.wait_for_version(final, 300)
        print(json.dumps({"applied": applied, "gaps": sub.gaps}), flush=True)
    return 0


def propagation(server: CatalogServer, mode: str, keys: Path, n: int, args: Any) -> list[float]:
    """Per-change latency (seconds) from ``commit()`` to applied in all ``n`` processes."""
    command = [sys.executable, __file__, "--worker", server.endpoint, mode, str(keys)]
    procs = [
        subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(n)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        submitted: dict[int, float] = {}
        lock = threading.Lock()

        def on_published(future: Future[Any], t_submit: float) -> None:
            with lock:
                submitted[future.result().to_version] = t_submit

        base = codec.encode_object(codec.decode_object(synthetic_header()))
        futures = []
        start = time.monotonic()
        for i in range(args.changes):
            delay = start + i / args.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # pacing the load, not waiting for readiness
            obj = codec.decode_object(base)
            obj.table.metastore_table.parameters["bench.change"] = str(i)
            payload = codec.encode_object(obj)
            t_submit = time.monotonic()
            future = server.commit({CHANGED_KEY: payload})
            future.add_done_callback(partial(on_published, t_submit=t_submit))
            futures.append(future)
        final = max(f.result(30).to_version for f in futures)
        reports = []
        for proc in procs:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(f"{final}\n")
            proc.stdin.flush()
            reports.append(json.loads(proc.stdout.readline()))
    finally:
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    applied = [{int(v): t for v, t in r["applied"].items()} for r in reports]
    return [max(seen[v] for seen in applied) - t for v, t in submitted.items()]


_HEADER: bytes | None = None


def synthetic_header() -> bytes:
    """The encoded header of the benchmark table (built once)."""
    global _HEADER
    if _HEADER is None:
        _HEADER = synthetic.table_payloads("t0000", "file:/warehouse", 1, 1)[CHANGED_KEY]
    return _HEADER


def small_catalog() -> Iterator[dict[str, bytes]]:
    yield from synthetic.catalog_payloads(1, 1, 1)


# -- sync -----------------------------------------------------------------------------


def big_catalog(tables: int, partitions: int) -> list[dict[str, bytes]]:
    """``tables`` tables of ``partitions`` partitions: one table encoded, re-keyed per table
    (payloads of the same size; what a sync moves is bytes per key)."""
    regions = 10 if partitions >= 10 else 1
    one = synthetic.table_payloads("t0000", "file:/warehouse", partitions // regions, regions)
    catalog = [next(synthetic.catalog_payloads(0, 1, 1))]
    for i in range(tables):
        name = f"bench.{synthetic.table_name(i)}"
        catalog.append({key.replace("bench.t0000", name): value for key, value in one.items()})
    return catalog


def sync_seconds(server: CatalogServer, mode: str, keys: Path) -> float:
    sub = CatalogSubscriber(server.endpoint, **subscriber_keys(mode, keys))
    started = time.monotonic()
    try:
        sub.start()
        sub.wait_synced(1800)
        return time.monotonic() - started
    finally:
        sub.close()


# -- main -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--subscribers", default="1,10,50", help="N values (comma-separated)")
    # 1,000 samples: with 200, p99 is the second-slowest change and follows the machine.
    parser.add_argument("--changes", type=int, default=1000, help="commits per N and mode")
    parser.add_argument("--rate", type=float, default=50.0, help="commits per second")
    parser.add_argument("--tables", type=int, default=1000, help="sync: tables")
    parser.add_argument("--partitions", type=int, default=1000, help="sync: partitions per table")
    parser.add_argument("--sync-rounds", type=int, default=3, help="sync: rounds (best of)")
    parser.add_argument(
        "--worker", nargs=3, metavar=("ENDPOINT", "MODE", "KEYS"), help=argparse.SUPPRESS
    )
    add_output_argument(parser)
    args = parser.parse_args(argv)
    if args.worker:
        endpoint, mode, keys = args.worker
        return worker(endpoint, mode, Path(keys))
    print(f"curve_bench: {cpu_note()}")
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="catalogd-curve-") as tmp:
        keys = make_keys(Path(tmp))
        for n in [int(x) for x in args.subscribers.split(",") if x.strip()]:
            summaries = {}
            for mode in MODES:
                with serving(mode, keys, small_catalog()) as server:
                    summaries[mode] = summarize(propagation(server, mode, keys, n, args))
                print(f"  N={n:<3} {mode:<5} commit()->applied in all: {summaries[mode].ms()}")
            for q in ("p50", "p99"):
                plain, curve = getattr(summaries["plain"], q), getattr(summaries["curve"], q)
                results.append(Result(f"propagation N={n} {q}, plain", plain * 1000, "ms"))
                results.append(Result(f"propagation N={n} {q}, CURVE", curve * 1000, "ms"))
                results.append(
                    Result(
                        f"propagation N={n} {q}, CURVE / plain",
                        curve / plain,
                        "x",
                        TARGET_RATIO,
                        note="same run",
                    )
                )
        catalog = big_catalog(args.tables, args.partitions)
        size = f"{args.tables} x {args.partitions}"
        seconds: dict[str, float] = {}
        # Alternating rounds, best of each: the first sync of the run also pays for
        # warming the allocator and page cache, whichever mode goes first.
        for round_ in range(args.sync_rounds):
            for mode in MODES if round_ % 2 == 0 else reversed(MODES):
                with serving(mode, keys, iter(catalog)) as server:
                    took = sync_seconds(server, mode, keys)
                seconds[mode] = min(took, seconds.get(mode, took))
                print(f"  sync {size} {mode:<5}: {took:.2f} s")
        results.append(Result(f"sync {size}, plain", seconds["plain"], "s"))
        results.append(Result(f"sync {size}, CURVE", seconds["curve"], "s"))
        results.append(
            Result(
                f"sync {size}, CURVE / plain",
                seconds["curve"] / seconds["plain"],
                "x",
                TARGET_RATIO,
                note="same run",
            )
        )
    return finish("CURVE on vs off", results, args)


if __name__ == "__main__":
    sys.exit(main())
