"""``catalogd stats compute``: compute, write to HMS, have catalogd publish.

:func:`run_job` is the whole job over a given Spark session and HMS client
(tests call it with theirs); :func:`spark_session` builds the session the CLI
uses (``local[*]`` unless ``--master`` or Spark's own configuration says
otherwise).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TypeVar

from catalogd.files.spark_listing import SparkLister
from catalogd.hms.client import MetastoreClient
from catalogd.stats import compute, footers, publish
from catalogd.stats.results import ColumnResult, PartitionResult, TableResult
from subscriber.protocol.errors import InvalidRequestError
from subscriber.protocol.files import FileInfo
from subscriber.protocol.keys import make_partition_name, parse_partition_name

T = TypeVar("T")
# Below this size (as HMS last knew it) the footers are not read: beside a short
# scan, reading them and the early HMS writes only compete with it for the cores
# (1M rows, 12 MB: 0.80x of ANALYZE's speed with them and without; 10M rows,
# 101 MB: 1.02-1.31x with them, the previous code 0.80x; bench/stats_bench.py).
FOOTERS_MIN_BYTES = 64 << 20


@dataclass(frozen=True)
class JobReport:
    """What one run did: the figures and the HMS calls it took."""

    result: TableResult
    hms_calls: int
    partitions_skipped: int = 0
    scan_s: float = 0.0  # the Spark aggregation
    write_s: float = 0.0  # the HMS writes
    list_s: float = 0.0  # listing the partitions' files
    footer_s: float = 0.0  # reading their Parquet footers (while the scan runs)


def _specs(table: Any, partitions: Sequence[str]) -> list[dict[str, str]]:
    keys = [k.name.lower() for k in table.partitionKeys or []]
    specs = []
    for text in partitions:
        pairs = parse_partition_name(text)
        if [k.lower() for k, _ in pairs] != keys:
            raise InvalidRequestError(
                f"partition spec {text!r} must name {'/'.join(f'{k}=V' for k in keys)}"
            )
        specs.append({k.lower(): v for k, v in pairs})
    return specs


def _fingerprint(files: int, size: int) -> str:
    return f"{files}:{size}"


def run_job(
    spark: Any,
    client: MetastoreClient,
    db: str,
    name: str,
    *,
    partitions: Sequence[str] = (),
    columns: Sequence[str] | None = None,
    incremental: bool = False,
    footers_min_bytes: int = FOOTERS_MIN_BYTES,
) -> JobReport:
    """Compute the statistics of ``db.name`` (only ``partitions`` when given) and
    write them to HMS.

    With ``incremental``, partitions whose file count and bytes still equal
    what their statistics were computed over (``numFiles``/``totalSize``) are
    skipped. A full run starts the Spark aggregation first and reads HMS, lists
    the files and reads their Parquet footers meanwhile (:mod:`.footers`: what
    they give exactly, the aggregation leaves out), unless HMS knows the table
    as smaller than ``footers_min_bytes``. Raises
    :class:`InvalidRequestError` for a malformed spec, :class:`NotFoundError` for
    an unknown table, the client's errors otherwise.
    """
    table = client.get_table(db, name)
    keys = [k.name for k in table.partitionKeys or []]
    specs = _specs(table, partitions)
    parquet = _is_parquet(table) and _big_enough(table, footers_min_bytes)
    writing: Future[dict[str, publish.Basic]] | None = None
    # A full run has nothing to decide before the scan: Spark aggregates while HMS
    # is read, the files are listed and their footers read (all wait on others).
    early = None if (incremental or specs) else _start_scan(spark, db, name, keys, columns, parquet)
    try:
        if keys:
            listed = _list_partitions(spark, client, table, specs, incremental)
        else:
            started = time.perf_counter()
            whole = _list_files(spark, [table.sd.location])[0]
            listed = _Listing([], {"": _sizes(whole)}, [], seconds=time.perf_counter() - started)
            listed.paths[""] = _paths(table.sd.location, whole)
        listing, hms_parts, skipped = listed.figures, listed.parts, listed.skipped
        if keys and incremental and not listed.todo:
            empty = TableResult(db, name, tuple(keys), PartitionResult("", (), 0), ())
            return JobReport(empty, 0, skipped, list_s=listed.seconds)
        if keys and (incremental or specs):
            specs = listed.todo
        if early is None:
            early = _start_scan(spark, db, name, keys, columns, parquet, specs)
        plan, scanning = early
        chosen = {make_partition_name([k.lower() for k in keys], list(s.values())) for s in specs}
        footer_s = 0.0
        figures = None
        if plan.deferred:
            started = time.perf_counter()
            data_files = {n: p for n, p in listed.paths.items() if not specs or n in chosen}
            figures = footers.read(spark, data_files, list(plan.deferred.values()))
            footer_s = time.perf_counter() - started
        if keys and figures is not None:
            # The partitions' basic statistics are known (rows from the footers):
            # written while the scan runs; the scan confirms the row counts.
            basic = {n: (f.rows, *listing[n]) for n, f in figures.items()}
            writing = _in_background(
                "stats-basic", publish.write_basic, client.uri, table, hms_parts, basic
            )
        part_rows, scan_started = scanning.result()
        result = compute.finish(spark, plan, part_rows, figures)
        scan_s = time.perf_counter() - scan_started
    finally:
        if early is not None and not early[1].cancel():
            wait([early[1]])  # HMS failed first: leave no Spark job running behind
        if writing is not None:
            wait([writing])  # nor HMS writes
    written = writing.result() if writing is not None else None

    if keys:
        found = {p.name: p for p in result.partitions}
        parts = []
        for part_name, (files, size) in listing.items():
            if specs and part_name not in chosen:
                continue
            base = found.get(part_name) or _empty(part_name, result)
            parts.append(dataclasses.replace(base, files=files, bytes=size))
        total_files = sum(f for f, _ in listing.values())
        total_bytes = sum(b for _, b in listing.values())
        result = dataclasses.replace(
            result,
            partitions=tuple(parts),
            table_level=dataclasses.replace(
                result.table_level, files=total_files, bytes=total_bytes
            ),
        )
        if specs:
            # Only some partitions were read: the table-level counts are sums over
            # every partition's (now current) numRows, numFiles and totalSize.
            rows, files, size = _table_totals(client, db, name, result)
            result = dataclasses.replace(
                result,
                table_level=dataclasses.replace(
                    result.table_level, rows=rows, files=files, bytes=size
                ),
            )
    else:
        files, size = listing[""]
        result = dataclasses.replace(
            result, table_level=dataclasses.replace(result.table_level, files=files, bytes=size)
        )
    started = time.perf_counter()
    calls = publish.write(
        client,
        result,
        table_columns=not specs,
        table=table,
        partitions=hms_parts,
        written=written,
    )
    write_s = time.perf_counter() - started
    calls += len(written or ())
    return JobReport(result, calls, skipped, scan_s, write_s, listed.seconds, footer_s)


@dataclass
class _Listing:
    """The partitions a run looked at: their HMS objects, (files, bytes) by
    partition name ("" for an unpartitioned table), the specs still to compute."""

    parts: list[Any]
    figures: dict[str, tuple[int, int]]
    todo: list[dict[str, str]]
    skipped: int = 0
    seconds: float = 0.0
    paths: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # the data files


def _list_partitions(
    spark: Any, client: MetastoreClient, table: Any, specs: list[dict[str, str]], incremental: bool
) -> _Listing:
    """Read the partitions (``specs``, else all), list their files and, with
    ``incremental``, keep in ``todo`` only those whose files changed since their
    statistics were computed (``numFiles``/``totalSize``)."""
    db, name = table.dbName, table.tableName
    keys = [k.name.lower() for k in table.partitionKeys]
    names = [make_partition_name(keys, list(s.values())) for s in specs]
    if names:
        parts = client.get_partitions_by_names(db, name, names)
    else:
        parts = list(client.iter_partitions(db, name))
    started = time.perf_counter()
    listed = _list_files(spark, [part.sd.location for part in parts])
    listing = _Listing(parts, {}, [], seconds=time.perf_counter() - started)
    for part, files in zip(parts, listed, strict=True):
        part_name = make_partition_name(keys, list(part.values))
        listing.figures[part_name] = figures = _sizes(files)
        listing.paths[part_name] = _paths(part.sd.location, files)
        params = part.parameters or {}
        old = _fingerprint(int(params.get("numFiles", -1)), int(params.get("totalSize", -1)))
        if incremental and "numRows" in params and old == _fingerprint(*figures):
            listing.skipped += 1
            continue
        listing.todo.append(dict(zip(keys, part.values, strict=True)))
    return listing


def _start_scan(
    spark: Any,
    db: str,
    name: str,
    keys: Sequence[str],
    columns: Sequence[str] | None,
    parquet: bool,
    specs: Sequence[dict[str, str]] = (),
) -> tuple[compute.Plan, Future[tuple[list[dict[str, Any]], float]]]:
    """Plan the aggregation (here) and run it on a thread of its own; the plan
    and the future of its rows and start time."""
    started = time.perf_counter()
    plan = compute.plan(
        spark, db, name, keys, partition_filter=specs, columns=columns, footers=parquet
    )
    return plan, _in_background("stats-scan", lambda: (compute.scan(plan), started))


def _in_background(name: str, fn: Callable[..., T], *args: Any) -> Future[T]:
    """``fn(*args)`` on a thread of its own (ending with the call)."""
    pool = ThreadPoolExecutor(1, thread_name_prefix=name)
    try:
        return pool.submit(fn, *args)
    finally:
        pool.shutdown(wait=False)


def _is_parquet(table: Any) -> bool:
    """Whether the table's files are Parquet (by Spark's provider, else Hive's serde
    or input format). A partition stored otherwise makes the footers unreadable:
    the job then aggregates their figures over the rows."""
    provider = (table.parameters or {}).get("spark.sql.sources.provider")
    if provider:
        return bool(provider.lower() == "parquet")
    sd = table.sd
    serde = (sd.serdeInfo.serializationLib if sd.serdeInfo else None) or ""
    return "parquet" in serde.lower() or "parquet" in (sd.inputFormat or "").lower()


def _big_enough(table: Any, min_bytes: int) -> bool:
    """Whether the table is worth reading footers for: its ``totalSize`` (or
    Spark's) is at least ``min_bytes``, or unknown."""
    params = table.parameters or {}
    size = params.get("totalSize") or params.get("spark.sql.statistics.totalSize") or ""
    return not size.isdigit() or int(size) >= min_bytes


def _list_files(spark: Any, locations: Sequence[str]) -> list[list[FileInfo]]:
    """The visible files under each location, listed in one bulk call through
    Hadoop's ``FileSystem`` (any scheme Spark reads): in the driver's JVM, or a
    Spark job above Spark's own parallel-listing threshold
    (``spark.sql.sources.parallelPartitionDiscovery.threshold``, 32)."""
    threshold = int(spark.conf.get("spark.sql.sources.parallelPartitionDiscovery.threshold", "32"))
    return SparkLister(spark)(locations, distributed=len(locations) > threshold)


def _sizes(files: Sequence[FileInfo]) -> tuple[int, int]:
    """(file count, bytes)."""
    return len(files), sum(f.length for f in files)


def _paths(location: str, files: Sequence[FileInfo]) -> list[str]:
    """The files' full paths: the location they were listed under, then theirs."""
    base = location.rstrip("/")
    return [f"{base}/{f.relative_path}" for f in files]


def _empty(part_name: str, result: TableResult) -> PartitionResult:
    values = tuple(v for _, v in parse_partition_name(part_name))
    columns = {
        n: ColumnResult(
            name=n,
            kind=c.kind,
            rows=0,
            nulls=0,
            distinct=0,
            total_len=0 if c.total_len is not None else None,
            max_len=0 if c.max_len is not None else None,
        )
        for n, c in result.table_level.columns.items()
    }
    return PartitionResult(name=part_name, values=values, rows=0, columns=columns)


def _table_totals(
    client: MetastoreClient, db: str, name: str, result: TableResult
) -> tuple[int, int, int]:
    """(rows, files, bytes) of the whole table: fresh figures for the partitions
    just computed, HMS's parameters for the others."""
    fresh = {p.name: (p.rows, p.files, p.bytes) for p in result.partitions}
    keys = list(result.partition_columns)
    totals = [0, 0, 0]
    for part in client.iter_partitions(db, name):
        part_name = make_partition_name([k.lower() for k in keys], list(part.values))
        params = part.parameters or {}
        figures = fresh.get(part_name) or tuple(
            int(v) if (v := params.get(k, "0")).isdigit() else 0
            for k in ("numRows", "numFiles", "totalSize")
        )
        for i, value in enumerate(figures):
            totals[i] += value
    return totals[0], totals[1], totals[2]


def spark_session(
    master: str | None,
    hms_uri: str,
    *,
    conf: dict[str, str] | None = None,
    app_name: str = "catalogd-stats",
    console_progress: bool = False,
) -> Any:
    """A Hive-enabled Spark session on ``master`` (None: ``spark.master`` from
    Spark's own configuration, else ``local[*]``) talking to ``hms_uri``, with
    the extra settings ``conf``; ``console_progress``: Spark's own stage progress
    bar on the terminal (for a person waiting on ``catalogd stats compute``)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).config(
        "spark.hadoop.hive.metastore.uris", hms_uri
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    if master:
        builder = builder.master(master)
    else:
        from pyspark import SparkConf

        if not SparkConf().contains("spark.master"):
            builder = builder.master("local[*]")
    progress = "true" if console_progress else "false"
    return (
        builder.config("spark.ui.showConsoleProgress", progress).enableHiveSupport().getOrCreate()
    )
