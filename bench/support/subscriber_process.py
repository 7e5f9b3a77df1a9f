"""The subscriber side of the multi-process benchmarks; each one runs as its own process.

::

    cd bench && python -m support.subscriber_process fanout ENDPOINT RAW_PUB REPORT INDEX [MODE]
    cd bench && python -m support.subscriber_process sync ENDPOINT REPORT TIMEOUT_S
    cd bench && python -m support.subscriber_process ready ENDPOINT REPORT MODE TABLES TIMEOUT_S

Started with ``subprocess`` (``cwd`` ``bench/``) by ``propagation.py`` and
``sync_bench.py``, never imported by them, so a child loads only pyzmq,
``subscriber`` and ``support.measure`` (like a Spark driver would load the
subscriber) and nothing of the benchmark's own set-up. Results go back as one
JSON message on a ZeroMQ PUSH socket connected to ``REPORT``.

Times are ``time.monotonic()`` readings: on Linux that is ``CLOCK_MONOTONIC``,
one clock for the whole machine, so readings taken in different processes
compare directly (no round-trip halving needed).

fanout: a raw SUB on ``RAW_PUB`` (the bench's plain pyzmq PUB) plus a
``CatalogSubscriber`` (MODE ``replica`` or ``on-demand``; ``floor``: see :func:`_floor`).
Raw messages: ``H`` (hello: answer ``ready`` once synced),
``P`` + 8-byte sequence + padding (record its arrival), ``M`` (the raw phase is
over: note each thread's CPU time), ``E`` + final version (wait for that version,
then report every arrival, every applied version and the threads' CPU times).

sync: measure RSS, start a ``CatalogSubscriber``, time ``start()`` to
``wait_synced``, measure RSS again, report.

ready: a ``CatalogSubscriber`` in ``replica`` or ``on-demand`` mode: constructor ->
first ``get_table`` answered, and RSS after reading some tables' partitions.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import zmq

from subscriber.api import CatalogSubscriber
from subscriber.cache import ChangeEvent
from subscriber.protocol import wire
from subscriber.protocol.delta import Delta
from subscriber.protocol.delta_scan import scan_delta
from support.measure import peak_rss_bytes, rss_bytes, thread_cpu_ns


def fanout(endpoint: str, raw_pub: str, report: str, index: int, mode: str = "replica") -> None:
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.connect(report)
    raw = ctx.socket(zmq.SUB)
    raw.setsockopt(zmq.SUBSCRIBE, b"")
    raw.connect(raw_pub)
    applied: list[tuple[int, float]] = []
    arrivals: list[tuple[int, float]] = []
    cpu_marks = [0.0, 0.0]  # process CPU seconds at the first and the latest raw message
    thread_marks: list[dict[str, int]] = []  # per thread: at the first P, at M, at E

    def on_change(event: ChangeEvent) -> None:
        applied.append((event.version, time.monotonic()))  # list.append: no lock needed

    floor = mode == "floor"
    sub = CatalogSubscriber(
        endpoint, client_id=f"fanout-{index}", mode="replica" if floor else mode
    )
    if not floor:
        sub.add_listener(on_change)
    sub.start()
    sub.wait_synced(300)
    if floor:
        _floor(ctx, sub, on_change)
    ready = False
    try:
        while True:
            frame = raw.recv()
            now = time.monotonic()
            kind = frame[:1]
            if kind == b"P":
                arrivals.append((int.from_bytes(frame[1:9], "big"), now))
                cpu_marks[0 if len(arrivals) == 1 else 1] = time.process_time()
                if len(arrivals) == 1:
                    thread_marks.append(_threads())
            elif kind == b"M":  # between the phases
                thread_marks.append(_threads())
            elif kind == b"H" and not ready:
                ready = True
                push.send_json({"index": index, "ready": True})
            elif kind == b"E":
                final = int(frame[1:])
                if not floor:
                    sub.wait_for_version(final, 120)
                # The cache may hold the version a moment before the transport thread has
                # called the listeners with it: wait for that too (or what is sent lacks it).
                deadline = time.monotonic() + 10
                while (not applied or applied[-1][0] < final) and time.monotonic() < deadline:
                    time.sleep(0.001)
                # CPU of the whole process (all threads, libzmq's too) in each phase.
                cpu_raw = cpu_marks[1] - cpu_marks[0]
                cpu_ours = time.process_time() - cpu_marks[1]
                thread_marks.append(_threads())
                push.send_json(
                    {
                        "index": index,
                        "raw": arrivals,
                        "applied": applied,
                        "gaps": sub.gaps,
                        "cpu_raw": cpu_raw,
                        "cpu_ours": cpu_ours,
                        "threads": thread_marks,
                    }
                )
                return
    finally:
        sub.close()
        push.close(linger=5000)
        raw.close(linger=0)
        ctx.term()


def _threads() -> dict[str, int]:
    """Nanoseconds on a CPU so far, by thread: Python's name where it is a Python
    thread (the transport's, the floor's), else the kernel's (libzmq's ``ZMQbg/IO/0``)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    names[threading.main_thread().native_id] = "main"
    totals: dict[str, int] = {}
    for tid, (comm, runtime) in thread_cpu_ns().items():
        name = names.get(tid, comm)
        totals[name] = totals.get(name, 0) + runtime
    return totals


