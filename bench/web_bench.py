"""The web status page: render times of its biggest pages, and the server thread's
stall while 50 clients hammer a 100,000-partition table's page and subscribers sync.

::

    .venv/bin/python bench/web_bench.py                       # 100k partitions, 10k tables
    .venv/bin/python bench/web_bench.py --tables 100 --seconds 8   # the test's size

A catalog built in memory (``tests/support/web_catalog.py``: database ``sales``
with table ``orders`` of ``--partitions`` partitions and ``--tables`` small tables)
in an in-process :class:`CatalogServer` (heartbeats every 50 ms) with the web page
(uvicorn, :class:`catalogd.web.sources.DaemonSources`) in front of it, as in the
daemon. Measured:

1. render time, idle, of ``/catalog/sales/orders`` (the first page of partitions),
   ``/catalog`` (databases and table counts) and ``/catalog/sales`` (the first page
   of its tables): the median of 20 HTTP round trips each, on loopback. Target
   <= 100 ms each;
2. the storm: ``--clients`` HTTP clients (threads of a separate process) fetch
   ``/catalog/sales/orders`` in a loop, ``--subscribers`` replica subscribers (a
   separate process) take snapshots of the whole catalog one after another, and one
   partition changes every 100 ms (a delta each). A separate process watches the
   heartbeats: a gap beyond the interval is a stall of the server thread. Target:
   stall max <= 100 ms; the idle baseline is measured first, in the same run.

The last line printed is the results as JSON (``--results-json`` writes them too).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import asdict
from pathlib import Path
from typing import Any

from support.catalogd_target import Heartbeats
from support.measure import Result, add_output_argument, cpu_note, finish, percentile

from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.web.access import Access
from catalogd.web.app import make_app
from catalogd.web.census import Census
from catalogd.web.server import WebServer
from catalogd.web.sources import DaemonSources
from subscriber.protocol.keys import PARTITION_PREFIX

HERE = Path(__file__).resolve().parent
HEARTBEAT_S = 0.05
PAGE = "/catalog/sales/orders"

_spec = importlib.util.spec_from_file_location(
    "web_catalog", HERE.parent / "tests" / "support" / "web_catalog.py"
)
assert _spec is not None and _spec.loader is not None
web_catalog = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(web_catalog)

CLIENTS = r"""
import http.client, json, sys, threading, time
host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
clients, seconds = int(sys.argv[4]), float(sys.argv[5])
times, errors, lock = [], [0], threading.Lock()
stop = time.monotonic() + seconds
def loop():
    conn = http.client.HTTPConnection(host, port, timeout=30)
    while time.monotonic() < stop:
        t = time.perf_counter()
        try:
            conn.request("GET", path)
            r = conn.getresponse(); r.read()
            ok = r.status == 200
        except Exception:
            ok = False
            conn.close(); conn = http.client.HTTPConnection(host, port, timeout=30)
        with lock:
            (times.append(time.perf_counter() - t) if ok else errors.__setitem__(0, errors[0] + 1))
threads = [threading.Thread(target=loop) for _ in range(clients)]
[t.start() for t in threads]; [t.join() for t in threads]
print(json.dumps({"times": times, "errors": errors[0]}))
"""

SUBSCRIBERS = r"""
import json, sys, threading, time
from subscriber.api import CatalogSubscriber
endpoint, count, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
syncs, lock = [], threading.Lock()
stop = time.monotonic() + seconds
def loop():
    while time.monotonic() < stop:
        t = time.perf_counter()
        with CatalogSubscriber(endpoint) as sub:
            sub.wait_synced(120)
        with lock:
            syncs.append(time.perf_counter() - t)
