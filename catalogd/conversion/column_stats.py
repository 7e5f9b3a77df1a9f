"""Column statistics, as HMS and Spark store them, to Impala ``TColumnStats`` (pure).

Two stores hold column statistics for a table:

* HMS's own (``TAB_COL_STATS``), written by ``update_table_column_statistics``
  (Hive's and Impala's ``COMPUTE STATS``, ``catalogd stats compute``) and read
  with ``get_table_statistics_req``: one ``ColumnStatisticsObj`` per column;
* Spark's, in the table's parameters (``spark.sql.statistics.colStats.<col>.<key>``,
  keys ``version distinctCount nullCount min max avgLen maxLen``), written by
  Spark's ``ANALYZE TABLE ... FOR COLUMNS``, which never calls the HMS stats API.

:func:`column_stats` merges both (HMS first). Values Impala cannot know are
``-1``, as in Impala (``num_trues``/``num_falses`` outside booleans, an unknown
``avg_size``). Fixed-width types get their slot size as ``avg_size``/``max_size``,
as Impala's ``ColumnStats`` does.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

import idl
from catalogd.conversion.storage import I64_MAX, I64_MIN, parse_i64

co = idl.catalog_objects
Types = co.Types

SPARK_COL_STATS_PREFIX = "spark.sql.statistics.colStats."
# Impala's slot sizes for fixed-width types (ColumnStats / PrimitiveType.getSlotSize).
_FIXED_SIZES = {
    "boolean": 1,
    "tinyint": 1,
    "smallint": 2,
    "int": 4,
    "integer": 4,
    "bigint": 8,
    "float": 4,
    "double": 8,
    "date": 4,
    "timestamp": 16,
}
_INTEGRAL = frozenset({"tinyint", "smallint", "int", "integer", "bigint"})
_DECIMAL = re.compile(r"decimal\s*\(\s*(\d+)")


def _base_type(hive_type: str) -> str:
    return hive_type.strip().lower().split("(")[0].strip()


def _fixed_size(hive_type: str) -> int | None:
    base = _base_type(hive_type)
    if base == "decimal":
        match = _DECIMAL.match(hive_type.strip().lower())
        precision = int(match.group(1)) if match else 10
        return 4 if precision <= 9 else 8 if precision <= 18 else 16
    return _FIXED_SIZES.get(base)


def has_hms_column_stats(params: dict[str, str] | None) -> bool:
    """Whether a table's or partition's parameters say HMS holds column stats for it.

    HMS 2.3 records the columns it holds statistics for in ``COLUMN_STATS_ACCURATE``
    (``{"BASIC_STATS":"true","COLUMN_STATS":{"a":"true"}}``) whenever
    ``update_*_column_statistics`` runs, so the loader asks HMS only for tables
    that have some: one call saved per table without.
    """
    raw = (params or {}).get("COLUMN_STATS_ACCURATE")
    if not raw:
        return False
    try:
        value = json.loads(raw)
    except ValueError:
        return False
    return isinstance(value, dict) and bool(value.get("COLUMN_STATS"))


def from_hms(obj: Any) -> object:
    """A ``TColumnStats`` from one HMS ``ColumnStatisticsObj``."""
    data = obj.statsData
    fixed = _fixed_size(obj.colType or "")
    size = float(fixed) if fixed is not None else -1.0
    stats = co.TColumnStats(
        avg_size=size,
        max_size=fixed if fixed is not None else -1,
        num_distinct_values=-1,
        num_nulls=-1,
        num_trues=-1,
        num_falses=-1,
    )
    if data.booleanStats is not None:
        b = data.booleanStats
        stats.num_trues, stats.num_falses, stats.num_nulls = b.numTrues, b.numFalses, b.numNulls
        stats.num_distinct_values = int(b.numTrues > 0) + int(b.numFalses > 0)
    elif data.longStats is not None:
        s = data.longStats
        stats.num_nulls, stats.num_distinct_values = s.numNulls, s.numDVs
        stats.low_value = _value(long_val=s.lowValue)
        stats.high_value = _value(long_val=s.highValue)
    elif data.doubleStats is not None:
        s = data.doubleStats
        stats.num_nulls, stats.num_distinct_values = s.numNulls, s.numDVs
        stats.low_value = _value(double_val=s.lowValue)
        stats.high_value = _value(double_val=s.highValue)
    elif data.dateStats is not None:
        s = data.dateStats
        stats.num_nulls, stats.num_distinct_values = s.numNulls, s.numDVs
        stats.low_value = _value(date_val=s.lowValue.daysSinceEpoch if s.lowValue else None)
        stats.high_value = _value(date_val=s.highValue.daysSinceEpoch if s.highValue else None)
    elif data.decimalStats is not None:
        s = data.decimalStats
        stats.num_nulls, stats.num_distinct_values = s.numNulls, s.numDVs
    elif data.stringStats is not None:
        s = data.stringStats
        stats.num_nulls, stats.num_distinct_values = s.numNulls, s.numDVs
        stats.avg_size, stats.max_size = float(s.avgColLen), s.maxColLen
    elif data.binaryStats is not None:
        s = data.binaryStats
        stats.num_nulls = s.numNulls
        stats.avg_size, stats.max_size = float(s.avgColLen), s.maxColLen
    return stats


def _value(**field: Any) -> object | None:
    if all(v is None for v in field.values()):
        return None
    return Types.TColumnValue(**field)


def _spark_value(text: str | None, hive_type: str) -> object | None:
    if text is None:
        return None
    base = _base_type(hive_type)
    try:
        if base in _INTEGRAL:
            number = parse_i64(text)
            return Types.TColumnValue(long_val=number) if number is not None else None
        if base in ("float", "double"):
            return Types.TColumnValue(double_val=float(text))
        if base == "boolean":
            return Types.TColumnValue(bool_val=text.lower() == "true")
    except ValueError:
        return None
    # Dates, timestamps and decimals as Spark wrote them (ISO text).
    return Types.TColumnValue(string_val=text)


def from_spark(column: str, hive_type: str, params: dict[str, str]) -> object | None:
    """A ``TColumnStats`` from Spark's table parameters for ``column``, or None.

    Spark writes a column's statistics only with its ``version`` key; without
    it the column has none.
    """
    prefix = f"{SPARK_COL_STATS_PREFIX}{column}."
    if prefix + "version" not in params:
        return None

    def number(key: str) -> int:
        raw = params.get(prefix + key)
        try:
            value = float(raw) if raw is not None else -1.0
        except ValueError:
            return -1
        return int(value) if math.isfinite(value) and I64_MIN <= value <= I64_MAX else -1

    def real(key: str) -> float:
        raw = params.get(prefix + key)
        try:
            return float(raw) if raw is not None else -1.0
        except ValueError:
            return -1.0

    fixed = _fixed_size(hive_type)
    return co.TColumnStats(
        avg_size=real("avgLen") if fixed is None else float(fixed),
        max_size=number("maxLen") if fixed is None else fixed,
        num_distinct_values=number("distinctCount"),
        num_nulls=number("nullCount"),
        num_trues=-1,
        num_falses=-1,
        low_value=_spark_value(params.get(prefix + "min"), hive_type),
        high_value=_spark_value(params.get(prefix + "max"), hive_type),
    )


def column_stats(
    columns: Iterable[Any], params: dict[str, str] | None, hms_objs: Iterable[Any] = ()
) -> dict[str, object]:
    """``TColumnStats`` by lower-case column name for a table's ``FieldSchema`` s.

    ``hms_objs`` are the ``ColumnStatisticsObj`` s HMS returned; a column HMS
    has none for falls back to Spark's parameters; a column with neither is left out.
    """
    by_hms = {o.colName.lower(): o for o in hms_objs}
    out: dict[str, object] = {}
    for field in columns:
        name = field.name.lower()
        if name in by_hms:
            out[name] = from_hms(by_hms[name])
            continue
        spark = from_spark(field.name, field.type or "", params or {})
        if spark is None and field.name != name:
            spark = from_spark(name, field.type or "", params or {})
        if spark is not None:
            out[name] = spark
    return out
