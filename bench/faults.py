"""The fault storm: catalogd under garbage, bombs, floods and kills, for a fixed time.

::

    .venv/bin/python bench/faults.py              # 60 s storm
    .venv/bin/python bench/faults.py --quick      # 20 s storm

Set-up: an HMS (embedded, run by this benchmark) with ``--tables`` tables, a
``catalogd serve`` process on loopback, ``--subscribers`` live subscribers in this
process. Then, for ``--seconds``, a bounded mixed storm from several threads:
garbage on the ROUTER and the admin socket, decompression and list bombs, peers
that request snapshots and never read, report floods with made-up ids, load
requests for names that do not exist, admin storms (status, invalidate,
refresh, ``--sync`` with a huge timeout), the HMS killed (``kill -9``) and
restarted. After the storm: every subscriber must converge on the catalog; then
catalogd is killed (``kill -9``) and restarted on the same ports and state, and
the subscribers must converge again with versions that never went back.

Printed: requests sent per kind; the server thread's stall (a SUB receives the
heartbeats, published every ``--heartbeat`` seconds by the server thread: a gap
beyond the interval is a stall) as p99 and max; catalogd's RSS before the storm,
peak, and after it; caches equal at the end; versions monotonic; refreshes that
succeeded. Targets: stall max <= 100 ms, RSS after <= 1.2x before, 0 divergent
caches.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import zmq
from support.catalogd_target import Catalogd, Heartbeats
from support.measure import Result, add_output_argument, cpu_note, finish

import idl
from catalogd.admin.client import AdminClient
from catalogd.hms.builders import thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.api import CatalogSubscriber
from subscriber.protocol import codec

svc = idl.catalog_service
Cmd, Code = svc.TAdminCommand, svc.TStatusCode
DB = "storm"


def storm(cd: Catalogd, hms: EmbeddedMetastore, seconds: float, sent: Counter[str]) -> Counter[str]:
    """Run every attacker for ``seconds``; returns admin outcomes by command and status."""
    ctx = zmq.Context.instance()
    stop = threading.Event()
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()

    def count(kind: str, n: int = 1) -> None:
        with lock:
            sent[kind] += n

    def dealer(endpoint: str) -> zmq.Socket:
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, 100)
        sock.connect(endpoint)
        return sock

    def send(sock: zmq.Socket, body: bytes, kind: str) -> None:
        try:
            sock.send(body, zmq.NOBLOCK)
        except zmq.Again:
            count(f"{kind} (refused: pipe full)")  # catalogd reads no faster: back-pressure
        else:
            count(kind)

    bomb = bytes((codec.FLAG_ZLIB,)) + zlib.compress(b"\0" * (32 << 20), 9)
    lists = codec.pack(svc.TRequest(snapshot=svc.TSnapshotRequest(databases=[""] * 100_000)))

    def garbage() -> None:
        with dealer(cd.endpoint) as router, dealer(cd.admin) as admin:
            while not stop.is_set():
                for sock, kind in (
                    (router, "garbage (subscriber socket)"),
                    (admin, "garbage (admin)"),
                ):
                    send(sock, os.urandom(64), kind)
                stop.wait(0.01)

    def bombs() -> None:
        with dealer(cd.endpoint) as sock:
            while not stop.is_set():
                send(sock, bomb, "decompression bombs")
                send(sock, lists, "list bombs")
                stop.wait(0.2)

    def slow_consumers() -> None:
        while not stop.is_set():
            with dealer(cd.endpoint) as sock:
                sock.setsockopt(zmq.RCVHWM, 1)
                for rid in range(20):
                    sock.send(
                        codec.pack(svc.TRequest(request_id=rid, snapshot=svc.TSnapshotRequest()))
                    )
                count("snapshots never read", 20)
                stop.wait(3.0)

    def reports() -> None:
        i = 0
        with dealer(cd.endpoint) as sock:
            while not stop.is_set():
                for _ in range(200):
                    report = svc.TSubscriberReport(
                        client_id=f"fake-{i}", service_id="x", applied_version=10**12
                    )
                    i += 1
                    send(sock, codec.pack(svc.TRequest(report=report)), "fake reports")
                stop.wait(0.05)

    def loads() -> None:
        with dealer(cd.endpoint) as sock:
            i = 0
            while not stop.is_set():
                load = svc.TLoadTableRequest(db_name=DB, tbl_name=f"missing_{i}")
                i += 1
                send(sock, codec.pack(svc.TRequest(load_table=load)), "loads of unknown tables")
                stop.wait(0.005)

    def admin_storm(command: int, fields: dict[str, Any], name: str, timeout_s: float = 30) -> None:
        client = AdminClient(cd.admin, timeout_s=timeout_s)
        i = 0
        while not stop.is_set():
            i += 1
            args = {k: (v(i) if callable(v) else v) for k, v in fields.items()}
            try:
                code = client.call(command, **args).status.code
                status = svc.TStatusCode._VALUES_TO_NAMES.get(code, str(code))
            except Exception as exc:  # noqa: BLE001 - counted, the storm goes on
                status = type(exc).__name__
            count(f"admin {name}")
            with lock:
                outcomes[f"{name} {status}"] += 1

    def hms_chaos() -> None:
        stop.wait(seconds / 3)
        if stop.is_set() or hms._proc is None:
            return
        hms._proc.send_signal(signal.SIGKILL)
        count("HMS kill -9")
        hms.restart()
        count("HMS restarts")

    table = lambda i: f"t{i % 100:03d}"  # noqa: E731 - a short name picker
    workers = [
        threading.Thread(target=garbage),
        threading.Thread(target=bombs),
        threading.Thread(target=slow_consumers),
        threading.Thread(target=reports),
        threading.Thread(target=loads),
        threading.Thread(target=admin_storm, args=(Cmd.STATUS, {}, "status")),
        threading.Thread(
            target=admin_storm,
            args=(Cmd.INVALIDATE, {"db_name": DB, "tbl_name": table}, "invalidate"),
        ),
        threading.Thread(
            target=admin_storm,
            args=(Cmd.INVALIDATE, {"db_name": DB, "tbl_name": "t000"}, "invalidate"),
        ),
        threading.Thread(
            target=admin_storm, args=(Cmd.REFRESH, {"db_name": DB, "tbl_name": "t000"}, "refresh")
        ),
        threading.Thread(
            target=admin_storm, args=(Cmd.REFRESH, {"db_name": DB, "tbl_name": table}, "refresh")
        ),
        threading.Thread(
            target=admin_storm,
            args=(
                Cmd.INVALIDATE,
                {"db_name": DB, "tbl_name": "t001", "sync": True, "sync_timeout_ms": 2**31 - 1},
                "invalidate --sync",
                200,
            ),
        ),
        threading.Thread(target=hms_chaos),
    ]
    for worker in workers:
        worker.daemon = True
        worker.start()
    stop.wait(seconds)
    stop.set()
    for worker in workers:
        worker.join(240)
    return outcomes


def state(sub: CatalogSubscriber) -> dict[str, bytes | None]:
    return {e.key: e.payload for e in sub._machine.cache.view.entries()}


def converged(subs: list[CatalogSubscriber], endpoint: str, timeout_s: float) -> tuple[int, int]:
    """Wait until every subscriber holds what a fresh one holds; returns (divergent, version)."""
    deadline = time.monotonic() + timeout_s
    while True:
        with CatalogSubscriber(endpoint, client_id="referee") as fresh:
            fresh.wait_synced(60)
            reference, version = state(fresh), fresh.version
        divergent = sum(1 for s in subs if state(s) != reference)
        if divergent == 0 or time.monotonic() > deadline:
            return divergent, version
        time.sleep(0.5)  # a pause between whole comparisons, not a readiness wait


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--quick", action="store_true", help="a 20 s storm")
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--subscribers", type=int, default=10)
    parser.add_argument("--heartbeat", type=float, default=0.05, help="heartbeat interval, s")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    seconds = 20.0 if args.quick else args.seconds
    print(f"faults: {seconds:.0f} s storm, {args.tables} tables, {args.subscribers} subscribers")
    print(cpu_note())
    with tempfile.TemporaryDirectory(prefix="catalogd-faults-") as tmp:
        work = Path(tmp)
        # Not tied to the thread that starts it: the storm restarts it from a worker thread.
        with EmbeddedMetastore(work / "hms", die_with_parent=False) as hms:
            with MetastoreClient(hms.uri) as client:
                location = f"file:{hms.warehouse_dir}/{DB}.db"
                client.call(
                    "create_database",
                    idl.hive_metastore.Database(
                        name=DB, description="", parameters={}, locationUri=location
                    ),
                )
                for i in range(args.tables):
                    client.call(
                        "create_table",
                        thrift_table(
                            DB, f"t{i:03d}", f"{location}/t{i:03d}", columns=[("a", "int")]
                        ),
                    )
            cd = Catalogd(hms.uri, work / "catalogd", args.heartbeat)
            (work / "catalogd").mkdir()
            cd.start()
            try:
                return run(cd, hms, seconds, args)
            finally:
                cd.stop()


def run(cd: Catalogd, hms: EmbeddedMetastore, seconds: float, args: argparse.Namespace) -> int:
    versions: list[list[int]] = [[] for _ in range(args.subscribers)]
    subs = []
    for i in range(args.subscribers):
        sub = CatalogSubscriber(cd.endpoint, client_id=f"live-{i}")
        sub.add_listener(lambda event, seen=versions[i]: seen.append(event.version))
        subs.append(sub.start())
    for sub in subs:
        sub.wait_synced(120)
    beats = Heartbeats(cd.pub, args.heartbeat)
    beats.start()
    time.sleep(5.0)  # the baseline: stalls of an idle catalogd on this machine now
    idle = sorted(beats.stop()) or [0.0]
    rss_before = cd.rss()
    peak = [rss_before]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.1):
            with contextlib.suppress(OSError, AttributeError):
                peak.append(cd.rss())  # catalogd may be restarting

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    sent: Counter[str] = Counter()
    beats.start()
    outcomes = storm(cd, hms, seconds, sent)
    stalls = sorted(beats.stop()) or [0.0]
    divergent, version = converged(subs, cd.endpoint, 120)
    time.sleep(2.0)  # let freed memory show before the "after" reading
    rss_after = cd.rss()
    sampling.set()
    cd.kill()
    sent["catalogd kill -9"] += 1
    cd.start()
    divergent_restart, version_restart = converged(subs, cd.endpoint, 120)
    beats.close()
    for sub in subs:
        sub.close()
    monotonic = all(seen == sorted(seen) for seen in versions) and version_restart >= version

    def p99(samples: list[float]) -> float:
        return samples[min(len(samples) - 1, int(0.99 * len(samples)))]

    print("\nrequests sent:")
    for kind, n in sorted(sent.items()):
        print(f"  {kind:32} {n}")
    print("admin outcomes:")
    for kind, n in sorted(outcomes.items()):
        print(f"  {kind:32} {n}")
    refreshes = sum(n for k, n in outcomes.items() if k.startswith("refresh "))
    refreshed = outcomes.get("refresh OK", 0)
    mb = 1 / (1 << 20)
    results = [
        Result(
            "server-thread stall p99", p99(stalls) * 1e3, "ms", note=f"{len(stalls)} heartbeats"
        ),
        Result("server-thread stall max", stalls[-1] * 1e3, "ms", target=100),
        Result(
            "baseline: stall p99 / max, idle",
            p99(idle) * 1e3,
            "ms",
            note=f"max {idle[-1] * 1e3:.1f} ms over {len(idle)} heartbeats before the storm",
        ),
        Result("catalogd RSS before", rss_before * mb, "MB"),
        Result("catalogd RSS peak", max(peak) * mb, "MB"),
        Result("catalogd RSS after / before", rss_after / rss_before, "x", target=1.2),
        Result("divergent caches after the storm", divergent, "", target=0),
        Result("divergent caches after kill -9", divergent_restart, "", target=0),
        Result("versions monotonic", 1 if monotonic else 0, "bool", target=1, goal="min"),
        Result("refreshes that succeeded", refreshed, "", note=f"of {refreshes}"),
    ]
    return finish("faults", results, args)


if __name__ == "__main__":
    sys.exit(main())
