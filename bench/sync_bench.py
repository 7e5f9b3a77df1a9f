"""New-subscriber sync of a big catalog: wall time and resident memory per partition.

::

    .venv/bin/python bench/sync_bench.py [--tables 1000] [--dts 100] [--regions 10]

Builds ``tables`` tables of ``dts * regions`` partitions each (default 1,000 x
1,000 = 1M) from realistic HMS structs converted with
:mod:`catalogd.conversion.objects`, exactly as the loader does, and caches the
encoded payloads in ``--data-dir`` (building 1M takes minutes; later runs
reuse the file). The payloads are committed (before ``start``) into an in-process
:class:`CatalogServer`; then one subscriber process (``support/subscriber_process.py
sync``) measures ``start()`` -> ``wait_synced`` and its RSS before and after.

Also printed: the server's snapshot encoding time (its own chunk generator,
run once before serving) and the snapshot's size, the sum of the frames.
"""

from __future__ import annotations

import argparse
import multiprocessing
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import zmq
from support import synthetic
from support.measure import Result, add_output_argument, cpu_note, finish

import idl
from catalogd.core.catalog import Catalog
from catalogd.server.snapshots import snapshot_frames
from catalogd.server.thread import CatalogServer, ServerConfig

HERE = Path(__file__).resolve().parent
DEFAULT_DIR = Path(tempfile.gettempdir()) / "catalogd-bench-sync"
# Run from bench/ (``cwd=HERE``), where ``support`` is importable.
WORKER = [sys.executable, "-m", "support.subscriber_process"]
TARGET_SYNC_S = 5.0
TARGET_BYTES_PER_PARTITION = 500
TARGET_FIRST_GET_TABLE_S = 200e-6
TARGET_FIRST_LIST_PARTITIONS_S = 5e-3


def _table(dts: int, regions: int, i: int) -> dict[str, bytes]:
    return synthetic.table_payloads(synthetic.table_name(i), "file:/warehouse", dts, regions)


def cached_catalog(data_dir: Path, tables: int, dts: int, regions: int) -> Iterator[dict]:
    """Yield the database's payloads, then each table's: from the cache file, or built
    (with one worker process per CPU) and written to it first."""
    # Payloads are wire bytes: a new protocol version makes them anew.
    version = idl.catalog_service.PROTOCOL_VERSION
    path = data_dir / f"catalog-{tables}x{dts}x{regions}-p{version}.pickle"
    if not path.is_file():
        data_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        partial_path = path.with_suffix(".partial")
        build = partial(_table, dts, regions)
        with partial_path.open("wb") as out, multiprocessing.get_context("spawn").Pool() as pool:
            db = next(synthetic.catalog_payloads(0, dts, regions, warehouse="file:/warehouse"))
            pickle.dump(db, out, protocol=5)
            for n, payloads in enumerate(pool.imap(build, range(tables), chunksize=8), 1):
                pickle.dump(payloads, out, protocol=5)
                if n % 100 == 0:
                    print(f"  built {n}/{tables} tables, {time.monotonic() - started:.0f} s")
        partial_path.replace(path)
        print(
            f"built {tables * dts * regions} partitions via convert in "
            f"{time.monotonic() - started:.1f} s; cached in {path}"
        )
    with path.open("rb") as f:
        while True:
            try:
                yield pickle.load(f)
            except EOFError:
                return


def snapshot_of(service_id: str, config: ServerConfig, catalog: Catalog) -> list[bytes]:
    """Every frame of a whole-catalog snapshot, as the server streams it to a joining peer."""
    return list(
        snapshot_frames(
            catalog,
            service_id=service_id,
            request_id=None,
            databases=None,
            chunk_size=config.snapshot_chunk,
        )
    )


