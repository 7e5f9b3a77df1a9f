"""``catalogd admin ...``: the sub-command parser, the request it sends, the exit code.

:func:`add_parser` adds ``admin`` to the ``catalogd`` parser; :func:`run` turns
the parsed arguments into one ``TAdminRequest`` (:func:`request_fields`), sends it
with :class:`~catalogd.admin.client.AdminClient` and prints the answer, as JSON
(``--json``) or as short text (:mod:`catalogd.admin.output`: pure functions of the
answer's detail).

The options shared by every admin command (``--endpoint``, ``--json``,
``--timeout``) are accepted before or after the command, as in git:
``catalogd admin --json status`` and ``catalogd admin status --json`` are the
same; given in both places, the later one wins.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from catalogd.addresses import DEFAULT_ADMIN_PORT
from catalogd.admin.output import format_audit, format_pools, format_status
from subscriber.protocol.errors import InvalidRequestError
from subscriber.protocol.keys import TableName

DEFAULT_ENDPOINT = f"tcp://127.0.0.1:{DEFAULT_ADMIN_PORT}"
DEFAULT_TIMEOUT_S = 60.0

# Exit codes 0-4 mean what they mean for every catalogd command (catalogd.cli);
# 5-7 are the admin commands' own.
EXIT_UNCONFIRMED, EXIT_CONFLICT, EXIT_BUSY = 5, 6, 7
STATUS_EXIT = {
    "OK": 0,
    "ERROR": 2,
    "NOTFOUND": 4,
    "CONFLICT": EXIT_CONFLICT,
    "BUSY": EXIT_BUSY,
    "INTERNAL_ERR": 1,
    "UNAVAILABLE": 3,
}

EPILOG = """Options --endpoint, --json, --timeout, --key and --server-key go
before or after ADMIN_COMMAND (`catalogd admin status --json` = `catalogd admin --json status`).
With HA, --endpoint may name either node: a standby answers with the active's
admin address and the command is sent there.

