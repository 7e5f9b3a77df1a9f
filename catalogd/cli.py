"""The ``catalogd`` command line.

Exit codes: 0 success; 1 an unexpected error; 2 bad usage or input; 3 a
service (HMS, catalogd) unreachable; 4 an object not found.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from catalogd.admin.endpoint import DEFAULT_ADMIN_PORT
from subscriber.protocol.errors import (
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
    parser.add_argument(
        "--log-level", default=None, help="DEBUG, INFO, WARNING, ERROR (default INFO)"
    )
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
        "connect to --bind and learn the publisher address in the handshake. Settings "
        "come from built-in defaults < the TOML file < CATALOGD_* environment variables "
        "< these flags (see `catalogd config show`).",
    )
    _config_flags(serve)
    serve.add_argument(
        "--demo", action="store_true", help="create a small demo warehouse in HMS first"
    )
    config = commands.add_parser("config", help="show the effective configuration")
    config_commands = config.add_subparsers(dest="config_command", required=True, metavar="CMD")
    show = config_commands.add_parser(
        "show", help="print every setting and where its value came from"
    )
    _config_flags(show)
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
    pool = sub.add_parser("cache-pool", help="manage cache pools (add, alter, remove, list)")
    pool_sub = pool.add_subparsers(dest="pool_command", required=True, metavar="ACTION")
    for action in ("add", "alter"):
        parser = pool_sub.add_parser(action, help=f"{action} a cache pool")
        parser.add_argument("name")
        parser.add_argument("--owner", help="owner name")
        limit = parser.add_mutually_exclusive_group()
        limit.add_argument("--limit", type=int, metavar="BYTES", help="size limit in bytes")
        if action == "alter":
            limit.add_argument("--no-limit", action="store_true", help="remove the limit")
    pool_sub.add_parser("remove", help="remove an unused cache pool").add_argument("name")
    pool_sub.add_parser("list", help="pools and what is cached in them")
    for action in ("cache", "uncache"):
        parser = sub.add_parser(action, help=f"{action} a table or partitions")
        parser.add_argument("target", help="DB.TABLE")
        parser.add_argument(
            "--partition", action="append", default=[], metavar="k=v/k2=v2", help="repeatable"
        )
        if action == "cache":
            parser.add_argument("--pool", required=True, help="the cache pool")
    audit = sub.add_parser("audit", help="the admin audit log, newest first")
    audit.add_argument("--limit", type=int, default=20, help="records to show (default 20)")
    for command in (invalidate, refresh):
        command.add_argument(
            "--sync", action="store_true", help="wait until live subscribers applied it"
        )
        command.add_argument(
            "--sync-timeout", type=float, default=30.0, help="seconds (default 30)"
        )


def _config_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per configuration key (catalogd.config.KEYS), all defaulting to unset."""
    from catalogd.config import KEYS

    parser.add_argument(
        "--config",
        metavar="FILE",
        help="TOML configuration file (default /etc/catalogd/catalogd.toml when present)",
    )
    for key in KEYS:
        if key.flag == "--log-level":
            continue  # a global option, see catalogd --help
        parser.add_argument(
            key.flag,
            dest=key.name,
            default=None,
            metavar="VALUE",
            help=f"{key.name}: {key.expected}",
        )


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    from catalogd.config import KEYS

    flags = {key.name: getattr(args, key.name, None) for key in KEYS}
    flags["log.level"] = args.log_level
    return flags


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from catalogd import logs

    logs.configure((args.log_level or "INFO").upper(), "text")
    try:
        if args.command == "config":
            return _config_show(args)
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
    from catalogd.core.catalog import Catalog
    from catalogd.daemon import open_metastore
    from catalogd.metastore import convert
    from catalogd.metastore import source as loader
    from catalogd.metastore.client import MetastoreClient
    from subscriber.protocol.keys import object_type_of

    with ExitStack() as stack:
        uri = open_metastore(stack, (args.hms,) if args.hms else (), args.data_dir)
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
    import os

    from catalogd import logs
    from catalogd.config import load_config
    from catalogd.daemon import config_loader, serve

    flags = _flags(args)
    config, _ = load_config(args.config, os.environ, flags)
    # Under journald, the journal adds its own timestamps.
    logs.configure(
        config.log.level, config.log.format, timestamps="JOURNAL_STREAM" not in os.environ
    )
    return serve(
        config,
        environ=os.environ,
        reload_config=config_loader(args.config, os.environ, flags),
        demo=args.demo,
    )


def _config_show(args: argparse.Namespace) -> int:
    import os

    from catalogd.config import load_config, render

    config, sources = load_config(args.config, os.environ, _flags(args))
    sys.stdout.write(render(config, sources))
    return EXIT_OK


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
    from catalogd.admin.client import AdminClient, response_dict
    from subscriber.protocol.keys import TableName

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
    if command in ("cache", "uncache"):
        name = TableName.parse(args.target)
        fields.update(db_name=name.db, tbl_name=name.table, partitions=args.partition or None)
        if command == "cache":
            fields["options"] = {"pool": args.pool}
    if command == "cache-pool":
        command = f"cache-pool {args.pool_command}"
        if args.pool_command != "list":
            options = {"pool": args.name}
            if getattr(args, "owner", None) is not None:
                options["owner"] = args.owner
            if getattr(args, "limit", None) is not None:
                options["limit"] = str(args.limit)
            if getattr(args, "no_limit", False):
                options["limit"] = ""
            fields["options"] = options
    if command == "audit":
        fields["options"] = {"limit": str(args.limit)}
    code = {
        "status": cmd.STATUS,
        "invalidate": cmd.INVALIDATE,
        "refresh": cmd.REFRESH,
        "cache": cmd.CACHE,
        "uncache": cmd.UNCACHE,
        "audit": cmd.AUDIT,
        "cache-pool add": cmd.CACHE_POOL_ADD,
        "cache-pool alter": cmd.CACHE_POOL_ALTER,
        "cache-pool remove": cmd.CACHE_POOL_REMOVE,
        "cache-pool list": cmd.CACHE_POOL_LIST,
    }[command]
    timeout = args.timeout + (args.sync_timeout if fields.get("sync") else 0)
    answer = response_dict(AdminClient(args.endpoint, timeout_s=timeout).call(code, **fields))
    if args.json:
        print(json.dumps(answer, indent=2, sort_keys=True))
    elif answer["status"] != "OK":
        print(f"catalogd: {answer['status']}: {answer['message']}", file=sys.stderr)
    elif command == "status":
        for key, value in answer["detail"].items():
            print(f"{key:<20} {json.dumps(value, sort_keys=True)}")
    elif command == "audit":
        for r in answer["detail"]["records"]:
            args_text = json.dumps(r["args"], sort_keys=True)
            print(
                f"{r['at']} {r['requester'] or '-'} {r['command']} {args_text} -> {r['outcome']}"
                f"{'' if r['version'] is None else ' @' + str(r['version'])}"
            )
    elif command == "cache-pool list":
        for p in answer["detail"]["pools"]:
            limit = "unlimited" if p["limit_bytes"] is None else f"{p['limit_bytes']} bytes"
            cached = [m for m in answer["detail"]["cached"] if m["pool"] == p["name"]]
            print(f"{p['name']}  owner={p['owner'] or '-'}  limit={limit}  cached={len(cached)}")
            for m in cached:
                print(
                    f"    {m['db']}.{m['table']}" + (f" {m['partition']}" if m["partition"] else "")
                )
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