def run(
    data_dir: Path, tables: int, dts: int, regions: int, timeout_s: float = 600
) -> list[Result]:
    print(f"sync: {tables} tables x {dts * regions} partitions; {cpu_note()}")
    started = time.monotonic()
    changes: dict[str, bytes] = {}
    for payloads in cached_catalog(data_dir, tables, dts, regions):
        changes.update(payloads)
    partitions = tables * dts * regions
    print(f"  catalog in memory: {len(changes)} objects in {time.monotonic() - started:.1f} s")
    server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*"))
    started = time.monotonic()
    server.commit(changes).result()
    commit_s = time.monotonic() - started
    del changes
    # The server's own snapshot generator, run through submit() before start():
    # exactly the encoding work it does for a joining subscriber.
    started = time.monotonic()
    frames = server.submit(partial(snapshot_of, server.service_id, server.config)).result()
    encode_s = time.monotonic() - started
    snapshot_bytes = sum(len(f) for f in frames)
    del frames
    server.start()
    ctx: zmq.Context = zmq.Context.instance()
    pull = ctx.socket(zmq.PULL)
    pull.bind("tcp://127.0.0.1:*")
    report_ep = pull.getsockopt(zmq.LAST_ENDPOINT).decode()
    server_cpu = time.process_time()  # this process is idle but for the server thread
    try:
        proc = subprocess.Popen(
            [*WORKER, "sync", server.endpoint, report_ep, str(timeout_s)], cwd=HERE
        )
        if not pull.poll(int((timeout_s + 60) * 1000)):
            proc.kill()
            raise TimeoutError("the subscriber process did not report")
        report = pull.recv_json()
        server_cpu = time.process_time() - server_cpu
        proc.wait(timeout=60)
    finally:
        pull.close(linger=0)
        server.close()
    if "error" in report:
        raise RuntimeError(f"subscriber process failed: {report['error']}")
    per_part = report["rss_synced"] / partitions
    print(
        f"  subscriber: synced {report['entries']} entries (version {report['version']}) in "
        f"{report['sync_s']:.2f} s; RSS +{report['rss_synced'] / 2**20:.0f} MiB synced, "
        f"+{report['rss_after_gc'] / 2**20:.0f} after gc, "
        f"+{report['rss_after_trim'] / 2**20:.0f} after malloc_trim, "
        f"peak +{report['peak_rss'] / 2**20:.0f} MiB"
    )
    return [
        Result(
            f"sync {tables}x{dts * regions}: start() -> wait_synced",
            report["sync_s"],
            "s",
            TARGET_SYNC_S,
            note=f"{partitions / report['sync_s']:,.0f} partitions/s; CPU: subscriber "
            f"{report['cpu_s']:.1f} s, server {server_cpu:.1f} s (2 cores, shared)",
        ),
        Result(
            "sync: subscriber RSS per partition",
            per_part,
            "B",
            TARGET_BYTES_PER_PARTITION,
            note=f"after malloc_trim {report['rss_after_trim'] / partitions:.0f} B; peak "
            f"{report['peak_rss'] / partitions:.0f} B",
        ),
        *_read_results(report, dts),
        Result(
            "sync: server snapshot encode",
            encode_s,
            "s",
            note=f"{snapshot_bytes / 2**20:.1f} MiB in frames, "
            f"{snapshot_bytes / partitions:.0f} B/partition",
        ),
        Result("sync: server preload (commit into the core)", commit_s, "s"),
    ]


def _read_results(report: dict, dts: int) -> list[Result]:
    """Cold (first) and warm reads of ~20 tables right after the sync: median, max beside."""
    rows = []
    for name, target, what in (
        ("get_table", TARGET_FIRST_GET_TABLE_S, "get_table"),
        ("list_partitions", TARGET_FIRST_LIST_PARTITIONS_S, "list_partitions(dt=X)"),
    ):
        for prefix, label in (("", "first"), ("warm_", "warm")):
            times = sorted(report[prefix + name])
            rows.append(
                Result(
                    f"sync: {label} {what} after sync (median of {len(times)} tables)",
                    times[len(times) // 2] * 1e6,
                    "us",
                    target * 1e6 if not prefix else None,
                    note=f"max {times[-1] * 1e6:,.0f} us; tables of {dts} dts",
                )
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DIR,
        help=f"where built payloads are cached (default {DEFAULT_DIR})",
    )
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--dts", type=int, default=100)
    parser.add_argument("--regions", type=int, default=10)
    add_output_argument(parser)
    args = parser.parse_args(argv)
    return finish("sync", run(args.data_dir, args.tables, args.dts, args.regions), args)


if __name__ == "__main__":
    raise SystemExit(main())