threads = [threading.Thread(target=loop) for _ in range(count)]
[t.start() for t in threads]; [t.join() for t in threads]
print(json.dumps({"syncs": syncs}))
"""


def _get(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as response:
        response.read()
        assert response.status == 200, url
    return time.perf_counter() - started


def run(args: argparse.Namespace) -> list[Result]:
    print(f"web bench: {args.partitions:,} partitions, {args.tables:,} tables; {cpu_note()}")
    server = CatalogServer(
        ServerConfig(
            bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*", heartbeat_interval_s=HEARTBEAT_S
        )
    )
    built = time.perf_counter()
    server.submit(
        lambda c: web_catalog.build(partitions=args.partitions, small_tables=args.tables, catalog=c)
    ).result()  # before start: runs here
    objects = server.submit(len).result()
    if args.freeze:
        gc.freeze()  # as the daemon does once its first load is done
    print(f"catalog built: {objects:,} objects in {time.perf_counter() - built:.1f} s")
    server.start()

    def status() -> dict[str, Any]:
        return {"version": server.submit(lambda c: c.version).result(), "service_id": "bench"}

    sources = DaemonSources(server, status, ha=None, audit=lambda n: [], registry=None)
    sources.census_of = Census(sources.read, interval_s=3600)
    app = make_app(
        sources, Access(None, loopback=True), max_renders=args.renders, max_pages_per_s=args.pace
    )
    web = WebServer(app, "127.0.0.1:0").start()
    beats = Heartbeats(server.pub_endpoint, HEARTBEAT_S)
    stop = threading.Event()
    try:
        renders = {}
        for path in (PAGE, "/catalog", "/catalog/sales"):
            _get(web.url + path)  # templates compiled
            # A new limit each time: the table page is built, never taken from memory.
            renders[path] = [_get(f"{web.url}{path}?limit={100 - i}") for i in range(20)]
        cached = [_get(web.url + PAGE) for _ in range(20)]
        time.sleep(1.0)
        beats.start()
        time.sleep(min(args.seconds, 5.0))
        idle = sorted(beats.stop()) or [0.0]

        def change() -> None:  # one partition changes every 100 ms: a delta each
            key = f"{PARTITION_PREFIX}sales.orders:k0=000001"
            n = 0
            while not stop.wait(0.1):
                n += 1
                payload = server.submit(lambda c: c.get(key).payload).result()
                server.commit({key: payload + bytes([0]) * (n % 2)}).result()

        def storm(clients: int) -> tuple[list[float], dict[str, Any], list[float]]:
            stop.clear()
            changer = threading.Thread(target=change, daemon=True)
            host, port, seconds = web.host, str(web.port), str(args.seconds)
            client_proc = subprocess.Popen(
                [sys.executable, "-c", CLIENTS, host, port, PAGE, str(clients), seconds],
                stdout=subprocess.PIPE,
                text=True,
            )
            subs = subprocess.Popen(
                [sys.executable, "-c", SUBSCRIBERS, server.endpoint, str(args.subscribers),
                 seconds],
                stdout=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            changer.start()
            beats.start()
            client_out, _ = client_proc.communicate(timeout=args.seconds + 120)
            stalls = sorted(beats.stop()) or [0.0]
            stop.set()
            sub_out, _ = subs.communicate(timeout=args.seconds + 180)
            changer.join(5)
            return stalls, json.loads(client_out), json.loads(sub_out)["syncs"]

        # The same without web clients first: what subscribers and changes alone cost.
        base_stalls, _, base_synced = storm(0)
        stalls, got, synced = storm(args.clients)
    finally:
        stop.set()
        beats.close()
        web.close()
        server.close()
    times = sorted(got["times"]) or [0.0]
    results = [
        Result(
            f"render {path} ({label})",
            statistics.median(samples) * 1e3,
            "ms",
            100,
            note=f"max {max(samples) * 1e3:.1f} ms over 20, each built anew, idle; "
            f"catalog {objects:,} objects",
        )
        for (path, samples), label in zip(
            renders.items(),
            (
                f"first 100 of {args.partitions:,} partitions",
                "databases",
                f"first 100 of {args.tables + 2:,} tables",
            ),
            strict=True,
        )
    ]
    results += [
        Result(
            f"{PAGE} again, unchanged (built once, then reused)",
            statistics.median(cached) * 1e3,
            "ms",
            note=f"max {max(cached) * 1e3:.1f} ms over 20",
        ),
        Result(
            "server-thread stall max under web storm",
            stalls[-1] * 1e3,
            "ms",
            100,
            note=f"p99 {percentile(stalls, 99) * 1e3:.1f} ms; idle max {idle[-1] * 1e3:.1f} ms; "
            f"{args.clients} clients: {len(times):,} pages "
            f"({len(times) / args.seconds:,.0f}/s, p50 {percentile(times, 50) * 1e3:.0f} ms, "
            f"p99 {percentile(times, 99) * 1e3:.0f} ms, {got['errors']} errors); "
            f"{len(synced)} subscriber syncs of the whole catalog",
        ),
        Result(
            "server-thread stall max, same storm without web clients",
            base_stalls[-1] * 1e3,
            "ms",
            note=f"p99 {percentile(base_stalls, 99) * 1e3:.1f} ms; "
            f"{len(base_synced)} subscriber syncs",
        ),
    ]
    print(json.dumps([asdict(r) for r in results]))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--tables", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--subscribers", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--pace", type=float, default=100.0, help="the web's pages/s limit")
    parser.add_argument(
        "--no-freeze", dest="freeze", action="store_false", help="leave the catalog to the GC"
    )
    parser.add_argument("--renders", type=int, default=2, help="pages built at once")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    return finish("web_bench", run(args), args)


if __name__ == "__main__":
    raise SystemExit(main())
