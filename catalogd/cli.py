"""The ``catalogd`` command line.

Exit codes: 0 success; 1 an unexpected error; 2 bad usage or input; 3 a
service (HMS, catalogd) unreachable; 4 an object not found.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from catalogd.server import DEFAULT_PORT, ServerConfig
from subscriber.errors import (
    CatalogError,
    InvalidRequestError,
    NotFoundError,
    UnavailableError,
)

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_NOT_FOUND = 0, 1, 2, 3, 4

EPILOG = """exit codes: 0 ok, 1 error, 2 bad usage or input, 3 HMS or catalogd unreachable,
4 not found. With no --hms, catalogd starts an embedded Hive Metastore (Derby,
from the pyspark jars; needs Java 17) in DATA_DIR/hms."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="catalogd",
        description="Versioned Hive Metastore catalog, broadcast to Spark drivers over ZeroMQ.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    dump = commands.add_parser(
        "dump",
        help="load the whole catalog from HMS once and print it",
        description="Load every database, table, view and partition once and print a "
        "summary, or with --json one line per object (key, type, version).",
    )
    dump.add_argument("--hms", metavar="thrift://HOST:PORT", help="Hive Metastore address")
    dump.add_argument("--data-dir", type=Path, default=Path("data"), help="for the embedded HMS")
    dump.add_argument("--json", action="store_true", help="one JSON object per catalog object")

    serve = commands.add_parser(
        "serve",
        help="load the catalog and publish it to subscribers",
        description="Load the catalog from HMS and serve it over ZeroMQ: subscribers "
        "connect to --bind and learn the publisher address in the handshake.",
    )
    serve.add_argument("--hms", metavar="thrift://HOST:PORT", help="Hive Metastore address")
    serve.add_argument(
        "--bind",
        default=f"tcp://127.0.0.1:{DEFAULT_PORT}",
        metavar="tcp://HOST:PORT",
        help="address subscribers connect to (default %(default)s)",
    )
    serve.add_argument(
        "--pub-bind",
        metavar="tcp://HOST:PORT",
        help="publisher address (default: the --bind host, next port; PORT may be *)",
    )
    serve.add_argument(
        "--advertise-host", help="host name subscribers should use for the publisher"
    )
    serve.add_argument("--data-dir", type=Path, default=Path("data"), help="default ./data")
    serve.add_argument(
        "--heartbeat-interval", type=float, default=1.0, metavar="SECONDS", help="default 1"
    )
    serve.add_argument(
        "--demo", action="store_true", help="create a small demo warehouse in HMS first"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        if args.command == "dump":
            return _dump(args)
        if args.command == "serve":
            return _serve(args)
    except NotFoundError as exc:
        print(f"catalogd: not found: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except UnavailableError as exc:
        print(f"catalogd: unavailable: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except InvalidRequestError as exc:
        print(f"catalogd: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CatalogError as exc:
        print(f"catalogd: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_OK
    return EXIT_USAGE


def _dump(args: argparse.Namespace) -> int:
    from catalogd import loader
    from catalogd.catalog import Catalog
    from catalogd.daemon import open_metastore
    from catalogd.metastore import convert
    from catalogd.metastore.client import MetastoreClient
    from subscriber.keys import object_type_of

    with ExitStack() as stack:
        uri = open_metastore(stack, args.hms, args.data_dir)
        client = stack.enter_context(MetastoreClient(uri))
        objects, stats = loader.load_catalog(loader.ThriftSource(client))
    catalog = Catalog()
    catalog.commit(convert.encode_all(objects))
    out = sys.stdout
    if args.json:
        for entry in catalog.live_entries():
            out.write(
                json.dumps(
                    {"key": entry.key, "type": object_type_of(entry.key), "version": entry.version}
                )
                + "\n"
            )
        return EXIT_OK
    rows = [
        ("databases", stats.databases),
        ("tables", stats.tables),
        ("views", stats.views),
        ("partitions", stats.partitions),
        ("catalog version", catalog.version),
        ("load time (s)", f"{stats.seconds:.2f}"),
    ]
    out.write(f"catalog of {uri}\n")
    for label, value in rows:
        out.write(f"  {label:<16} {value}\n")
    return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    from catalogd.daemon import ServeOptions, serve

    options = ServeOptions(
        hms_uri=args.hms,
        data_dir=args.data_dir,
        server=ServerConfig(
            bind=args.bind,
            pub_bind=args.pub_bind,
            advertise_host=args.advertise_host,
            heartbeat_interval_s=args.heartbeat_interval,
        ),
        demo=args.demo,
    )
    return serve(options)


if __name__ == "__main__":
    sys.exit(main())
