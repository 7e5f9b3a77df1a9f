"""Table, partition and column statistics computed by one Spark aggregation.

One pass over the table's rows, grouped by the partition columns, yields per
partition: the row count and, per data column, the non-null count, a
HyperLogLog sketch of the values (``hll_sketch_agg``), min/max (orderable
types), total and max length (strings, binaries) and true/false counts
(booleans). Table-level figures are then folded from the (small, cached)
per-partition result: counts add up, min/max fold, and the sketches merge
(``hll_union_agg`` over a window, in the same Spark job) — so a partitioned
table costs one scan, where distinct counts with ``approx_count_distinct``
would need a second one for the table level.

Where the time goes (measured, ``bench/stats_bench.py``): a typed aggregate
such as ``hll_sketch_agg`` puts the whole aggregation in an interpreted
``ObjectHashAggregate``. So the rows first pass through a narrow projection,
which whole-stage code generation compiles: values that are sketched by their
hash are hashed there (``xxhash64``), string and binary lengths are taken
there, and only fixed-width columns (plus the orderable ones min/max needs)
reach the aggregation. Partition columns are not aggregated at all: within a
partition they are constant, so their figures follow exactly from the group
keys (distinct counts of partition columns are exact).

Distinct counts: DataSketches HLL with ``lgConfigK`` = :data:`LG_CONFIG_K` (12):
relative standard error :data:`NDV_RSE` ≈ 1.6 % (Spark's own ``ANALYZE`` uses
HLL++ with ``spark.sql.statistics.ndv.maxError`` = 5 %). Integers and longs
are sketched as they are; every other type by its ``xxhash64`` (collisions are
negligible at 64 bits; unlike the sketch's own string input, an empty string
counts as a value, as it does for Spark's HLL++).

File counts and bytes come from listing each partition directory through
Hadoop's ``FileSystem`` (:mod:`catalogd.files.spark_listing`: any scheme Spark
can read), skipping hidden files (``_``/``.`` prefixes, ``._COPYING_`` copies in
progress, as Spark's file index does).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

LG_CONFIG_K = 12
NDV_RSE = 1.04 / math.sqrt(2**LG_CONFIG_K)
NULL_PARTITION_VALUE = "__HIVE_DEFAULT_PARTITION__"

_INTEGRAL = ("ByteType", "ShortType", "IntegerType", "LongType")
_FRACTIONAL = ("FloatType", "DoubleType")
_ORDERABLE = (*_INTEGRAL, *_FRACTIONAL, "DecimalType", "DateType")
_SKETCHED_AS_IS = ("IntegerType", "LongType")
_LENGTHS = ("StringType", "BinaryType")
_SUPPORTED = (*_ORDERABLE, "BooleanType", "StringType", "BinaryType", "TimestampType")


@dataclass(frozen=True)
class ColumnResult:
    """One column's statistics over a table or a partition.

    ``kind`` is the Spark type name (``LongType``...). ``low``/``high`` are
    Python values (None for unorderable types or all-null columns); lengths
    are in characters (strings) or bytes (binaries), None for other types.
    """

    name: str
    kind: str
    rows: int
    nulls: int
    distinct: int
    low: Any = None
    high: Any = None
    total_len: int | None = None
    max_len: int | None = None
    trues: int | None = None
    falses: int | None = None

    @property
    def avg_len(self) -> float | None:
        non_null = self.rows - self.nulls
        if self.total_len is None:
            return None
        return self.total_len / non_null if non_null else 0.0


@dataclass(frozen=True)
class PartitionResult:
    """Basic and column statistics of one partition (``name`` "" for the table)."""

    name: str
    values: tuple[str, ...]
    rows: int
    columns: dict[str, ColumnResult] = field(default_factory=dict)
    files: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class TableResult:
    """What one job computed: the table level and each partition it read."""

    db: str
    table: str
    partition_columns: tuple[str, ...]
    table_level: PartitionResult
    partitions: tuple[PartitionResult, ...]


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


def _prefix(name: str) -> str:
    # Short aliases that survive any column name (spaces, dots, backticks).
    return f"c_{zlib.crc32(name.encode()):08x}_"


def _inputs(name: str, kind: str) -> list[Any]:
    """What the narrow (code-generated) projection hands the aggregation for one
    data column: the value where min/max, true/false counts or the sketch read it
    as is, its ``xxhash64`` where it is sketched by hash, its length for strings
    and binaries. Non-null counts count whichever of value and hash is there."""
    from pyspark.sql import functions as F

    col = F.col(f"`{name}`")
    p = _prefix(name)
    out = []
    if kind in _ORDERABLE or kind == "BooleanType":
        out.append(col.alias(p + "v"))
    if kind not in _SKETCHED_AS_IS and kind != "BooleanType":
        out.append(F.when(col.isNotNull(), F.xxhash64(col)).alias(p + "h"))
    if kind in _LENGTHS:
        out.append(F.length(col).alias(p + "l"))
    return out


def _aggregates(name: str, kind: str) -> list[Any]:
    """The aggregates of one data column over the columns :func:`_inputs` made."""
    from pyspark.sql import functions as F

    p = _prefix(name)
    value, hashed, length = F.col(p + "v"), F.col(p + "h"), F.col(p + "l")
    has_value = kind in _ORDERABLE or kind == "BooleanType"
    aggs = [F.count(value if has_value else hashed).alias(p + "nn")]
    if kind != "BooleanType":
        sketched = value if kind in _SKETCHED_AS_IS else hashed
        aggs.append(F.hll_sketch_agg(sketched, LG_CONFIG_K).alias(p + "hll"))
    if has_value:
        aggs += [F.min(value).alias(p + "lo"), F.max(value).alias(p + "hi")]
    if kind in _LENGTHS:
        aggs += [F.sum(length).alias(p + "tl"), F.max(length).alias(p + "ml")]
    if kind == "BooleanType":
        aggs += [F.count_if(value).alias(p + "t"), F.count_if(~value).alias(p + "f")]
    return aggs


def _column(row: dict[str, Any], name: str, kind: str, rows: int, distinct: int) -> ColumnResult:
    p = _prefix(name)
    nn = row[p + "nn"] or 0
    trues, falses = row.get(p + "t"), row.get(p + "f")
    if kind == "BooleanType":
        distinct = int(bool(trues)) + int(bool(falses))
    return ColumnResult(
        name=name,
        kind=kind,
        rows=rows,
        nulls=rows - nn,
        distinct=distinct,
        low=row.get(p + "lo"),
        high=row.get(p + "hi"),
        total_len=row.get(p + "tl") if kind in _LENGTHS else None,
        max_len=row.get(p + "ml") if kind in _LENGTHS else None,
        trues=trues,
        falses=falses,
    )


def _key_column(name: str, kind: str, rows: int, value: Any) -> ColumnResult:
    """A partition column within one partition, where it is the constant ``value``."""
    present = value is not None
    size = len(value) if present and kind in _LENGTHS else None
    boolean = kind == "BooleanType"
    bound = value if present and (kind in _ORDERABLE or boolean) else None
    return ColumnResult(
        name=name,
        kind=kind,
        rows=rows,
        nulls=0 if present else rows,
        distinct=int(present),
        low=bound,
        high=bound,
        total_len=size * rows if size is not None else None,
        max_len=size,
        trues=(rows if value is True else 0) if boolean else None,
        falses=(rows if value is False else 0) if boolean else None,
    )


def _filtered(df: Any, partition_filter: Sequence[dict[str, str]]) -> Any:
    from pyspark.sql import functions as F

    if not partition_filter:
        return df
    cond = F.lit(False)
    for spec in partition_filter:
        one = F.lit(True)
        for k, v in spec.items():
            key = F.col(f"`{k}`")
            one = one & (key.isNull() if v == NULL_PARTITION_VALUE else key.cast("string") == v)
        cond = cond | one
    return df.where(cond)


def compute(
    spark: Any,
    db: str,
    table: str,
    partition_columns: Sequence[str],
    *,
    partition_filter: Sequence[dict[str, str]] = (),
    columns: Sequence[str] | None = None,
) -> TableResult:
    """Run the aggregation for ``db.table`` and return every figure but file counts.

    ``partition_filter``: only these partitions (each a full ``{col: value}``
    spec); empty means all. Blocks for the Spark job; uses ``spark`` as is
    (its master decides where the work runs).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    # Spark caches a table's file listing per session: drop it, so files written
    # since (by anyone) are counted.
    spark.catalog.refreshTable(f"`{db}`.`{table}`")
    df = _filtered(spark.table(f"`{db}`.`{table}`"), partition_filter)
    cols = supported_columns(df.schema, columns)
    keys = [k.lower() for k in partition_columns]
    data = [(n, k) for n, k in cols if n.lower() not in keys]
    key_cols = [(keys.index(n.lower()), n, k) for n, k in cols if n.lower() in keys]
    inputs = [F.col(f"`{k}`").alias(f"k{i}") for i, k in enumerate(partition_columns)]
    aggs = [F.count(F.lit(1)).alias("rows")]
    for name, kind in data:
        inputs += _inputs(name, kind)
        aggs += _aggregates(name, kind)
    grouped = df.select(*inputs).groupBy(*[f"k{i}" for i in range(len(keys))]).agg(*aggs)
    # One Spark job: each partition's sketch estimated, and all sketches merged
    # by a window over the (small) grouped result for the table level.
    sketches = [_prefix(n) + "hll" for n, k in data if k != "BooleanType"]
    whole = Window.partitionBy()
    plain = [c for c in grouped.columns if not c.endswith("_hll")]
    names = [F.col(f"k{i}").cast("string").alias(f"s{i}") for i in range(len(keys))]
    estimates = [F.hll_sketch_estimate(F.col(s)).alias(s) for s in sketches]
    unions = [
        F.hll_sketch_estimate(F.hll_union_agg(F.col(s)).over(whole)).alias(s + "_all")
        for s in sketches
    ]
    part_rows = [r.asDict() for r in grouped.select(*plain, *names, *estimates, *unions).collect()]
    totals = {s: part_rows[0][s + "_all"] for s in sketches} if part_rows else {}
    for i, name, _ in key_cols:
        distinct_values = {row[f"k{i}"] for row in part_rows} - {None}
        totals[_prefix(name) + "hll"] = len(distinct_values)
    partitions = [_partition(row, keys, data, key_cols) for row in part_rows]
    table_level = _fold(partitions, cols, totals)
    return TableResult(
        db=db.lower(),
        table=table.lower(),
        partition_columns=tuple(partition_columns),
        table_level=table_level,
        partitions=tuple(partitions) if partition_columns else (),
    )


