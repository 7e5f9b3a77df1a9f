"""``python -m subscriber metastore``: the HMS endpoint as a sidecar process.

::

    python -m subscriber metastore --catalogd tcp://HOST:26500 --listen 127.0.0.1:9083 \\
        [--upstream thrift://hms:9083] [--databases a,b] [--max-lag 30] [--write-wait 10]

Any HMS client on the host (Spark, Hive, Trino, the ``hive`` CLI) then uses
``thrift://127.0.0.1:9083``. Writes and what the cache cannot answer go to the Hive
Metastore catalogd reports (its embedded HMS, or its --hms), or to --upstream.

Logs go to stderr, with a counters line every ``--stats-interval`` seconds and at
exit: calls served from the cache and forwarded to HMS by reason (write, locked: the
connection holds an HMS lock or transaction, pending: a write touched it and the
cache does not show it yet, stale, unknown method, not cached, cannot evaluate), in
total and per method. SIGINT/SIGTERM stop it.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

from subscriber import ondemand
from subscriber.api import CatalogSubscriber
from subscriber.endpoints import parse_endpoints
from subscriber.metastore.endpoint import MetastoreEndpoint
from subscriber.metastore.upstream import parse_uri
from subscriber.protocol.errors import CatalogError, InvalidRequestError

log = logging.getLogger("subscriber.metastore")
_LOOPBACK = ("127.", "localhost", "[::1]", "::1")
NO_HMS = (
    "catalogd reports no Hive Metastore (it reads the metastore database, --hms-db, or is "
    "older than this report): give --upstream thrift://HOST:PORT"
)


def add_parser(commands: Any) -> None:
    """Add the ``metastore`` sub-command to an argparse sub-parsers object."""
    cmd = commands.add_parser(
        "metastore",
        help="serve an HMS Thrift endpoint from the cache, forwarding the rest to HMS",
        description="\n\n".join(__doc__.split("\n\n")[1:5]),
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
        help="the real HMS, thrift://HOST:9083 (default: the HMS catalogd reports, learned "
        "at the first sync: its embedded HMS or its --hms; none with --hms-db alone)",
    )
    cmd.add_argument(
        "--listen", default="127.0.0.1:9083", metavar="HOST:PORT", help="where to serve"
    )
    cmd.add_argument(
        "--databases", metavar="DB,DB", help="comma-separated databases to follow (default: all)"
    )
    cmd.add_argument(
        "--max-lag",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="serve reads while the cache is behind by at most this many seconds",
    )
    cmd.add_argument(
        "--write-wait",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="seconds at most that reads of what a write touched go to HMS while the "
        "cache does not show the write yet (read-your-writes; the write itself never waits)",
    )
    cmd.add_argument(
        "--sync-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="seconds to wait for the first sync",
    )
    cmd.add_argument(
        "--stats-interval",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="seconds between counters lines",
    )
    cmd.add_argument("--server-key", metavar="FILE", help="catalogd's public CURVE key file")
    cmd.add_argument("--key", metavar="FILE", help="this client's secret CURVE key file")
    ondemand.add_arguments(cmd)


def run(args: argparse.Namespace) -> int:
    """Run the endpoint until SIGINT/SIGTERM. Exit codes: 0 stopped, 2 bad arguments
    (or no --upstream and catalogd reports no HMS), 3 not synced in time, 4 the listen
    address cannot be bound."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    databases = (
        [d.strip() for d in args.databases.split(",") if d.strip()] if args.databases else None
    )
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        sub = CatalogSubscriber(
            parse_endpoints(args.catalogd),
            databases=databases,
            server_key=args.server_key,
            client_key=args.key,
            mode=args.mode,
            cache_mb=args.cache_mb,
        )
        # Given, the upstream is checked before waiting for the sync; else it is learned then.
        endpoint = _endpoint(sub, args.upstream, args) if args.upstream else None
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
        if endpoint is None:
            try:
                endpoint = _endpoint(sub, _reported_upstream(sub, args.catalogd), args)
            except CatalogError as exc:
                print(f"metastore: {exc}", file=sys.stderr)
                return 2
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


def _endpoint(sub: CatalogSubscriber, upstream: str, args: argparse.Namespace) -> MetastoreEndpoint:
    return sub.metastore_endpoint(
        upstream=upstream, listen=args.listen, max_lag_s=args.max_lag, write_wait_s=args.write_wait
    )


def _reported_upstream(sub: CatalogSubscriber, catalogd: list[str]) -> str:
    """The HMS catalogd reports (the subscriber is synced), checked and logged.

    Raises:
        InvalidRequestError: catalogd reports none, or not a ``thrift://HOST:PORT``.
    """
    uri = sub.hms_uri
    if uri is None:
        raise InvalidRequestError(NO_HMS)
    try:
        host, _ = parse_uri(uri)
    except InvalidRequestError:
        raise InvalidRequestError(
            f"catalogd reports the Hive Metastore as {uri!r}, not thrift://HOST:PORT: "
            "give --upstream"
        ) from None
    log.info("no --upstream: forwarding to %s, the Hive Metastore catalogd reads", uri)
    catalogd_host = parse_endpoints(catalogd)[0].split("://", 1)[-1].rpartition(":")[0]
    if host.startswith(_LOOPBACK) and not catalogd_host.startswith(_LOOPBACK):
        log.warning(
            "%s is a loopback address on catalogd's host (%s): unless catalogd runs on this "
            "host, give --upstream",
            uri,
            catalogd_host,
        )
    return uri
