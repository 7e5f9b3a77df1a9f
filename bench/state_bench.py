"""Cost of the persisted version high-water mark: changes/s with and without a state store.

::

    .venv/bin/python bench/state_bench.py [--changes 3000] [--repeat 3] [--mysql]

Publishing one change in catalogd is ``Catalog.commit`` (the next version) then
``StateStore.reserve(version)`` before the delta may go out. This measures that
loop, one change per commit, in one process:

* persistence off: ``commit`` only (the baseline);
* SQLite (a file in a temp dir, WAL, ``synchronous=FULL``), the local
  PostgreSQL (a fresh database, dropped afterwards) and, with ``--mysql``, the
  local MariaDB: ``commit`` + ``reserve`` with blocks of 1, 100 and 1000
  versions per write.

Each figure is the best of ``--repeat`` runs of ``--changes`` changes (fewer
for block 1, whose every change is a database transaction). Read them as
ratios against the baseline of the same run.
"""

from __future__ import annotations

import argparse
import secrets
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from support.measure import Result, cpu_note, print_results

from catalogd.core.catalog import Catalog
from catalogd.state.store import StateStore, sqlite_url

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/{db}"
MARIADB = "mysql+pymysql://root@127.0.0.1:3306/{db}"
BLOCKS = (1, 100, 1000)
PAYLOAD = b"x" * 200  # about a small table header; its content does not matter here


def changes_per_s(changes: int, reserve: Callable[[int], int] | None, start: int = 0) -> float:
    """Publish ``changes`` one-key changes from version ``start``; return changes per second."""
    catalog = Catalog(version=start)
    keys = [f"TABLE:bench.t{i % 500}" for i in range(changes)]
    payloads = [PAYLOAD + i.to_bytes(4, "big") for i in range(changes)]
    started = time.perf_counter()
    for key, payload in zip(keys, payloads, strict=True):
        delta = catalog.commit({key: payload})
        if reserve is not None:
            reserve(delta.to_version)
    return changes / (time.perf_counter() - started)


@contextmanager
def scratch_database(template: str, admin_db: str, force: str) -> Iterator[str]:
    name = f"catalogd_bench_{secrets.token_hex(4)}"
    admin = sa.create_engine(template.format(db=admin_db), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
        yield template.format(db=name)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}{force}"))
        admin.dispose()


def best_of(repeat: int, run: Callable[[], float]) -> float:
    return max(run() for _ in range(repeat))


def measure_backend(
    label: str, url: str, changes: int, repeat: int, baseline: float
) -> list[Result]:
    results = []
    for block in BLOCKS:
        # Block 1 writes per change: fewer changes keep the run short.
        n = max(200, changes // 10) if block == 1 else changes

        def run(block: int = block, n: int = n) -> float:
            with StateStore.open(url, block=block) as store:
                # As catalogd does: start above every version reserved before.
                return changes_per_s(n, store.reserve, store.high_water_mark())

        rate = best_of(repeat, run)
        results.append(
            Result(
                f"{label}, block {block}",
                rate,
                "changes/s",
                note=f"{rate / baseline:.3f} of persistence off; {1e3 / rate:.3f} ms/change",
            )
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--changes", type=int, default=3000, help="changes per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best kept)")
    parser.add_argument("--mysql", action="store_true", help="also measure the local MariaDB")
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    args = parser.parse_args(argv)
    print(f"state store bench: {args.changes} changes per run, best of {args.repeat}; {cpu_note()}")
    baseline = best_of(args.repeat, lambda: changes_per_s(args.changes, None))
    results = [
        Result("persistence off (Catalog.commit only)", baseline, "changes/s", note="baseline")
    ]
    with tempfile.TemporaryDirectory(prefix="state-bench-") as tmp:
        results += measure_backend(
            "SQLite", sqlite_url(f"{tmp}/state.db"), args.changes, args.repeat, baseline
        )
    if not args.no_postgres:
        with scratch_database(POSTGRES, "postgres", " WITH (FORCE)") as url:
            results += measure_backend("PostgreSQL", url, args.changes, args.repeat, baseline)
    if args.mysql:
        with scratch_database(MARIADB, "", "") as url:
            results += measure_backend("MariaDB", url, args.changes, args.repeat, baseline)
    print_results("cost of the persisted version high-water mark", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
