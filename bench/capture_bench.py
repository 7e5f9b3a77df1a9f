"""What a joining subscriber's snapshot costs the server thread before any encoding.

::

    .venv/bin/python bench/capture_bench.py [--tables 100] [--dts 100] [--regions 10]

A catalog of ``tables`` x ``dts * regions`` partitions in database ``bench`` plus a
database ``small`` of 2 such tables (payloads built and cached by ``sync_bench.py``),
in a :class:`Catalog`. Measured (best of 5): capturing a filtered snapshot of
``small`` by the database index, against the scan of every entry it replaced (the
baseline, same run); capturing an unfiltered one as the server does now (its snapshot
cache: the first capture, and one after a commit to a database), against the list of
every live entry it captured before (same run); and what a commit of one partition
costs while a join still encodes that partition's database (copy on write: its map of
tables and that table's partitions are copied first) against the same commit without.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.measure import Result, add_output_argument, cpu_note, finish
from sync_bench import cached_catalog

from catalogd.core.catalog import Catalog
from catalogd.server.snapshot_cache import SnapshotCache
from catalogd.server.snapshots import snapshot_frames
from subscriber.protocol.keys import database_of

DEFAULT_DIR = Path(tempfile.gettempdir()) / "catalogd-bench-sync"


def best(fn: Callable[[], Any], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def run(args: argparse.Namespace) -> list[Result]:
    print(f"snapshot capture; {cpu_note()}")
    changes: dict[str, bytes] = {}
    for payloads in cached_catalog(args.data_dir, args.tables, args.dts, args.regions):
        changes.update(payloads)
    small = {
        key.replace("bench.", "small.", 1).replace("DATABASE:bench", "DATABASE:small"): value
        for key, value in changes.items()
        if "t0000" in key or "t0001" in key or key == "DATABASE:bench"
    }
    catalog = Catalog()
    catalog.commit({**changes, **small})
    del changes
    wanted = {"small", ""}
    sent = len(catalog.live_entries_of(sorted(wanted)))
    scan = best(lambda: [e for e in catalog.live_entries() if database_of(e.key) in wanted])
    index = best(lambda: catalog.live_entries_of(sorted(wanted)))
    whole = best(lambda: list(catalog.live_entries()))
    size = f"{len(catalog):,} objects"
    first = best(lambda: capture(catalog, SnapshotCache()))
    cache = SnapshotCache()
    capture(catalog, cache)
    key = next(k for k in catalog.keys_of_database("bench") if k.startswith("HDFS"))
    changed = []
    for n in range(5):
        catalog.commit({key: str(n).encode()})
        changed.append(best(lambda: capture(catalog, cache), repeat=1))
    after = min(changed)
    plain, copied = [], []
    for n in range(5):
        started = time.perf_counter()
        catalog.commit({key: b"plain %d" % n})
        plain.append(time.perf_counter() - started)
        catalog.database_view("bench")  # held (a join encodes it): the commit copies
        started = time.perf_counter()
        catalog.commit({key: b"copied %d" % n})
        copied.append(time.perf_counter() - started)
    return [
        Result(
            f"filtered join capture ({sent:,} entries of {size})",
            index * 1e3,
            "ms",
            note=f"the scan it replaced: {scan * 1e3:.1f} ms ({scan / index:,.0f}x)",
        ),
        Result(
            f"unfiltered join capture, first ({size})",
            first * 1e3,
            "ms",
            note=f"before: the list of every entry, {whole * 1e3:.1f} ms (same run)",
        ),
        Result(
            f"unfiltered join capture after a commit ({size})",
            after * 1e3,
            "ms",
            note=f"{whole / after:,.0f}x less than the list of every entry",
        ),
        Result(
            "one-partition commit while a join encodes its database",
            min(copied) * 1e3,
            "ms",
            note=f"without one {min(plain) * 1e3:.2f} ms; copied first: the database's map "
            f"of tables and the partition's table, not its {catalog.size_of_database('bench'):,}"
            " entries",
        ),
    ]


def capture(catalog: Catalog, cache: SnapshotCache) -> Any:
    """An unfiltered join's capture, as the server makes it (no frame encoded)."""
    return snapshot_frames(
        catalog, service_id="s", request_id=1, databases=None, chunk_size=2000, cache=cache
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--dts", type=int, default=100)
    parser.add_argument("--regions", type=int, default=10)
    add_output_argument(parser)
    args = parser.parse_args(argv)
    return finish("capture", run(args), args)


if __name__ == "__main__":
    raise SystemExit(main())
