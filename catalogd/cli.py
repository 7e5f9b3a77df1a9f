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
from typing import Any

from catalogd.admin import DEFAULT_ADMIN_PORT
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
    serve.add_argument(
        "--admin-bind",
        default=f"tcp://127.0.0.1:{DEFAULT_ADMIN_PORT}",
        metavar="tcp://HOST:PORT",
        help="admin endpoint (default %(default)s)",
    )
    serve.add_argument(
        "--loader-pool-size", type=int, default=4, help="background table loaders (default 4)"
    )
    serve.add_argument(
        "--change-detection",
        choices=("auto", "events", "poll", "off"),
        default="auto",
        help="HMS notification events when the HMS logs them (auto), or polling",
    )
    serve.add_argument(
        "--poll-interval", type=float, default=5.0, metavar="SECONDS", help="default 5"
    )
    serve.add_argument(
        "--poll-max-calls-per-s",
        type=float,
        default=100.0,
        metavar="N",
        help="cap on HMS calls that polling makes per second (default 100)",
    )
    _admin_parser(commands)
    return parser


def _admin_parser(commands: Any) -> None:
    admin = commands.add_parser(
        "admin",
        help="send an admin command to a running catalogd",
        description="Admin commands. Mutating commands print the catalog version at which "
        "their effect is published; --sync waits until live subscribers applied it.",
        epilog="exit codes: 0 ok, 1 internal error, 2 bad input, 3 catalogd or HMS "
        "unreachable, 4 not found, 5 --sync: some subscribers did not confirm, "
        "6 conflict, 7 busy",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    admin.add_argument(
        "--endpoint",
        default=f"tcp://127.0.0.1:{DEFAULT_ADMIN_PORT}",
        metavar="tcp://HOST:PORT",
        help="catalogd admin address (default %(default)s)",
    )
    admin.add_argument("--json", action="store_true", help="print the full answer as JSON")
    admin.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for an answer")
    sub = admin.add_subparsers(dest="admin_command", required=True, metavar="ADMIN_COMMAND")
    sub.add_parser("status", help="service id, version, object counts, loading, subscribers")
    invalidate = sub.add_parser(
        "invalidate", help="drop cached metadata (all, DB or DB.TABLE); reload lazily"
    )
    invalidate.add_argument("target", nargs="?", help="DB or DB.TABLE (default: everything)")
    refresh = sub.add_parser("refresh", help="reload a table (or partitions) now")
    refresh.add_argument("target", help="DB.TABLE")
    refresh.add_argument(
        "--partition",
        action="append",
        default=[],
        metavar="k=v/k2=v2",
        help="only this partition (repeatable)",
    )
    for command in (invalidate, refresh):
        command.add_argument(
            "--sync", action="store_true", help="wait until live subscribers applied it"
        )
        command.add_argument(
            "--sync-timeout", type=float, default=30.0, help="seconds (default 30)"
        )


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
        if args.command == "admin":
            return _admin(args)
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
        admin_bind=args.admin_bind,
        loader_pool_size=args.loader_pool_size,
        change_detection=args.change_detection,
        poll_interval_s=args.poll_interval,
        poll_max_calls_per_s=args.poll_max_calls_per_s,
    )
    return serve(options)


_STATUS_EXIT = {
    "OK": EXIT_OK,
    "ERROR": EXIT_USAGE,
    "NOTFOUND": EXIT_NOT_FOUND,
    "CONFLICT": 6,
    "BUSY": 7,
    "INTERNAL_ERR": EXIT_ERROR,
    "UNAVAILABLE": EXIT_UNAVAILABLE,
}


def _admin(args: argparse.Namespace) -> int:
    import idl
    from catalogd.admin_client import AdminClient, response_dict
    from subscriber.keys import TableName

    cmd = idl.catalog_service.TAdminCommand
    fields: dict[str, Any] = {}
    command = args.admin_command
    if command in ("invalidate", "refresh"):
        target = args.target
        if target and "." in target:
            name = TableName.parse(target)
            fields.update(db_name=name.db, tbl_name=name.table)
        elif target:
            if command == "refresh":
                raise InvalidRequestError(f"refresh needs DB.TABLE, got {target!r}")
            fields["db_name"] = target.lower()
        if args.sync:
            fields.update(sync=True, sync_timeout_ms=int(args.sync_timeout * 1000))
    if command == "refresh" and args.partition:
        fields["partitions"] = list(args.partition)
    code = {"status": cmd.STATUS, "invalidate": cmd.INVALIDATE, "refresh": cmd.REFRESH}[command]
    timeout = args.timeout + (args.sync_timeout if fields.get("sync") else 0)
    answer = response_dict(AdminClient(args.endpoint, timeout_s=timeout).call(code, **fields))
    if args.json:
        print(json.dumps(answer, indent=2, sort_keys=True))
    elif answer["status"] != "OK":
        print(f"catalogd: {answer['status']}: {answer['message']}", file=sys.stderr)
    elif command == "status":
        for key, value in answer["detail"].items():
            print(f"{key:<20} {json.dumps(value, sort_keys=True)}")
    else:
        line = f"{command} ok: version {answer['version']}"
        if fields.get("sync"):
            confirmed = answer["detail"].get("confirmed_subscribers", [])
            line += f", confirmed by {len(confirmed)} subscriber(s)"
            if answer["unconfirmed_subscribers"]:
                line += f", NOT confirmed: {', '.join(answer['unconfirmed_subscribers'])}"
        print(line)
    if answer["status"] == "OK" and answer["unconfirmed_subscribers"]:
        return 5
    return _STATUS_EXIT.get(answer["status"], EXIT_ERROR)


if __name__ == "__main__":
    sys.exit(main())
