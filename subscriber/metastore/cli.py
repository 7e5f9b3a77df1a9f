"""``python -m subscriber metastore``: the HMS endpoint as a sidecar process.

::

    python -m subscriber metastore --catalogd tcp://HOST:26500 --listen 127.0.0.1:9083 \\
        --upstream thrift://hms:9083 [--databases a,b] [--max-lag 30] [--write-wait 10]

Any HMS client on the host (Spark, Hive, Trino, the ``hive`` CLI) then uses
``thrift://127.0.0.1:9083``. Logs go to stderr, with a counters line every
``--stats-interval`` seconds and at exit: calls served from the cache and forwarded
to HMS by reason (write, locked: the connection holds an HMS lock or transaction,
pending: a write touched it and the cache does not show it yet, stale, unknown
method, not cached, cannot evaluate), in total and per method.
SIGINT/SIGTERM stop it.
"""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
import threading
from typing import Any

from subscriber.api import CatalogSubscriber
from subscriber.endpoints import parse_endpoints
from subscriber.protocol.errors import CatalogError

log = logging.getLogger("subscriber.metastore")
# catalogd.addresses.DEFAULT_EMBEDDED_HMS_PORT (the subscriber does not import catalogd)
EMBEDDED_HMS = "thrift://127.0.0.1:26503"


def _answers(uri: str) -> bool:
    host, _, port = uri.removeprefix("thrift://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=2.0).close()
    except OSError:
        return False
    return True


def add_parser(commands: Any) -> None:
    """Add the ``metastore`` sub-command to an argparse sub-parsers object."""
    cmd = commands.add_parser(
        "metastore",
        help="serve an HMS Thrift endpoint from the cache, forwarding the rest to HMS",
        description="\n\n".join(__doc__.split("\n\n")[1:4]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmd.add_argument(
        "--catalogd",
        required=True,
        nargs="+",
        metavar="URI",
        help="catalogd address, tcp://HOST:26500 or HOST:26500; an HA pair: two, "
        "separated by spaces or commas (as `watch` takes them)",
    )
    cmd.add_argument(
        "--upstream",
        metavar="URI",
        help=f"the real HMS, thrift://HOST:9083 (default {EMBEDDED_HMS}: the embedded HMS of "
        "a catalogd on this host started without --hms, at its default port)",
    )
    cmd.add_argument("--listen", default="127.0.0.1:9083", help="HOST:PORT to serve on")
    cmd.add_argument("--databases", help="comma-separated databases to follow (default: all)")
    cmd.add_argument(
        "--max-lag",
        type=float,
        default=30.0,
        help="serve reads while the cache is behind by at most this many seconds",
    )
    cmd.add_argument(
        "--write-wait",
        type=float,
        default=10.0,
        help="seconds at most that reads of what a write touched go to HMS while the "
        "cache does not show the write yet (read-your-writes; the write itself never waits)",
    )
    cmd.add_argument("--sync-timeout", type=float, default=60.0, help="seconds to wait for sync")
    cmd.add_argument("--stats-interval", type=float, default=60.0, help="seconds between counters")
    cmd.add_argument("--server-key", metavar="FILE", help="catalogd's public CURVE key file")
    cmd.add_argument("--key", metavar="FILE", help="this client's secret CURVE key file")


def run(args: argparse.Namespace) -> int:
    """Run the endpoint until SIGINT/SIGTERM. Exit codes: 0 stopped, 2 bad
    arguments, 3 not synced in time, 4 the listen address cannot be bound."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    databases = (
        [d.strip() for d in args.databases.split(",") if d.strip()] if args.databases else None
    )
    if args.upstream is None:
        if not _answers(EMBEDDED_HMS):
            print(f"metastore: nothing listens at {EMBEDDED_HMS}: give --upstream", file=sys.stderr)
            return 2
        log.info("no --upstream: forwarding to the embedded HMS at %s", EMBEDDED_HMS)
    upstream = args.upstream or EMBEDDED_HMS
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        sub = CatalogSubscriber(
            parse_endpoints(args.catalogd),
            databases=databases,
            server_key=args.server_key,
            client_key=args.key,
        )
        endpoint = sub.metastore_endpoint(
            upstream=upstream,
            listen=args.listen,
            max_lag_s=args.max_lag,
            write_wait_s=args.write_wait,
        )
    except CatalogError as exc:
        print(f"metastore: {exc}", file=sys.stderr)
        return 2
    with sub:
        try:
            sub.wait_synced(args.sync_timeout)
        except CatalogError as exc:
            # Serving anyway would forward every read: say so, and stop.
            print(f"metastore: {exc}", file=sys.stderr)
            return 3
        try:
            endpoint.start()
        except OSError as exc:
            print(f"metastore: cannot listen on {args.listen}: {exc}", file=sys.stderr)
            return 4
        with endpoint:
            log.info("serving %s (cache version %d)", endpoint.uri, sub.version)
            while not stop.wait(args.stats_interval):
                log.info("calls: %s", endpoint.stats.summary())
            log.info("stopping; calls: %s", endpoint.stats.summary())
    return 0