def _partition(
    row: dict[str, Any],
    keys: Sequence[str],
    data: Sequence[tuple[str, str]],
    key_cols: Sequence[tuple[int, str, str]],
) -> PartitionResult:
    """One grouped row as a partition's figures (data columns aggregated, key
    columns from the group's key values)."""
    values = tuple(
        NULL_PARTITION_VALUE if row[f"s{i}"] is None else row[f"s{i}"] for i in range(len(keys))
    )
    rows = row["rows"]
    columns = {n: _column(row, n, k, rows, row.get(_prefix(n) + "hll") or 0) for n, k in data}
    for i, name, kind in key_cols:
        columns[name] = _key_column(name, kind, rows, row[f"k{i}"])
    return PartitionResult(
        name=_partition_name(keys, values), values=values, rows=rows, columns=columns
    )


def _fold(
    parts: Sequence[PartitionResult], cols: Sequence[tuple[str, str]], totals: dict[str, Any]
) -> PartitionResult:
    """Table-level figures from the partitions' (and the merged sketches')."""
    rows = sum(p.rows for p in parts)
    columns = {}
    for name, kind in cols:
        each = [p.columns[name] for p in parts]
        lows = [c.low for c in each if c.low is not None]
        highs = [c.high for c in each if c.high is not None]
        lens = [c.total_len for c in each if c.total_len is not None]
        maxes = [c.max_len for c in each if c.max_len is not None]
        trues = sum(c.trues or 0 for c in each)
        falses = sum(c.falses or 0 for c in each)
        distinct = int(totals.get(_prefix(name) + "hll") or 0)
        if kind == "BooleanType":
            distinct = int(trues > 0) + int(falses > 0)
        string_like = kind in ("StringType", "BinaryType")
        columns[name] = ColumnResult(
            name=name,
            kind=kind,
            rows=rows,
            nulls=sum(c.nulls for c in each),
            distinct=distinct,
            low=min(lows) if lows else None,
            high=max(highs) if highs else None,
            total_len=sum(lens) if string_like else None,
            max_len=(max(maxes) if maxes else 0) if string_like else None,
            trues=trues if kind == "BooleanType" else None,
            falses=falses if kind == "BooleanType" else None,
        )
    return PartitionResult(name="", values=(), rows=rows, columns=columns)


def _partition_name(columns: Sequence[str], values: Sequence[str]) -> str:
    from subscriber.protocol.keys import make_partition_name

    return make_partition_name([c.lower() for c in columns], list(values)) if columns else ""
