"""``catalogd stats compute DB.TABLE ...``: the statistics job from the command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from catalogd.admin import cli as admin_cli
from subscriber.protocol.errors import InvalidRequestError
from subscriber.protocol.keys import TableName

EPILOG = """The job computes, with Spark (local[*] unless --master or spark.master says
otherwise), per table and partition: rows, files, bytes; per column: nulls,
distinct values (HyperLogLog, ~1.6% relative standard error), min/max,
average/max length. It writes them to HMS (column statistics, numRows/numFiles/
totalSize/COLUMN_STATS_ACCURATE, and Spark's spark.sql.statistics.* keys), then
asks catalogd to refresh the table and prints the version that carries them.

exit codes: as `catalogd admin` (0 ok, 2 bad input, 3 unreachable, 4 not found,
5 --sync not confirmed)"""


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``stats`` (with ``compute``) to ``commands``."""
    stats: argparse.ArgumentParser = commands.add_parser(
        "stats", help="compute table and column statistics with Spark"
    )
    sub = stats.add_subparsers(dest="stats_command", required=True, metavar="STATS_COMMAND")
    comp: argparse.ArgumentParser = sub.add_parser(
        "compute",
        help="compute statistics of a table, write them to HMS, publish them",
        description="Compute statistics of DB.TABLE with Spark and publish them.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    comp.add_argument("target", help="DB.TABLE")
    comp.add_argument(
        "--partition", action="append", default=[], metavar="k=v/k2=v2", help="repeatable"
    )
    comp.add_argument("--columns", metavar="a,b", help="only these columns (default: all)")
    comp.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    comp.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting (repeatable), e.g. spark.executor.memory=2g",
    )
    comp.add_argument(
        "--incremental", action="store_true", help="skip partitions whose files did not change"
    )
    comp.add_argument("--hms", metavar="thrift://HOST:PORT", help="HMS (default: from --config)")
    comp.add_argument("--config", metavar="FILE", help="catalogd TOML config (for hms.uris)")
    comp.add_argument(
        "--endpoint",
        default=admin_cli.DEFAULT_ENDPOINT,
        metavar="URI",
        help=f"catalogd admin address, tcp://HOST:PORT or HOST:PORT "
        f"(default {admin_cli.DEFAULT_ENDPOINT})",
    )
    comp.add_argument("--no-refresh", action="store_true", help="do not ask catalogd to refresh")
    comp.add_argument("--sync", action="store_true", help="wait until subscribers applied it")
    comp.add_argument("--sync-timeout", type=float, default=30.0, metavar="SECONDS")
    comp.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS")
    comp.add_argument("--json", action="store_true", help="print the outcome as JSON")
    return stats


def _hms_uri(args: argparse.Namespace) -> str:
    if args.hms:
        return str(args.hms)
    from catalogd.config import load_config

    config, _ = load_config(args.config, os.environ, {})
    if not config.hms.uris:
        raise InvalidRequestError("stats compute needs --hms thrift://HOST:PORT (or hms.uris)")
    return config.hms.uris[0]


def run(args: argparse.Namespace) -> int:
    """Run the job ``args`` describe; print the version; the exit code."""
    import idl
    from catalogd.admin.client import AdminClient, response_dict
    from catalogd.hms.client import MetastoreClient
    from catalogd.stats.job import run_job, spark_session
    from subscriber.endpoints import parse_endpoint

    name = TableName.parse(args.target)
    endpoint = parse_endpoint(args.endpoint)  # before Spark starts: a typo costs nothing
    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    uri = _hms_uri(args)
    started = time.monotonic()
    conf = dict(item.split("=", 1) for item in args.conf if "=" in item)
    if len(conf) != len(args.conf):
        raise InvalidRequestError("--conf takes KEY=VALUE")
    # A person at a terminal sees each phase and Spark's own stage progress bar.
    tty = sys.stderr.isatty()
    _phase(tty, f"starting Spark ({args.master or 'spark.master or local[*]'})")
    spark = spark_session(args.master, uri, conf=conf, console_progress=tty)
    try:
        _phase(tty, f"computing statistics of {name} ({time.monotonic() - started:.1f}s so far)")
        with MetastoreClient(uri) as client:
            report = run_job(
                spark,
                client,
                name.db,
                name.table,
                partitions=args.partition,
                columns=columns,
                incremental=args.incremental,
            )
    finally:
        spark.stop()
    out: dict[str, Any] = {
        "table": str(name),
        "rows": report.result.table_level.rows,
        "files": report.result.table_level.files,
        "bytes": report.result.table_level.bytes,
        "partitions": len(report.result.partitions),
        "partitions_skipped": report.partitions_skipped,
        "columns": sorted(report.result.table_level.columns),
        "seconds": round(time.monotonic() - started, 3),
        "version": None,
    }
    code = 0
    if not args.no_refresh:
        fields: dict[str, Any] = {"db_name": name.db, "tbl_name": name.table}
        if args.sync:
            fields.update(sync=True, sync_timeout_ms=int(args.sync_timeout * 1000))
        timeout = args.timeout + (args.sync_timeout if args.sync else 0)
        _phase(tty, f"publishing through catalogd at {endpoint}")
        admin = AdminClient(endpoint, timeout_s=timeout)
        answer = response_dict(admin.call(idl.catalog_service.TAdminCommand.REFRESH, **fields))
        out["version"] = answer["version"]
        out["unconfirmed_subscribers"] = answer["unconfirmed_subscribers"]
        if answer["status"] != "OK":
            print(f"catalogd: {answer['status']}: {answer['message']}", file=sys.stderr)
            return admin_cli.STATUS_EXIT.get(answer["status"], 1)
        if answer["unconfirmed_subscribers"]:
            code = admin_cli.EXIT_UNCONFIRMED
    if args.json:
        print(json.dumps(out, sort_keys=True))
    else:
        print(
            f"stats compute ok: version {out['version']}, {out['rows']} rows, "
            f"{out['files']} files, {out['bytes']} bytes, {len(out['columns'])} columns, "
            f"{out['partitions']} partitions ({out['partitions_skipped']} unchanged) "
            f"in {out['seconds']:.1f}s"
        )
    return code


def _phase(tty: bool, text: str) -> None:
    """One line on stderr (a terminal only: stdout is the result, logs stay quiet)."""
    if tty:
        print(f"stats: {text}", file=sys.stderr, flush=True)
