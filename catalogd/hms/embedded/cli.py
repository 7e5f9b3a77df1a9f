"""``python -m catalogd.hms.embedded``: run a Hive Metastore by hand, or write templates.

:func:`main` runs an :class:`~catalogd.hms.embedded.process.EmbeddedMetastore`
(Derby, or ``--postgres-db NAME``) until Ctrl-C and prints its ``thrift://`` URI, or
with ``--write-templates DIR`` writes the ``deploy/hms`` templates and exits.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from pathlib import Path

from catalogd.hms.embedded.config import Backend, DerbyBackend, PostgresBackend
from catalogd.hms.embedded.process import EmbeddedMetastore
from catalogd.hms.embedded.templates import write_templates

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m catalogd.hms.embedded``: run an HMS until Ctrl-C (developers)."""
    import argparse
    import threading

    parser = argparse.ArgumentParser(
        prog="python -m catalogd.hms.embedded", description=main.__doc__
    )
    parser.add_argument("--data-dir", type=Path, help="HMS state (Derby db, warehouse, logs)")
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    parser.add_argument("--postgres-db", help="use this PostgreSQL database instead of Derby")
    parser.add_argument("--postgres-host", default="127.0.0.1")
    parser.add_argument("--postgres-port", type=int, default=5432)
    parser.add_argument("--postgres-user", default="postgres")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "catalogd",
    )
    parser.add_argument("--no-fast-start", action="store_true", help="full JIT (benchmarks)")
    parser.add_argument(
        "--events", action="store_true", help="log notification events (compiles a listener)"
    )
    parser.add_argument(
        "--write-templates",
        type=Path,
        metavar="DIR",
        help="write the deploy/hms templates to DIR and exit",
    )
    args = parser.parse_args(argv)
    if args.write_templates:
        write_templates(args.write_templates)
        return 0
    if args.data_dir is None:
        parser.error("--data-dir is required")
    backend: Backend = DerbyBackend()
    if args.postgres_db:
        backend = PostgresBackend(
            database=args.postgres_db,
            host=args.postgres_host,
            port=args.postgres_port,
            user=args.postgres_user,
            password=os.environ.get("PGPASSWORD", ""),
        )
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with EmbeddedMetastore(
        args.data_dir,
        backend=backend,
        port=args.port,
        cache_dir=args.cache_dir,
        fast_start=not args.no_fast_start,
        notification_events=args.events,
    ) as hms:
        print(
            f"{hms.uri}  (started in {hms.startup_seconds:.1f} s; log: {hms.log_path})", flush=True
        )
        while not stop.wait(1.0) and hms.running:
            pass
    return 0
