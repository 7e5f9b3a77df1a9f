"""The SQL of the statistics scan: per column, what the projection hands the
aggregation and what the aggregation computes; the WHERE clause of a partition filter.

Where the time goes (measured, ``bench/stats_bench.py``, Spark's event log):
a typed aggregate such as ``hll_sketch_agg`` puts the whole aggregation in an
interpreted ``ObjectHashAggregate``, where the sketches took ~1.1 s of a
3.1 s stage on 10M rows x 4 columns and counts and min/max ~0.9 s (0.5 s in
generated code). So the rows first pass through a narrow projection, which
whole-stage code generation compiles: values that are sketched by their hash
are hashed there (``xxhash64``), string and binary lengths are taken there,
and only fixed-width columns (plus the ones min/max needs) reach the
aggregation; what the footers give is not aggregated at all. Partition columns
are not aggregated either: within a partition they are constant, so their
figures follow exactly from the group keys (distinct counts of partition
columns are exact).

Distinct counts: DataSketches HLL with ``lgConfigK`` = :data:`LG_CONFIG_K` (12):
relative standard error :data:`NDV_RSE` ≈ 1.6 % (Spark's own ``ANALYZE`` uses
HLL++ with ``spark.sql.statistics.ndv.maxError`` = 5 %). Integers and longs
are sketched as they are, timestamps as their microseconds since the epoch
(``unix_micros``, the value their min/max are aggregated over too); every other
type by its ``xxhash64`` (collisions are negligible at 64 bits; unlike the
sketch's own string input, an empty string counts as a value, as it does for
Spark's HLL++).

Aliases: each column's inputs and aggregates are named after :func:`prefix` (a
short hash of its name that survives any column name), plus a suffix (``v`` value,
``h`` hash, ``l`` length; ``nn``, ``hll``, ``lo``, ``hi``, ``tl``, ``ml``, ``t``,
``f`` for the aggregates); :mod:`catalogd.stats.folding` reads them back. Pure text,
no Spark.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

from catalogd.stats.footers import Wanted
from subscriber.protocol.hms_partition import NULL_PARTITION_VALUE

__all__ = [
    "FOOTER_BOUNDS",
    "LENGTHS",
    "LG_CONFIG_K",
    "NDV_RSE",
    "ORDERABLE",
    "column_aggregates",
    "column_inputs",
    "filter_sql",
    "kind_of",
    "prefix",
    "quote",
    "supported_columns",
]

LG_CONFIG_K = 12
NDV_RSE = 1.04 / math.sqrt(2**LG_CONFIG_K)

_INTEGRAL = ("ByteType", "ShortType", "IntegerType", "LongType")
_FRACTIONAL = ("FloatType", "DoubleType")
ORDERABLE = (*_INTEGRAL, *_FRACTIONAL, "DecimalType", "DateType", "TimestampType")
# Sketched (and min/max'ed) as a long: the value itself, or what _value_sql makes of it.
_SKETCHED_AS_IS = ("IntegerType", "LongType", "TimestampType")
LENGTHS = ("StringType", "BinaryType")
# Whose min/max the footers may give (decimals too, when stored as integers).
FOOTER_BOUNDS = ("ByteType", "ShortType", "IntegerType", "LongType", "DateType")
_SUPPORTED = (*ORDERABLE, "BooleanType", "StringType", "BinaryType")


def kind_of(data_type: Any) -> str:
    return type(data_type).__name__


def supported_columns(schema: Any, wanted: Sequence[str] | None) -> list[tuple[str, str]]:
    """The (name, kind) of the columns to compute statistics for."""
    want = {w.lower() for w in wanted} if wanted else None
    out = []
    for f in schema.fields:
        # Partition columns too, as Spark's ANALYZE ... FOR ALL COLUMNS does
        # (they get Spark's keys only: HMS keeps no statistics for them).
        if want is not None and f.name.lower() not in want:
            continue
        if kind_of(f.dataType) in _SUPPORTED:
            out.append((f.name, kind_of(f.dataType)))
    return out


def prefix(name: str) -> str:
    # Short aliases that survive any column name (spaces, dots, backticks).
    return f"c_{zlib.crc32(name.encode()):08x}_"


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _value_sql(kind: str, col: str) -> str:
    """The value min/max and the sketch read: timestamps as their microseconds
    since the epoch (a long: the same order, one value per instant, and no
    time zone on the way to Python), anything else as it is."""
    return f"unix_micros({col})" if kind == "TimestampType" else col


def column_inputs(name: str, kind: str, deferred: Wanted | None = None) -> list[str]:
    """What the narrow (code-generated) projection hands the aggregation for one
    data column (SQL): the value (:func:`_value_sql`) where min/max, true/false
    counts or the sketch read it as is, its ``xxhash64`` where it is sketched by
    hash, its length for strings and binaries. ``deferred``: the figures the
    footers give instead (the non-null count, and min/max when
    ``deferred.bounds``)."""
    col, p = quote(name), prefix(name)
    out = []
    if _needs_value(kind, deferred):
        out.append(f"{_value_sql(kind, col)} AS {p}v")
    if kind not in _SKETCHED_AS_IS and kind != "BooleanType":
        out.append(f"CASE WHEN {col} IS NOT NULL THEN xxhash64({col}) END AS {p}h")
    if kind in LENGTHS:
        out.append(f"length({col}) AS {p}l")
    return out


def _needs_value(kind: str, deferred: Wanted | None) -> bool:
    bounds_here = kind in ORDERABLE and not (deferred and deferred.bounds)
    return kind in _SKETCHED_AS_IS or kind == "BooleanType" or bounds_here


def column_aggregates(
    name: str, kind: str, deferred: Wanted | None = None
) -> list[tuple[str, str]]:
    """The aggregates of one data column over the columns :func:`column_inputs` made:
    (SQL, alias) pairs."""
    p = prefix(name)
    value = f"{p}v" if _needs_value(kind, deferred) else f"{p}h"
    aggs = []
    if deferred is None:
        aggs.append((f"count({value})", "nn"))
    if kind != "BooleanType":
        sketched = f"{p}v" if kind in _SKETCHED_AS_IS else f"{p}h"
        aggs.append((f"hll_sketch_agg({sketched}, {LG_CONFIG_K})", "hll"))
    if (kind in ORDERABLE or kind == "BooleanType") and not (deferred and deferred.bounds):
        aggs += [(f"min({p}v)", "lo"), (f"max({p}v)", "hi")]
    if kind in LENGTHS:
        aggs += [(f"sum({p}l)", "tl"), (f"max({p}l)", "ml")]
    if kind == "BooleanType":
        aggs += [(f"count_if({p}v)", "t"), (f"count_if(NOT {p}v)", "f")]
    return [(sql, p + alias) for sql, alias in aggs]


def filter_sql(partition_filter: Sequence[dict[str, str]]) -> tuple[str, dict[str, str]]:
    """A WHERE clause selecting these partitions, and its parameters."""
    if not partition_filter:
        return "", {}
    args: dict[str, str] = {}
    alternatives = []
    for spec in partition_filter:
        terms = []
        for k, v in spec.items():
            if v == NULL_PARTITION_VALUE:
                terms.append(f"{quote(k)} IS NULL")
            else:
                args[f"v{len(args)}"] = v
                terms.append(f"CAST({quote(k)} AS STRING) = :v{len(args) - 1}")
        alternatives.append("(" + (" AND ".join(terms) or "TRUE") + ")")
    return " WHERE " + " OR ".join(alternatives), args