exit codes: 0 ok, 1 internal error, 2 bad input, 3 catalogd or HMS unreachable,
4 not found, 5 --sync: some subscribers did not confirm, 6 conflict, 7 busy"""


def _shared_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """``--endpoint``, ``--json``, ``--timeout``.

    On ``admin`` itself they carry the defaults; on each command they default
    to :data:`argparse.SUPPRESS`, so a value given after the command overrides
    one given before it, and an absent one leaves it alone.
    """

    def default(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument(
        "--endpoint",
        default=default(DEFAULT_ENDPOINT),
        metavar="URI",
        help=f"catalogd admin address, tcp://HOST:PORT or HOST:PORT (default {DEFAULT_ENDPOINT})",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="print the full answer as JSON",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=default(DEFAULT_TIMEOUT_S),
        metavar="SECONDS",
        help=f"seconds to wait for an answer (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--key",
        default=default(None),
        metavar="FILE",
        help="your admin secret CURVE key file (NAME.key_secret), when catalogd uses keys",
    )
    parser.add_argument(
        "--server-key",
        default=default(None),
        metavar="FILE",
        help="catalogd's public CURVE key file (server.key); give it with --key",
    )


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``admin`` and its commands to ``commands`` (a ``add_subparsers()`` result)."""
    shared = argparse.ArgumentParser(add_help=False)
    _shared_options(shared, defaults=False)
    admin: argparse.ArgumentParser = commands.add_parser(
        "admin",
        help="send an admin command to a running catalogd",
        description="Admin commands. Mutating commands print the catalog version at which\n"
        "their effect is published; --sync waits until live subscribers applied it.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _shared_options(admin, defaults=True)
    sub = admin.add_subparsers(dest="admin_command", required=True, metavar="ADMIN_COMMAND")

    def command(parent: Any, name: str, help: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = parent.add_parser(
            name, help=help, description=help[0].upper() + help[1:] + ".", parents=[shared]
        )
        return parser

    command(sub, "status", "service id, version, object counts, loading, subscribers")
    invalidate = command(
        sub, "invalidate", "drop cached metadata (all, DB or DB.TABLE); reload lazily"
    )
    invalidate.add_argument("target", nargs="?", help="DB or DB.TABLE (default: everything)")
    refresh = command(sub, "refresh", "reload a table (or partitions) now")
    refresh.add_argument("target", help="DB.TABLE")
    refresh.add_argument(
        "--partition",
        action="append",
        default=[],
        metavar="k=v/k2=v2",
        help="only this partition (repeatable); one in HMS but not in the cache is added, "
        "one gone from HMS is removed, one in neither is NOTFOUND (and nothing changes)",
    )
    refresh.add_argument(
        "--files",
        action="store_true",
        help="carry file metadata (path, length, mtime per file) for this table from now on",
    )
    pool = command(sub, "cache-pool", "manage cache pools (add, alter, remove, list)")
    pool_sub = pool.add_subparsers(dest="pool_command", required=True, metavar="ACTION")
    for action in ("add", "alter"):
        parser = command(pool_sub, action, f"{action} a cache pool")
        parser.add_argument("name")
        parser.add_argument("--owner", help="owner name")
        limit = parser.add_mutually_exclusive_group()
        limit.add_argument("--limit", type=int, metavar="BYTES", help="size limit in bytes")
        if action == "alter":
            limit.add_argument("--no-limit", action="store_true", help="remove the limit")
    command(pool_sub, "remove", "remove an unused cache pool").add_argument("name")
    command(pool_sub, "list", "pools and what is cached in them")
    for action in ("cache", "uncache"):
        parser = command(sub, action, f"{action} a table or partitions")
        parser.add_argument("target", help="DB.TABLE")
        parser.add_argument(
            "--partition", action="append", default=[], metavar="k=v/k2=v2", help="repeatable"
        )
        if action == "cache":
            parser.add_argument("--pool", required=True, help="the cache pool")
    audit = command(sub, "audit", "the admin audit log, newest first")
    audit.add_argument("--limit", type=int, default=20, help="records to show (default 20)")
    for parser in (invalidate, refresh):
        parser.add_argument(
            "--sync", action="store_true", help="wait until live subscribers applied it"
        )
        parser.add_argument(
            "--sync-timeout",
            type=float,
            default=30.0,
            metavar="SECONDS",
            help="seconds to wait for subscribers (default 30, at most 120; added to --timeout)",
        )
    return admin


def request_fields(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The command name (``"cache-pool add"``...) and the ``TAdminRequest`` fields.

    Raises:
        InvalidRequestError: a target that is not DB.TABLE where one is needed.
    """
    fields: dict[str, Any] = {}
    command: str = args.admin_command
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
    if command == "refresh" and args.files:
        fields["options"] = {"files": "true"}
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
    return command, fields


def run(args: argparse.Namespace) -> int:
    """Send the command ``args`` describe, print the answer; the exit code.

    Raises:
        InvalidRequestError: bad input, before anything is sent.
        UnavailableError: no answer within ``--timeout``.
    """
    import idl
    from catalogd.admin.client import AdminClient, response_dict
    from subscriber.curve import client_keys
    from subscriber.endpoints import parse_endpoint

    cmd = idl.catalog_service.TAdminCommand
    command, fields = request_fields(args)
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
    if (args.key is None) != (args.server_key is None):
        raise InvalidRequestError("give --key and --server-key together")
    endpoint = parse_endpoint(args.endpoint)  # HOST:PORT means tcp://HOST:PORT
    if args.key is None:
        client = AdminClient(endpoint, timeout_s=timeout)
    else:
        keys = client_keys(args.server_key, args.key)
        client = AdminClient(endpoint, timeout_s=timeout, keys=keys)
    answer = response_dict(client.call(code, **fields))
    if args.json:
        print(json.dumps(answer, indent=2, sort_keys=True))
    elif answer["status"] != "OK":
        print(f"catalogd: {answer['status']}: {answer['message']}", file=sys.stderr)
    elif command == "status":
        print(format_status(answer["detail"]))
    elif command == "audit":
        _print_lines(format_audit(answer["detail"]))
    elif command == "cache-pool list":
        _print_lines(format_pools(answer["detail"]) or ["no cache pools"])
    else:
        line = f"{command} ok: version {answer['version']}"
        if fields.get("sync"):
            confirmed = answer["detail"].get("confirmed_subscribers", [])
            line += f", confirmed by {len(confirmed)} subscriber(s)"
            if answer["unconfirmed_subscribers"]:
                line += f", NOT confirmed: {', '.join(answer['unconfirmed_subscribers'])}"
        print(line)
    if answer["status"] == "OK" and answer["unconfirmed_subscribers"]:
        return EXIT_UNCONFIRMED
    return STATUS_EXIT.get(answer["status"], 1)


def _print_lines(lines: Sequence[str]) -> None:
    if lines:
        print("\n".join(lines))
