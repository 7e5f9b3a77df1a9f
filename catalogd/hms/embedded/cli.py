"""``python -m catalogd.hms.embedded``: run a Hive Metastore by hand, or write templates.

:func:`main` runs an :class:`~catalogd.hms.embedded.process.EmbeddedMetastore`
(``--hms-version 2.3|3.1|4.x``; Derby, or ``--postgres-db NAME``) until Ctrl-C and
prints its ``thrift://`` URI; with ``--fetch VERSION ...`` it fetches Maven releases
(:mod:`.fetch`) and exits, with ``--write-templates DIR`` it writes the ``deploy/hms``
templates and exits.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from catalogd.hms.embedded.config import Backend, DerbyBackend, PostgresBackend
from catalogd.hms.embedded.process import EmbeddedMetastore
from catalogd.hms.embedded.releases import DEFAULT_VERSION, RELEASES, VERSIONS
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
        "--hms-version", choices=VERSIONS, default=DEFAULT_VERSION, help="which HMS to run"
    )
    parser.add_argument(
        "--fetch",
        nargs="+",
        choices=sorted(RELEASES),
        metavar="VERSION",
        help="fetch these HMS releases (3.1, 4.x) from Maven Central into "
        "~/.cache/catalogd with mvn, and exit",
    )
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
    if args.fetch:
        from catalogd.hms.embedded.fetch import fetch
        from subscriber.protocol.errors import MetastoreUnavailableError

        for version in args.fetch:
            try:
                print(f"HMS {version}: {fetch(version)}", flush=True)
            except MetastoreUnavailableError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
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
        version=args.hms_version,
    ) as hms:
        print(
            f"{hms.uri}  (started in {hms.startup_seconds:.1f} s; log: {hms.log_path})", flush=True
        )
        while not stop.wait(1.0) and hms.running:
            pass
    return 0
