"""``python -m subscriber watch tcp://host:26500 [--databases a,b]``

Prints every change the subscriber applies, with its version, as it happens
(the ``kcat`` of the catalog): a debugging tool. Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Sequence

from subscriber.api import CatalogSubscriber
from subscriber.cache import ChangeEvent
from subscriber.protocol.errors import CatalogError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m subscriber", description=__doc__.split("\n\n")[1]
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    watch = commands.add_parser("watch", help="print each applied change as it happens")
    watch.add_argument("endpoint", help="catalogd address, e.g. tcp://127.0.0.1:26500")
    watch.add_argument("--databases", help="comma-separated databases to follow (default: all)")
    watch.add_argument(
        "--sync-timeout", type=float, default=30.0, help="seconds to wait for the first sync"
    )
    watch.add_argument(
        "--initial", action="store_true", help="also print every object of the first snapshot"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    databases = (
        [d.strip() for d in args.databases.split(",") if d.strip()] if args.databases else None
    )
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    synced = threading.Event()
    out = sys.stdout

    def show(event: ChangeEvent) -> None:
        if synced.is_set() or args.initial:
            out.write(f"{event.version:>10} {event.kind.value:<8} {event.key}\n")
            out.flush()

    sub = CatalogSubscriber(args.endpoint, databases=databases)
    sub.add_listener(show)
    try:
        sub.start()
        try:
            sub.wait_synced(args.sync_timeout)
        except CatalogError as exc:
            print(f"watch: {exc}", file=sys.stderr)
            return 3
        synced.set()
        out.write(
            f"# synced to {args.endpoint}: service {sub.service_id}, version {sub.version}, "
            f"{sum(len(sub.list_tables(db)) for db in sub.list_databases())} tables\n"
        )
        out.flush()
        stale = False
        while not stop.wait(0.5):
            if sub.is_stale != stale:
                stale = sub.is_stale
                state = "stale: no heartbeat" if stale else "live again"
                out.write(f"# {state} ({time.strftime('%X')})\n")
                out.flush()
    finally:
        sub.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
