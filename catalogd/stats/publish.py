"""Statistics computed by the job, written to HMS where Hive, Impala and Spark read them.

Per table and per partition, three things are written:

* HMS column statistics (``update_table_column_statistics`` /
  ``update_partition_column_statistics``): what Hive and Impala read
  (``TAB_COL_STATS``/``PART_COL_STATS``); HMS 2.3 then records the columns in
  ``COLUMN_STATS_ACCURATE``;
* the basic-stats parameters ``numRows``, ``numFiles``, ``totalSize`` and
  ``COLUMN_STATS_ACCURATE`` (``alter_table`` / ``alter_partition``), with
  ``DO_NOT_UPDATE_STATS=true``, which HMS consumes (removes) and which stops
  it from recomputing the quick stats and marking them inaccurate (the job
  may write a partition's basic statistics first, :func:`write_basic`, and its
  column statistics later: HMS then adds each column to
  ``COLUMN_STATS_ACCURATE``);
* Spark's own keys (``spark.sql.statistics.numRows``, ``.totalSize`` and
  ``.colStats.<col>.<key>``, ``version`` 2): Spark reads *only* these
  (``HiveExternalCatalog.statsFromProperties``) for ``DESCRIBE EXTENDED t col``
  and the optimizer's ``EXPLAIN COST``; it never reads HMS column statistics.

Timestamps get no HMS column statistics (HMS 2.3's ``ColumnStatisticsData``
has no timestamp type, and they are left out of ``COLUMN_STATS_ACCURATE``), but
Spark's keys in full: ``nullCount``, ``distinctCount``, ``avgLen``/``maxLen``
(8) and ``min``/``max`` as Spark's ``ANALYZE`` writes them
(``CatalogColumnStat.toExternalString``): ``yyyy-MM-dd HH:mm:ss.SSSSSS`` in
UTC whatever the session's time zone, always six fraction digits, proleptic
Gregorian, years before 0 with ``-`` and after 9999 with ``+`` (java.time's
``uuuu``), e.g. ``1969-12-31 23:59:59.999999``, ``+10000-01-01
00:00:00.000000``; none when every value is null. catalogd publishes them from
those keys (``TColumnStats.low_value``/``high_value`` as that text, as for a
table only Spark's ``ANALYZE`` saw). Every other supported type gets everything
its type allows.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import idl
from catalogd.hms.client import MetastoreClient
from catalogd.stats.compute import ColumnResult, PartitionResult, TableResult

hms = idl.hive_metastore

SPARK_PREFIX = "spark.sql.statistics."
SPARK_COL_PREFIX = SPARK_PREFIX + "colStats."
SPARK_STATS_VERSION = "2"
DEFAULT_WRITERS = 4  # HMS connections writing partitions at once
# Spark's DataType.defaultSize, used by its ANALYZE for fixed-width types and
# for string/binary columns that are all null.
_SPARK_SIZES = {
    "ByteType": 1,
    "ShortType": 2,
    "IntegerType": 4,
    "LongType": 8,
    "FloatType": 4,
    "DoubleType": 8,
    "DateType": 4,
    "TimestampType": 8,
    "BooleanType": 1,
    "StringType": 20,
    "BinaryType": 100,
}
_EPOCH = dt.date(1970, 1, 1)
_MICROS_PER_DAY = 86_400_000_000
_DAYS_PER_400_YEARS = 146_097  # the proleptic Gregorian calendar repeats every 400 years
_EPOCH_ORDINAL = _EPOCH.toordinal()


def _spark_text(value: Any) -> str:
    """A min/max as Spark's ``CatalogColumnStat.fromExternalString`` parses it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def timestamp_text(micros: int) -> str:
    """A timestamp (microseconds since 1970-01-01 00:00:00 UTC) as Spark's
    ``ANALYZE`` writes its min/max: ``yyyy-MM-dd HH:mm:ss.SSSSSS`` in UTC,
    proleptic Gregorian, for any year a long of microseconds reaches (java.time
    prints years past 9999 with ``+``, before 0 with ``-``, at least 4 digits)."""
    days, rest = divmod(micros, _MICROS_PER_DAY)
    # Shift by whole 400-year cycles into the years datetime.date knows (1-400).
    cycles, ordinal = divmod(days + _EPOCH_ORDINAL - 1, _DAYS_PER_400_YEARS)
    date = dt.date.fromordinal(ordinal + 1)
    year = date.year + 400 * cycles
    seconds, fraction = divmod(rest, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    sign = "+" if year > 9999 else "-" if year < 0 else ""
    return (
        f"{sign}{abs(year):04d}-{date.month:02d}-{date.day:02d} "
        f"{hour:02d}:{minute:02d}:{second:02d}.{fraction:06d}"
    )


def _spark_size(col: ColumnResult, decimal_bytes: int) -> int:
    if col.kind == "DecimalType":
        return decimal_bytes
    return _SPARK_SIZES.get(col.kind, 8)


def spark_column_properties(col: ColumnResult, *, decimal_bytes: int = 8) -> dict[str, str]:
    """Spark's ``spark.sql.statistics.colStats.<col>.*`` properties for one column."""
    p = f"{SPARK_COL_PREFIX}{col.name}."
    props = {
        p + "version": SPARK_STATS_VERSION,
        p + "distinctCount": str(col.distinct),
        p + "nullCount": str(col.nulls),
    }
    if col.total_len is not None:
        avg = col.avg_len if col.rows > col.nulls else None
        default = _spark_size(col, decimal_bytes)
        props[p + "avgLen"] = str(math.ceil(avg) if avg is not None else default)
        props[p + "maxLen"] = str(col.max_len if col.rows > col.nulls else default)
    else:
        size = str(_spark_size(col, decimal_bytes))
        props[p + "avgLen"] = size
        props[p + "maxLen"] = size
    text = timestamp_text if col.kind == "TimestampType" else _spark_text
    if col.low is not None:
        props[p + "min"] = text(col.low)
    if col.high is not None:
        props[p + "max"] = text(col.high)
    return props


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _decimal(value: Any, scale: int) -> Any:
    unscaled = int(decimal.Decimal(value).scaleb(scale).to_integral_value())
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return hms.Decimal(unscaled=unscaled.to_bytes(length, "big", signed=True), scale=scale)


def hms_column_stats(col: ColumnResult, hive_type: str) -> Any | None:
    """The HMS ``ColumnStatisticsObj`` for one column (None: HMS has no type for it)."""
    data = hms.ColumnStatisticsData()
    if col.kind in ("ByteType", "ShortType", "IntegerType", "LongType"):
        data.longStats = hms.LongColumnStatsData(
            lowValue=col.low, highValue=col.high, numNulls=col.nulls, numDVs=col.distinct
        )
    elif col.kind in ("FloatType", "DoubleType"):
        # NaN and infinities do not fit HMS's (database's) DOUBLE: left out there.
        data.doubleStats = hms.DoubleColumnStatsData(
            lowValue=_finite(col.low),
            highValue=_finite(col.high),
            numNulls=col.nulls,
            numDVs=col.distinct,
        )
    elif col.kind == "DecimalType":
        scale = int(hive_type.rstrip(") ").rsplit(",", 1)[-1]) if "," in hive_type else 0
        data.decimalStats = hms.DecimalColumnStatsData(
            lowValue=_decimal(col.low, scale) if col.low is not None else None,
            highValue=_decimal(col.high, scale) if col.high is not None else None,
            numNulls=col.nulls,
            numDVs=col.distinct,
        )
    elif col.kind == "DateType":
        data.dateStats = hms.DateColumnStatsData(
            lowValue=hms.Date((col.low - _EPOCH).days) if col.low is not None else None,
            highValue=hms.Date((col.high - _EPOCH).days) if col.high is not None else None,
            numNulls=col.nulls,
            numDVs=col.distinct,
        )
    elif col.kind == "StringType":
        data.stringStats = hms.StringColumnStatsData(
            maxColLen=col.max_len or 0,
            avgColLen=col.avg_len or 0.0,
            numNulls=col.nulls,
            numDVs=col.distinct,
        )
    elif col.kind == "BinaryType":
        data.binaryStats = hms.BinaryColumnStatsData(
            maxColLen=col.max_len or 0, avgColLen=col.avg_len or 0.0, numNulls=col.nulls
        )
    elif col.kind == "BooleanType":
        data.booleanStats = hms.BooleanColumnStatsData(
            numTrues=col.trues or 0, numFalses=col.falses or 0, numNulls=col.nulls
        )
    else:
        return None
    return hms.ColumnStatisticsObj(colName=col.name.lower(), colType=hive_type, statsData=data)


def basic_parameters(result: PartitionResult, columns: Iterable[str]) -> dict[str, str]:
    """``numRows numFiles totalSize COLUMN_STATS_ACCURATE`` and Spark's two basic keys.

    ``columns``: those whose statistics are (about to be) accurate; none names
    only the basic statistics as accurate."""
    accurate: dict[str, Any] = {"BASIC_STATS": "true"}
    if names := sorted(columns):
        accurate["COLUMN_STATS"] = dict.fromkeys(names, "true")
    return {
        "numRows": str(result.rows),
        "numFiles": str(result.files),
        "totalSize": str(result.bytes),
        "COLUMN_STATS_ACCURATE": json.dumps(accurate, separators=(",", ":")),
        "DO_NOT_UPDATE_STATS": "true",
        SPARK_PREFIX + "numRows": str(result.rows),
        SPARK_PREFIX + "totalSize": str(result.bytes),
    }


Basic = tuple[int, int, int]  # rows, files, bytes of one partition


def write_basic(
    uri: str,
    table: Any,
    partitions: Iterable[Any],
    figures: dict[str, Basic],
    *,
    writers: int = DEFAULT_WRITERS,
) -> dict[str, Basic]:
    """Write the basic statistics of ``partitions`` (HMS ``Partition`` objects,
    changed in place), before their column statistics are known: ``numRows``,
    ``numFiles``, ``totalSize`` and Spark's basic keys from ``figures`` (by
    partition name), ``COLUMN_STATS_ACCURATE`` naming only the basic statistics
    (HMS adds each column when its statistics are written).

    For the job to write while its scan runs: over up to ``writers`` connections
    of its own to ``uri``. Returns what it wrote, by partition name; :func:`write`
    then writes only what differs. Raises the client's errors.
    """
    by_name = {_part_name(table, part): part for part in partitions}
    todo = [
        (part, PartitionResult(n, (), rows, files=files, bytes=size))
        for n, (rows, files, size) in figures.items()
        if (part := by_name.get(n)) is not None
    ]
    db, name = table.dbName, table.tableName

    def one(writer: MetastoreClient, part: Any, res: PartitionResult) -> None:
        part.parameters = {**(part.parameters or {}), **basic_parameters(res, ())}
        writer.call("alter_partition", db, name, part, what=f"partition {res.name}")

    with MetastoreClient(uri) as client:
        _each_partition(client, todo, one, writers, meanwhile=lambda: None)
    return {res.name: (res.rows, res.files, res.bytes) for _, res in todo}


def _column_statistics(
    result: PartitionResult, types: dict[str, str], db: str, table: str, part_name: str | None
) -> Any:
    objs = [
        obj
        for col in result.columns.values()
        if col.name.lower() in types
        and (obj := hms_column_stats(col, types[col.name.lower()])) is not None
    ]
    desc = hms.ColumnStatisticsDesc(
        isTblLevel=part_name is None,
        dbName=db,
        tableName=table,
        partName=part_name,
        lastAnalyzed=int(time.time()),
    )
    return hms.ColumnStatistics(statsDesc=desc, statsObj=objs)


def write(
    client: MetastoreClient,
    result: TableResult,
    *,
    table_columns: bool = True,
    writers: int = DEFAULT_WRITERS,
    table: Any = None,
    partitions: Iterable[Any] | None = None,
    written: dict[str, Basic] | None = None,
) -> int:
    """Write ``result`` to HMS: every partition it read, and the table.

    ``written``: the basic statistics :func:`write_basic` already wrote, by
    partition name; a partition whose figures are still those gets only its
    column statistics.

    ``table``/``partitions``: the HMS ``Table`` and (a superset of) the
    ``Partition`` objects, as the job read them before its scan, saving two
    calls; None reads them now. Their parameters are merged with the new
    figures and written back.

    ``table_columns=False`` (the job read only some partitions) writes the
    table's basic counts but leaves its column statistics alone. Partitions are
    written over up to ``writers`` HMS connections at once, the table over
    ``client`` meanwhile (each call waits on HMS; measured here, four
    connections write 16 partitions 1.2-2x faster than one).

    Returns the number of HMS write calls made. Raises the client's errors
    (:class:`MetastoreError`, :class:`NotFoundError`).
    """
    db, name = result.db, result.table
    if table is None:
        table = client.get_table(db, name)
    types = {f.name.lower(): f.type for f in table.sd.cols or []}
    stats_cols = [  # the columns HMS gets statistics for (no timestamps: no type for them)
        c.lower()
        for c, col in result.table_level.columns.items()
        if col.kind != "TimestampType" and c.lower() in types
    ]
    todo: list[tuple[Any, PartitionResult]] = []
    if result.partitions:
        by_name = {p.name: p for p in result.partitions}
        if partitions is None:
            partitions = client.get_partitions_by_names(db, name, list(by_name))
        todo = [
            (part, by_name[part_name])
            for part in partitions
            if (part_name := _part_name(table, part)) in by_name
        ]

    calls = [2]  # the table's

    def one(writer: MetastoreClient, part: Any, res: PartitionResult) -> None:
        if (written or {}).get(res.name) != (res.rows, res.files, res.bytes):
            part.parameters = {**(part.parameters or {}), **basic_parameters(res, stats_cols)}
            writer.call("alter_partition", db, name, part, what=f"partition {res.name}")
            calls.append(1)
        stats = _column_statistics(res, types, db, name, res.name)
        if stats.statsObj:
            writer.call("update_partition_column_statistics", stats, what=res.name)
            calls.append(1)

    def the_table() -> None:
        table.parameters = _table_parameters(table, result, types, stats_cols, table_columns)
        client.call("alter_table", db, name, table, what=f"table {db}.{name}")
        stats = _column_statistics(result.table_level, types, db, name, None)
        if stats.statsObj and table_columns:
            client.call("update_table_column_statistics", stats, what=f"table {db}.{name}")

    _each_partition(client, todo, one, writers, meanwhile=the_table)
    return sum(calls)


def _table_parameters(
    table: Any,
    result: TableResult,
    types: dict[str, str],
    stats_cols: list[str],
    table_columns: bool,
) -> dict[str, str]:
    """The table's parameters with the job's basic counts (and, for a full run,
    Spark's column keys, replacing stale ones)."""
    params = {
        k: v
        for k, v in (table.parameters or {}).items()
        if not any(k.startswith(f"{SPARK_COL_PREFIX}{c}.") for c in result.table_level.columns)
    }
    basic = basic_parameters(result.table_level, stats_cols)
    if not table_columns:
        basic.pop("COLUMN_STATS_ACCURATE")
        params = dict(table.parameters or {})
    params.update(basic)
    for col in result.table_level.columns.values() if table_columns else ():
        params.update(spark_column_properties(col, decimal_bytes=_decimal_bytes(types, col)))
    return params


def _each_partition(
    client: MetastoreClient,
    todo: list[tuple[Any, PartitionResult]],
    one: Callable[[MetastoreClient, Any, PartitionResult], None],
    writers: int,
    *,
    meanwhile: Callable[[], None],
) -> None:
    """``one(connection, partition, figures)`` for each of ``todo`` and
    ``meanwhile()`` on this thread: in turn over ``client`` alone, or with a pool
    of ``writers`` threads with a connection each (opened to ``client.uri``,
    closed at the end) writing the partitions. The first error is raised."""
    if writers <= 1 or not todo:
        for part, res in todo:
            one(client, part, res)
        meanwhile()
        return
    local = threading.local()
    opened: list[MetastoreClient] = []
    lock = threading.Lock()

    def run(item: tuple[Any, PartitionResult]) -> None:
        writer = getattr(local, "client", None)
        if writer is None:
            writer = local.client = MetastoreClient(client.uri)
            with lock:
                opened.append(writer)
        one(writer, *item)

    try:
        with ThreadPoolExecutor(min(writers, len(todo)), thread_name_prefix="hms-write") as pool:
            done = [pool.submit(run, item) for item in todo]
            meanwhile()
            for future in done:
                future.result()
    finally:
        for writer in opened:
            writer.close()


def _decimal_bytes(types: dict[str, str], col: ColumnResult) -> int:
    text = types.get(col.name.lower(), "")
    digits = "".join(ch if ch.isdigit() else " " for ch in text).split()
    return 8 if not digits or int(digits[0]) <= 18 else 16


def _part_name(table: Any, part: Any) -> str:
    from subscriber.protocol.keys import make_partition_name

    return make_partition_name([k.name.lower() for k in table.partitionKeys], list(part.values))
