"""``python -m subscriber``: the subscriber's two commands.

Two commands: ``watch`` prints every change a subscriber applies, as it happens;
``metastore`` serves an HMS Thrift endpoint from the cache for Spark, Hive or Trino.
Both take catalogd's address as tcp://HOST:PORT or HOST:PORT, an HA pair as two
addresses separated by spaces or commas.

``python -m subscriber watch tcp://a:26500 [tcp://b:26500] [--databases a,b]``
``[--server-key F --key F]``: every change the subscriber applies, with its version
(the ``kcat`` of the catalog): a debugging tool. Ctrl-C stops it. Several
endpoints (an HA pair): it follows the active one and says when it moves.

``python -m subscriber metastore --catalogd tcp://host:26500 [--upstream thrift://hms:9083]``
serves an HMS endpoint from the cache, forwarding the rest to the HMS catalogd reports
(or ``--upstream``): see :mod:`subscriber.metastore.cli`.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Sequence

from subscriber import ondemand
from subscriber.api import CatalogSubscriber
from subscriber.cache import ChangeEvent
from subscriber.endpoints import parse_endpoints
from subscriber.metastore import cli as metastore_cli
from subscriber.protocol.errors import CatalogError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m subscriber", description=__doc__.split("\n\n")[1]
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    watch = commands.add_parser(
        "watch",
        help="print each applied change as it happens (a debugging tool)",
        description="Print every change the subscriber applies, with its version, as it "
        "happens; between changes, the version it is synced at. Ctrl-C stops it.",
    )
    watch.add_argument(
        "endpoint",
        nargs="+",
        metavar="URI",
        help="catalogd address, tcp://HOST:PORT or HOST:PORT (e.g. 127.0.0.1:26500); "
        "an HA pair: two, separated by spaces or commas",
    )
    watch.add_argument(
        "--databases", metavar="DB,DB", help="comma-separated databases to follow (default: all)"
    )
    watch.add_argument(
        "--sync-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="seconds to wait for the first sync",
    )
    watch.add_argument(
        "--initial", action="store_true", help="also print every object of the first snapshot"
    )
    watch.add_argument(
        "--server-key", metavar="FILE", help="catalogd's public CURVE key file (server.key)"
    )
    watch.add_argument(
        "--key", metavar="FILE", help="this client's secret CURVE key file (NAME.key_secret)"
    )
    ondemand.add_arguments(watch)
    metastore_cli.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "metastore":
        return metastore_cli.run(args)
    databases = (
        [d.strip() for d in args.databases.split(",") if d.strip()] if args.databases else None
    )
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    synced = threading.Event()
    out = sys.stdout

    changed = threading.Event()

    def show(event: ChangeEvent) -> None:
        if synced.is_set() or args.initial:
            out.write(f"{event.version:>10} {event.kind.value:<8} {event.key}\n")
            out.flush()
            changed.set()

    try:
        endpoints = parse_endpoints(args.endpoint)
        sub = CatalogSubscriber(
            endpoints,
            databases=databases,
            server_key=args.server_key,
            client_key=args.key,
            mode=args.mode,
            cache_mb=args.cache_mb,
        )
    except CatalogError as exc:
        print(f"watch: {exc}", file=sys.stderr)
        return 2
    sub.add_listener(show)
    try:
        sub.start()
        try:
            sub.wait_synced(args.sync_timeout)
        except CatalogError as exc:
            why = f" ({sub.last_error})" if sub.last_error is not None else ""
            print(f"watch: {exc}{why}", file=sys.stderr)
            return 3
        synced.set()
        out.write(
            f"# synced to {' '.join(endpoints)}: service {sub.service_id}, "
            f"version {sub.version}, "
            f"{sum(len(sub.list_tables(db)) for db in sub.list_databases())} tables\n"
        )
        out.write(f"# synced at version {sub.version}, waiting for changes\n")
        out.flush()
        stale = False
        service = sub.service_id
        changed.clear()
        quiet_since = 0.0  # just said it
        while not stop.wait(0.5):
            if changed.is_set():
                changed.clear()
                quiet_since = time.monotonic()
            elif quiet_since and time.monotonic() - quiet_since >= 1.0:
                # Once after each burst of changes: where the watch stands now.
                out.write(f"# synced at version {sub.version}, waiting for changes\n")
                out.flush()
                quiet_since = 0.0
            if sub.service_id != service:
                service = sub.service_id
                out.write(f"# now following service {service} (version {sub.version})\n")
                out.flush()
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