def _floor(ctx: zmq.Context, sub: CatalogSubscriber, on_change: Callable[[Any], None]) -> None:
    """The least any Python subscriber does per change: take over ``sub``'s synced
    cache, close it, and in a thread block in ``recv`` on catalogd's PUB, read each
    part (the subscriber's own scan) and apply it, calling ``on_change`` per event.
    No loss detection, heartbeats, reports, poll or state machine: a floor to
    compare with, not a subscriber."""
    welcome = sub._transport.welcome  # noqa: SLF001 - read once, at start
    assert welcome is not None  # synced
    endpoint = welcome.pub_endpoint
    cache = sub._machine.cache  # noqa: SLF001 - taken over after close
    sub.close()
    cache.emit_events = True
    feed = ctx.socket(zmq.SUB)
    feed.setsockopt(zmq.SUBSCRIBE, wire.TOPIC_DELTA)
    feed.connect(endpoint)

    def follow() -> None:
        try:
            while True:
                _, body = wire.split_publication(feed.recv())  # one frame: topic, body
                part = scan_delta(body, "")
                if part is not None and part.to_version > cache.view.version:
                    delta = Delta(cache.view.version, part.to_version, part.entries)
                    for event in cache.apply(delta):
                        on_change(event)
        except zmq.ZMQError:  # the context ends with the process
            feed.close(linger=0)

    threading.Thread(target=follow, name="floor", daemon=True).start()
    time.sleep(1)  # the subscription reaches catalogd before the bench starts


def sync(endpoint: str, report: str, timeout_s: float) -> None:
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.connect(report)
    result: dict[str, Any] = {}
    gc.collect()
    before = rss_bytes()
    started, cpu_started = time.monotonic(), time.process_time()
    sub = CatalogSubscriber(endpoint, client_id="sync-bench").start()
    try:
        sub.wait_synced(timeout_s)
        result["sync_s"] = time.monotonic() - started
        result["cpu_s"] = time.process_time() - cpu_started  # every thread of the process
        result["rss_synced"] = rss_bytes() - before
        gc.collect()
        result["rss_after_gc"] = rss_bytes() - before
        # Give freed arenas back to the OS: what is left is what the cache holds.
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        result["rss_after_trim"] = rss_bytes() - before
        result["peak_rss"] = peak_rss_bytes() - before
        view = sub._machine.cache.view  # noqa: SLF001 - counting entries, read-only
        result["entries"] = view.entry_count()
        result["partitions"] = sum(len(p) for p in view.partitions.values())
        result["version"] = sub.version
        result.update(
            first_reads(sub, list(view.partitions)[:: max(1, len(view.partitions) // 20)])
        )
    except Exception as exc:  # noqa: BLE001 - reported to the bench, which prints it
        result["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        sub.close()
    push.send_json(result)
    push.close(linger=5000)
    ctx.term()


def first_reads(sub: Any, tables: list[str]) -> dict[str, list[float]]:
    """Seconds of each table's first ``get_table`` and first filtered ``list_partitions``
    (one ``dt`` of the synthetic catalog: ``regions`` partitions), then of a second,
    warm, call of each."""
    times: dict[str, list[float]] = {"get_table": [], "list_partitions": []}
    times |= {"warm_get_table": [], "warm_list_partitions": []}
    for prefix in ("", "warm_"):
        for table in tables:
            started = time.perf_counter()
            sub.get_table(table)
            got_table = time.perf_counter()
            found = sub.list_partitions(table, {"dt": "2024-01-02"})
            times[prefix + "get_table"].append(got_table - started)
            times[prefix + "list_partitions"].append(time.perf_counter() - got_table)
            assert found, f"no partition of {table} for dt=2024-01-02"
    return times


def ready(endpoint: str, report: str, mode: str, tables: str, timeout_s: float) -> None:
    """Constructor -> first ``get_table`` answered, then RSS after reading ``tables``
    (comma-separated ``db.table``: each header and every partition)."""
    names = tables.split(",")
    gc.collect()
    before = rss_bytes()
    started = time.monotonic()
    sub = CatalogSubscriber(endpoint, client_id=f"ready-{mode}", mode=mode).start()

    def measure(result: dict[str, Any]) -> None:
        sub.wait_synced(timeout_s)
        sub.get_table(names[0])
        result["ready_s"] = time.monotonic() - started
        result["rss_ready"] = rss_bytes() - before
        read_started = time.monotonic()
        result["partitions_read"] = sum(len(sub.list_partitions(name)) for name in names)
        result["read_s"] = time.monotonic() - read_started
        gc.collect()
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        result["rss_read"] = rss_bytes() - before
        filtered_started = time.monotonic()
        sub.list_partitions(names[0], {"region": "region-003"})
        result["warm_filtered_s"] = time.monotonic() - filtered_started

    _report(report, sub, measure)


def _report(report: str, sub: CatalogSubscriber, measure: Any) -> None:
    """Run ``measure(result)``, close ``sub`` and send ``result`` (or the error) to ``report``."""
    result: dict[str, Any] = {}
    try:
        measure(result)
    except Exception as exc:  # noqa: BLE001 - reported to the bench, which prints it
        result["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        sub.close()
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.connect(report)
    push.send_json(result)
    push.close(linger=5000)
    ctx.term()


def main(argv: list[str]) -> int:
    mode, *args = argv
    if mode == "fanout":
        fanout(args[0], args[1], args[2], int(args[3]), *args[4:5])
    elif mode == "sync":
        sync(args[0], args[1], float(args[2]))
    elif mode == "ready":
        ready(args[0], args[1], args[2], args[3], float(args[4]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
