"""``join_bench.py --storm``: joins of a big catalog, as the server thread pays for them.

See ``join_bench.py``'s docstring for what is measured and why; this module holds
that mode's code (the catalog, the joiner process, the figures).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from support.catalogd_target import Heartbeats
from support.measure import Result, cpu_note
from sync_bench import cached_catalog

from catalogd.server.thread import CatalogServer, ServerConfig
from subscriber.api import CatalogSubscriber

HERE = Path(__file__).resolve().parent
DEFAULT_DIR = Path(tempfile.gettempdir()) / "catalogd-bench-sync"
TARGET_LATER_JOIN_CPU_S_AT_1M = 0.3
TARGET_STALL_MS = 100.0
TARGET_FILTERED_JOIN_MS = 50.0
HEARTBEAT_S = 0.1


def thread_cpu_s(clock_id: int) -> float:
    """CPU seconds of the thread whose CPU clock is ``clock_id``."""
    return time.clock_gettime(clock_id)


def catalog_changes(args: argparse.Namespace) -> dict[str, bytes]:
    changes: dict[str, bytes] = {}
    for payloads in cached_catalog(args.data_dir, args.tables, args.dts, args.regions):
        changes.update(payloads)
    small = {  # database "small": two of the tables, copied
        key.replace("bench.", "small.", 1).replace("DATABASE:bench", "DATABASE:small"): value
        for key, value in changes.items()
        if "t0000" in key or "t0001" in key or key == "DATABASE:bench"
    }
    ten = [
        f"t{i:04d}" for i in range(10)
    ]  # databases "ten" (10 tables) and "tenp" (with partitions)
    filtered = {}
    for key, value in changes.items():
        if key == "DATABASE:bench":
            filtered["DATABASE:ten"] = filtered["DATABASE:tenp"] = value
        elif key.startswith("TABLE:bench.") and key[12:] in ten:
            filtered["TABLE:ten." + key[12:]] = filtered["TABLE:tenp." + key[12:]] = value
        elif key.startswith("HDFS_PARTITION:bench.") and key[21:26] in ten:
            filtered["HDFS_PARTITION:tenp." + key[21:]] = value
    return {**changes, **small, **filtered}


def filtered_joins(server: CatalogServer, rounds: int = 10) -> dict[str, list[float]]:
    """Seconds from ``CatalogSubscriber(databases=[db])`` to synced, ``rounds`` times for
    ``ten`` (10 tables) and ``tenp`` (the same with their partitions), in this process."""
    times: dict[str, list[float]] = {"ten": [], "tenp": []}
    for db, walls in times.items():
        for _ in range(rounds + 1):  # the first one warms the snapshot cache up: dropped
            started = time.perf_counter()
            sub = CatalogSubscriber(server.endpoint, databases=[db]).start()
            try:
                sub.wait_synced(60)
                walls.append(time.perf_counter() - started)
            finally:
                sub.close()
        del walls[0]
    return times


class Joiners:
    """The joiner process (``support/snapshot_drain.py``)."""

    def __init__(self, endpoint: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "support.snapshot_drain", endpoint],
            cwd=HERE,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def join(self, unfiltered: int, filtered: int) -> list[dict[str, Any]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{unfiltered} {filtered} small\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the joiner process failed")
        return list(json.loads(line))

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def run(args: argparse.Namespace) -> list[Result]:
    partitions = args.tables * args.dts * args.regions
    size = f"{args.tables}x{args.dts * args.regions}"
    print(f"snapshot storm: {size} partitions (+2 tables in 'small'); {cpu_note()}")
    changes = catalog_changes(args)
    config = ServerConfig(
        bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*", heartbeat_interval_s=HEARTBEAT_S
    )
    server = CatalogServer(config)
    server.commit(changes).result()
    touched = {  # one partition of each database: a commit to both invalidates both
        next(k for k in changes if k.startswith(f"HDFS_PARTITION:{db}.")): b"changed"
        for db in ("bench", "small")
    }
    del changes
    gc.freeze()  # as the daemon does once its first load is done (catalogd/supervision.py)
    pauses = GcPauses()
    capture_s = server.submit(_old_capture).result()
    server.start()
    ident = server._thread.ident  # the server thread's own CPU clock, not the process's
    assert ident is not None
    tid = time.pthread_getcpuclockid(ident)
    joiners, beats = Joiners(server.endpoint), Heartbeats(server.pub_endpoint, HEARTBEAT_S)
    results: list[Result] = []
    try:
        cpus, walls = [], []
        for _ in range(4):
            cpu = thread_cpu_s(tid)
            (joined,) = joiners.join(1, 0)
            cpus.append(thread_cpu_s(tid) - cpu)
            walls.append(joined["wall_s"])
        entries, mib = joined["entries"], joined["bytes"] / 2**20
        later = statistics.median(cpus[1:])
        print(
            f"  one unfiltered join ({entries:,} entries, {mib:.0f} MiB of frames): server CPU "
            f"first {cpus[0]:.3f} s, later {', '.join(f'{c:.3f}' for c in cpus[1:])} s; "
            f"wall first {walls[0]:.2f} s, later {statistics.median(walls[1:]):.2f} s"
        )
        target = TARGET_LATER_JOIN_CPU_S_AT_1M * partitions / 1e6
        results += [
            Result(f"join {size}: server CPU, first join", cpus[0], "s", note=cpu_note()),
            Result(
                f"join {size}: server CPU, later join (median of 3)",
                later,
                "s",
                target,
                note=f"{later / cpus[0]:.3f}x the first; target scaled from 0.3 s at 1M",
            ),
            Result(
                f"join {size}: snapshot cache",
                server.stats.snapshot_cache_bytes / partitions,
                "B/partition",
                note=f"{server.stats.snapshot_cache_bytes / 2**20:.0f} MiB held",
            ),
        ]
        for db, walls in filtered_joins(server).items():
            what = "10 tables" + (", 10,000 partitions" if db == "tenp" else ", no partitions")
            median = statistics.median(walls) * 1e3
            print(
                f"  filtered join, database {db} ({what}): median {median:.1f} ms, "
                f"max {max(walls) * 1e3:.1f} ms over {len(walls)}; {cpu_note()}"
            )
            results.append(
                Result(
                    f"filtered join in {size} ({what}): constructor -> synced, median",
                    median,
                    "ms",
                    TARGET_FILTERED_JOIN_MS,
                    note=f"max {max(walls) * 1e3:.1f} ms over {len(walls)}; a CatalogSubscriber "
                    f"in the server's process; {cpu_note()}",
                )
            )
        storms = (("after a commit, commits every 0.1 s (encodes)", True), ("unchanged", False))
        for label, invalidate in storms:
            if invalidate:
                server.commit(touched).result()
            else:  # the writer changed ``bench``: one join encodes its state again
                joiners.join(1, 1)
            server.stats.longest_turn_s = server.stats.longest_turn_cpu_s = 0.0  # a bench's reset
            pauses.longest = 0.0
            beats.start()
            cpu, started = thread_cpu_s(tid), time.monotonic()
            writer = Writer(server, next(iter(touched)), enabled=invalidate)
            joined_all = joiners.join(10, 10)
            writer.stop()
            wall, cpu = time.monotonic() - started, thread_cpu_s(tid) - cpu
            time.sleep(3 * HEARTBEAT_S)
            late = beats.stop()
            turn, turn_cpu = server.stats.longest_turn_s, server.stats.longest_turn_cpu_s
            done = sorted(j["wall_s"] for j in joined_all)
            print(
                f"  20 joiners at once, {label}: all done in {wall:.2f} s (first {done[0]:.2f} s), "
                f"server CPU {cpu:.3f} s; longest turn {turn * 1e3:.1f} ms (most CPU in a turn "
                f"{turn_cpu * 1e3:.1f} ms); heartbeats late by "
                f"max {max(late, default=0) * 1e3:.1f} ms over {len(late)}; longest GC pause "
                f"{pauses.longest * 1e3:.1f} ms; {cpu_note()}"
            )
            results += [
                Result(
                    f"20 joiners {size} {label}: longest server turn",
                    turn * 1e3,
                    "ms",
                    TARGET_STALL_MS,
                    note=f"most CPU in one turn {turn_cpu * 1e3:.1f} ms; before slicing, one "
                    f"capture alone held {capture_s * 1e3:.0f} ms (same run); {cpu_note()}",
                ),
                Result(
                    f"20 joiners {size} {label}: heartbeat lateness, max",
                    max(late, default=0.0) * 1e3,
                    "ms",
                    TARGET_STALL_MS,
                    note=f"{len(late)} heartbeats; all joins {wall:.2f} s, server CPU {cpu:.2f} s",
                ),
            ]
    finally:
        pauses.close()
        joiners.close()
        beats.close()
        server.close()
    return results


class Writer:
    """Commits one partition every 0.1 s while the joins stream (from another thread,
    as the loader does): each commit lands in a database a join is still encoding."""

    def __init__(self, server: CatalogServer, key: str, *, enabled: bool) -> None:
        self._server, self._key = server, key
        self._stop = threading.Event()
        self.commits = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        if enabled:
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self._server.commit({self._key: b"commit %d" % self.commits}).result()
            self.commits += 1

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)


class GcPauses:
    """The longest cyclic GC collection (any thread of this process) since reset."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.longest = max(self.longest, time.perf_counter() - self._started)

    def close(self) -> None:
        gc.callbacks.remove(self._callback)


def _old_capture(catalog: Any) -> float:
    """What an unfiltered join's capture held the server thread before: the list of
    every live entry, taken in one turn (best of 3)."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        list(catalog.live_entries())
        best = min(best, time.perf_counter() - started)
    return best
