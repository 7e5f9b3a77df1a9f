"""A new subscriber's join: constructor -> synced, against raw pyzmq on the same loopback.

::

    .venv/bin/python bench/join_bench.py [--rounds 200] [--tables 0] [--databases a,b]

catalogd runs in this process (an in-process :class:`CatalogServer`, plain TCP on
loopback) holding ``--tables`` tables (default 0: an empty catalog). Each round
creates a :class:`CatalogSubscriber` (``--databases``: a filtered one), starts it
and waits until ``is_synced``; then closes it. Measured: wall time per join, and
the process's CPU time per join (both threads: the subscriber's and catalogd's).

The baseline, in the same run and on the same loopback, is the least a join can
do with pyzmq: a DEALER connects and makes one request/reply round trip with a
ROUTER, then a SUB connects and subscribes to an XPUB, which publishes one
message the moment the subscription arrives, and the SUB receives it (every
socket new per round, like the subscriber's). The ratio shows what the protocol
adds over that physical minimum. The target is absolute: at most 5 ms (p50) for
an empty catalog; load average and catalog size are printed beside the figures.

``--storm``: joins of a big catalog instead (``--tables`` x ``--dts * --regions``
partitions in database ``bench``, the payloads ``sync_bench.py`` builds and caches,
plus a database ``small`` of 2 such tables, and databases ``ten`` and ``tenp`` of 10
tables, ``tenp`` with their 10,000 partitions). First, filtered joins: a real
``CatalogSubscriber(databases=[ten])`` (then ``tenp``) in this process, constructor ->
synced, 10 rounds each (target: median <= 50 ms). Storm joiners run in another process
(``support/snapshot_drain.py``: they read frames as fast as a socket does, without
decoding), and the server thread's CPU time from its own CPU clock. Measured: server
CPU of the first join of an unchanged catalog (it encodes) against each later one
(it copies cached chunks); then, while 20 joiners (10 unfiltered, 10 filtered by
``small``) ask at once, right after a commit to both databases (so the storm
encodes; meanwhile a thread commits one partition of ``bench`` every 0.1 s, so each
commit lands in a database being encoded) and again unchanged: the server loop's longest turn
(``ServerStats.longest_turn_s``) and the heartbeats' lateness seen by a separate
process (0.1 s interval), the catalog frozen out of the cyclic GC as the daemon does
after its first load (``gc.freeze``; the longest GC pause is printed too), and the
most CPU one turn used (``longest_turn_cpu_s``: the server's own work, without the
waits for a CPU a loaded machine adds). Printed beside them, from the same run: what
one turn held before sliced captures, ``list(catalog.live_entries())``. Targets (issue 26):
a later join <= 0.3 s of server CPU at 1M partitions; no turn and no heartbeat
late by more than 100 ms.
"""

from __future__ import annotations

import argparse
import queue
import resource
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import snapshot_storm as storm
import zmq
from support.measure import Result, add_output_argument, cpu_note, finish, summarize

from catalogd.server.thread import CatalogServer, ServerConfig
from subscriber.api import CatalogSubscriber

TARGET_MS = 5.0


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(rounds: int, join: Callable[[], Callable[[], None]]) -> tuple[list[float], list[float]]:
    """``join()`` joins and returns its cleanup (not timed): wall and CPU seconds each."""
    walls, cpus = [], []
    for _ in range(rounds):
        cpu, start = cpu_seconds(), time.monotonic()
        cleanup = join()
        walls.append(time.monotonic() - start)
        cpus.append(cpu_seconds() - cpu)
        cleanup()
    return walls, cpus


def raw_join(context: zmq.Context, router_at: str, xpub_at: str) -> Callable[[], None]:
    dealer = context.socket(zmq.DEALER)
    dealer.connect(router_at)
    dealer.send(b"hello")
    dealer.recv()
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"h")
    sub.connect(xpub_at)
    sub.recv()

    def cleanup() -> None:
        dealer.close(linger=0)
        sub.close(linger=0)

    return cleanup


