"""What a joining subscriber's snapshot costs the server thread before any encoding.

::

    .venv/bin/python bench/capture_bench.py [--tables 100] [--dts 100] [--regions 10]

A catalog of ``tables`` x ``dts * regions`` partitions in database ``bench`` plus a
database ``small`` of 2 such tables (payloads built and cached by ``sync_bench.py``),
in a :class:`Catalog`. Measured (best of 5): capturing a filtered snapshot of
``small`` by the database index (what the server does), against the scan of every
entry it replaced (the baseline, same run); and capturing an unfiltered one.
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
from subscriber.protocol.keys import database_of

DEFAULT_DIR = Path(tempfile.gettempdir()) / "catalogd-bench-sync"


def best(fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(5):
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
    return [
        Result(
            f"filtered join capture ({sent:,} entries of {size})",
            index * 1e3,
            "ms",
            note=f"the scan it replaced: {scan * 1e3:.1f} ms ({scan / index:,.0f}x)",
        ),
        Result(f"unfiltered join capture ({size})", whole * 1e3, "ms"),
    ]


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
