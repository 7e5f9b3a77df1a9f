"""Statistics in the forms HMS and Spark store them (pure).

:func:`hms_column_stats` is a column's HMS ``ColumnStatisticsObj``;
:func:`spark_column_properties` its Spark table parameters
(``spark.sql.statistics.colStats.<col>.<key>``, with :func:`timestamp_text` as
Spark's ``ANALYZE`` writes timestamps); :func:`basic_parameters` a partition's
basic-stats parameters. What is written where, and why, is in
:mod:`catalogd.stats.publish`, which writes them.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Iterable
from typing import Any

import idl
from catalogd.stats.results import ColumnResult, PartitionResult

hms = idl.hive_metastore

SPARK_PREFIX = "spark.sql.statistics."
SPARK_COL_PREFIX = SPARK_PREFIX + "colStats."
SPARK_STATS_VERSION = "2"
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