def raw_peer(context: zmq.Context, stop_at: str) -> tuple[str, str, threading.Thread]:
    """A ROUTER that echoes and an XPUB that publishes on each subscription, in a thread
    of their own (created, used and closed there) until a message arrives on ``stop_at``."""
    endpoints: queue.SimpleQueue[tuple[str, str]] = queue.SimpleQueue()

    def serve() -> None:
        router, xpub = context.socket(zmq.ROUTER), context.socket(zmq.XPUB)
        stop = context.socket(zmq.PAIR)
        try:
            xpub.setsockopt(zmq.XPUB_VERBOSE, 1)
            router.bind("tcp://127.0.0.1:*")
            xpub.bind("tcp://127.0.0.1:*")
            stop.connect(stop_at)
            endpoints.put((router.LAST_ENDPOINT.decode(), xpub.LAST_ENDPOINT.decode()))
            poller = zmq.Poller()
            for sock in (router, xpub, stop):
                poller.register(sock, zmq.POLLIN)
            while True:
                ready = dict(poller.poll())
                if stop in ready:
                    return
                if router in ready:
                    router.send_multipart(router.recv_multipart())
                if xpub in ready and xpub.recv()[:1] == b"\x01":
                    xpub.send(b"h")
        finally:
            for sock in (router, xpub, stop):
                sock.close(linger=0)

    thread = threading.Thread(target=serve, name="raw-peer", daemon=True)
    thread.start()
    router_at, xpub_at = endpoints.get(timeout=10)
    return router_at, xpub_at, thread


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="joins per measure")
    parser.add_argument("--tables", type=int, default=0, help="tables in the catalog")
    parser.add_argument("--databases", default=None, help="a filtered subscriber's databases")
    parser.add_argument("--storm", action="store_true", help="joins of a big catalog (above)")
    parser.add_argument("--dts", type=int, default=100, help="--storm: dates per table")
    parser.add_argument("--regions", type=int, default=10, help="--storm: regions per date")
    parser.add_argument("--data-dir", type=Path, default=storm.DEFAULT_DIR)
    add_output_argument(parser)
    args = parser.parse_args(argv)
    if args.storm:
        return finish("snapshot storm", storm.run(args), args)
    databases = args.databases.split(",") if args.databases else None
    print(f"join_bench: {cpu_note()}")
    context = zmq.Context()
    server = CatalogServer(
        ServerConfig(bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*"), context=context
    )
    if args.tables:
        server.commit({f"TABLE:bench.t{i:05d}": b"t" for i in range(args.tables)})
    server.start()
    try:
        stop = context.socket(zmq.PAIR)
        stop.bind("inproc://join-bench-stop")
        router_at, xpub_at, peer = raw_peer(context, "inproc://join-bench-stop")

        def ours() -> Callable[[], None]:
            sub = CatalogSubscriber(server.endpoint, databases=databases)
            sub.start()
            sub.wait_synced(30)
            return sub.close

        timed(5, ours)  # warm up both (imports, allocator)
        timed(5, lambda: raw_join(context, router_at, xpub_at))
        raw, raw_cpu = timed(args.rounds, lambda: raw_join(context, router_at, xpub_at))
        walls, cpus = timed(args.rounds, ours)
        stop.send(b"stop")
        peer.join(10)
        stop.close(linger=0)
    finally:
        server.close()
        context.destroy(linger=0)
    size = f"{args.tables} tables" + (f", databases {args.databases}" if databases else "")
    ours_s, raw_s = summarize(walls), summarize(raw)
    print(f"  catalog: {size}; {cpu_note()}")
    print(f"  raw pyzmq DEALER round trip + SUB join: {raw_s.ms()}")
    print(f"  CatalogSubscriber constructor -> synced: {ours_s.ms()}")
    print(
        f"  CPU per join: ours {summarize(cpus).p50 * 1000:.2f} ms, "
        f"raw {summarize(raw_cpu).p50 * 1000:.2f} ms (p50, both threads)"
    )
    note = f"{size}; {cpu_note()}"
    results = [
        Result(f"join ({size}), p50", ours_s.p50 * 1000, "ms", TARGET_MS, note=note),
        Result(f"join ({size}), p99", ours_s.p99 * 1000, "ms", note=note),
        Result("raw pyzmq join, p50", raw_s.p50 * 1000, "ms", note="same run"),
        Result(f"join ({size}) / raw, p50", ours_s.p50 / raw_s.p50, "x", note="same run"),
    ]
    return finish("new subscriber join", results, args)


if __name__ == "__main__":
    sys.exit(main())
