"""The ``catalogd`` command line.

Sub-commands: ``serve``, ``dump``, ``config show`` here; ``admin ...`` in
:mod:`catalogd.admin.cli`; ``keys generate`` in :mod:`catalogd.security.cli`.

Exit codes: 0 success; 1 an unexpected error; 2 bad usage or input; 3 a
service (HMS, catalogd) unreachable; 4 an object not found. ``admin`` adds
5, 6 and 7 (see :mod:`catalogd.admin.cli`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from catalogd.admin import cli as admin_cli
from catalogd.security import cli as keys_cli
from catalogd.stats import cli as stats_cli
from subscriber.protocol.errors import (
    CatalogError,
    InvalidRequestError,
    NotFoundError,
    UnavailableError,
)

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_NOT_FOUND = 0, 1, 2, 3, 4

EPILOG = """exit codes: 0 ok, 1 error, 2 bad usage or input, 3 HMS or catalogd unreachable,
4 not found (admin adds 5-7: see catalogd admin --help); serve --ha: 75 this node
lost the HA lease and stopped (restart it: it comes back as the standby). With no
--hms, catalogd starts an embedded Hive Metastore (Derby, from the pyspark jars;
needs Java 17) in DATA_DIR/hms."""


def build_parser() -> argparse.ArgumentParser:
    """The ``catalogd`` parser: serve, dump, config show; admin (catalogd.admin.cli)."""
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
    dump.add_argument(
        "--hms-db",
        metavar="URL",
        help="read the HMS backing database directly instead (a SQLAlchemy URL such as "
        "postgresql+psycopg://reader@host/metastore; HMS 2.3, 3.1 or 4.0 schema)",
    )
    dump.add_argument(
        "--data-dir", type=Path, default=Path("data"), metavar="DIR", help="for the embedded HMS"
    )
    dump.add_argument("--json", action="store_true", help="one JSON object per catalog object")
    dump.add_argument(
        "--progress-interval",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="progress (tables done, rate, ETA) on stderr after this long, then on a "
        "terminal one line redrawn, elsewhere a line every SECONDS (default 2)",
    )

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
    admin_cli.add_parser(commands)
    stats_cli.add_parser(commands)
    keys_cli.add_parser(commands)
    return parser


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
        if key.kind is bool:
            parser.add_argument(
                key.flag,
                dest=key.name,
                action="store_const",
                const=True,
                default=None,
                help=f"{key.name}: set it to true",
            )
            continue
        parser.add_argument(
            key.flag,
            dest=key.name,
            default=None,
            metavar=key.metavar,
            help=f"{key.name}: {key.expected}",
        )


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    from catalogd.config import KEYS

    flags = {key.name: getattr(args, key.name, None) for key in KEYS}
    flags["log.level"] = args.log_level
    return flags


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
            return admin_cli.run(args)
        if args.command == "stats":
            return stats_cli.run(args)
        if args.command == "keys":
            return keys_cli.run(args)
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
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] in ("catalogd", "subscriber", "idl"):
            raise
        print(_missing_dependency(args.command, exc.name), file=sys.stderr)
        return EXIT_ERROR
    return EXIT_USAGE


def _missing_dependency(command: str, module: str) -> str:
    """What to install when ``catalogd COMMAND`` lacks a daemon dependency (a
    subscriber-only install: ``pip install --no-deps catalogd``)."""
    return (
        f"catalogd: `catalogd {command}` needs the daemon's dependencies and {module} is "
        "not installed (a subscriber-only install?): pip install catalogd (not --no-deps); "
        "add the [spark] extra for the embedded Hive Metastore"
    )


def _dump(args: argparse.Namespace) -> int:
    from catalogd import sources as loader
    from catalogd.conversion import objects as convert
    from catalogd.core.catalog import Catalog
    from catalogd.hms.client import MetastoreClient
    from catalogd.hms.connection import open_metastore
    from catalogd.loading.meter import ProgressMeter
    from subscriber.protocol.keys import object_type_of

    with ExitStack() as stack:
        if args.hms_db:
            from catalogd.sources.sql import SqlSource

            source: loader.MetastoreSource = SqlSource(args.hms_db)
            stack.callback(source.close)
            uri = source.address
        else:
            if not args.hms:  # the embedded HMS: one catalogd per data directory
                from catalogd.data_dir import DataDirLock

                stack.enter_context(DataDirLock(args.data_dir))
            uri = open_metastore(stack, (args.hms,) if args.hms else (), args.data_dir)
            source = loader.ThriftSource(stack.enter_context(MetastoreClient(uri)))
        meter = ProgressMeter(
            "loading", "tables", sys.stderr, interval_s=max(0.0, args.progress_interval)
        )
        objects, stats = loader.load_catalog(
            source,
            progress=lambda done, total, so_far: meter.update(
                done, total, f"{so_far.partitions:,} partitions"
            ),
        )
        meter.finish()
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


if __name__ == "__main__":
    sys.exit(main())
