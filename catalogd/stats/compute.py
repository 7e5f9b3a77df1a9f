"""Table, partition and column statistics computed by one Spark aggregation.

One pass over the table's rows, grouped by the partition columns, yields per
partition: the row count and, per data column, the non-null count, a
HyperLogLog sketch of the values (``hll_sketch_agg``), min/max (orderable
types: numbers, decimals, dates, timestamps; booleans), total and max length
(strings, binaries) and true/false counts (booleans). Table-level figures
are then folded from the (small) per-partition result: counts add up, min/max
fold, and the sketches merge (``hll_union_agg`` over a window, in the same
Spark job) — so a partitioned table costs one scan, where distinct counts with
``approx_count_distinct`` would need a second one for the table level.

For Parquet files, :func:`plan` leaves the non-null counts and integer, date
and decimal min/max out of the aggregation: :mod:`catalogd.stats.footers`
reads them from the files' footers while the scan runs, and :func:`finish`
puts them in, or aggregates them after all (:func:`_rescan`) where a footer
does not give them exactly or describes other files than the scan read.

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

Timestamps reach Python only as those microseconds (an ``int``), never as
``datetime``: PySpark would convert them in the Python process's local time
zone, and years outside 1-9999 (which Spark's timestamps can hold) do not fit
a ``datetime``. :mod:`catalogd.stats.publish` writes them as Spark's ``ANALYZE``
does.

File counts and bytes come from listing each partition directory through
Hadoop's ``FileSystem`` (:mod:`catalogd.files.spark_listing`: any scheme Spark
can read), skipping hidden files (``_``/``.`` prefixes, ``._COPYING_`` copies in
progress, as Spark's file index does).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from catalogd.stats.footers import Figures, Wanted

LG_CONFIG_K = 12
NDV_RSE = 1.04 / math.sqrt(2**LG_CONFIG_K)
NULL_PARTITION_VALUE = "__HIVE_DEFAULT_PARTITION__"

_INTEGRAL = ("ByteType", "ShortType", "IntegerType", "LongType")
_FRACTIONAL = ("FloatType", "DoubleType")
_ORDERABLE = (*_INTEGRAL, *_FRACTIONAL, "DecimalType", "DateType", "TimestampType")
# Sketched (and min/max'ed) as a long: the value itself, or what _value_sql makes of it.
_SKETCHED_AS_IS = ("IntegerType", "LongType", "TimestampType")
_LENGTHS = ("StringType", "BinaryType")
# Whose min/max the footers may give (decimals too, when stored as integers).
_FOOTER_BOUNDS = ("ByteType", "ShortType", "IntegerType", "LongType", "DateType")
_SUPPORTED = (*_ORDERABLE, "BooleanType", "StringType", "BinaryType")


@dataclass(frozen=True)
class ColumnResult:
    """One column's statistics over a table or a partition.

    ``kind`` is the Spark type name (``LongType``...). ``low``/``high`` are
    Python values (None for unorderable types or all-null columns), for
    timestamps the microseconds since 1970-01-01 00:00:00 UTC (an ``int``);
    lengths are in characters (strings) or bytes (binaries), None for other
    types.
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
    footer_columns: tuple[str, ...] = ()  # whose nulls (and min/max) the footers gave


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


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _value_sql(kind: str, col: str) -> str:
    """The value min/max and the sketch read: timestamps as their microseconds
    since the epoch (a long: the same order, one value per instant, and no
    time zone on the way to Python), anything else as it is."""
    return f"unix_micros({col})" if kind == "TimestampType" else col


def _inputs(name: str, kind: str, deferred: Wanted | None = None) -> list[str]:
    """What the narrow (code-generated) projection hands the aggregation for one
    data column (SQL): the value (:func:`_value_sql`) where min/max, true/false
    counts or the sketch read it as is, its ``xxhash64`` where it is sketched by
    hash, its length for strings and binaries. ``deferred``: the figures the
    footers give instead (the non-null count, and min/max when
    ``deferred.bounds``)."""
    col, p = _quote(name), _prefix(name)
    out = []
    if _needs_value(kind, deferred):
        out.append(f"{_value_sql(kind, col)} AS {p}v")
    if kind not in _SKETCHED_AS_IS and kind != "BooleanType":
        out.append(f"CASE WHEN {col} IS NOT NULL THEN xxhash64({col}) END AS {p}h")
    if kind in _LENGTHS:
        out.append(f"length({col}) AS {p}l")
    return out


def _needs_value(kind: str, deferred: Wanted | None) -> bool:
    bounds_here = kind in _ORDERABLE and not (deferred and deferred.bounds)
    return kind in _SKETCHED_AS_IS or kind == "BooleanType" or bounds_here


def _aggregates(name: str, kind: str, deferred: Wanted | None = None) -> list[tuple[str, str]]:
    """The aggregates of one data column over the columns :func:`_inputs` made:
    (SQL, alias) pairs."""
    p = _prefix(name)
    value = f"{p}v" if _needs_value(kind, deferred) else f"{p}h"
    aggs = []
    if deferred is None:
        aggs.append((f"count({value})", "nn"))
    if kind != "BooleanType":
        sketched = f"{p}v" if kind in _SKETCHED_AS_IS else f"{p}h"
        aggs.append((f"hll_sketch_agg({sketched}, {LG_CONFIG_K})", "hll"))
    if (kind in _ORDERABLE or kind == "BooleanType") and not (deferred and deferred.bounds):
        aggs += [(f"min({p}v)", "lo"), (f"max({p}v)", "hi")]
    if kind in _LENGTHS:
        aggs += [(f"sum({p}l)", "tl"), (f"max({p}l)", "ml")]
    if kind == "BooleanType":
        aggs += [(f"count_if({p}v)", "t"), (f"count_if(NOT {p}v)", "f")]
    return [(sql, p + alias) for sql, alias in aggs]


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


@dataclass(frozen=True)
class Plan:
    """What one run aggregates over the rows and what it leaves to the footers.

    ``df`` is the table (filtered to the partitions asked for); ``data`` the
    supported data columns, ``key_cols`` the supported partition columns (with
    their key index); ``deferred`` the data columns whose non-null count (and,
    where :attr:`footers.Wanted.bounds`, min/max) the scan leaves out, by name.
    """

    db: str
    table: str
    partition_columns: tuple[str, ...]
    df: Any
    cols: tuple[tuple[str, str], ...]
    data: tuple[tuple[str, str], ...]
    key_cols: tuple[tuple[int, str, str], ...]
    deferred: dict[str, Wanted]
    partition_filter: tuple[dict[str, str], ...] = ()

    @property
    def keys(self) -> list[str]:
        return [k.lower() for k in self.partition_columns]


def plan(
    spark: Any,
    db: str,
    table: str,
    partition_columns: Sequence[str],
    *,
    partition_filter: Sequence[dict[str, str]] = (),
    columns: Sequence[str] | None = None,
    footers: bool = False,
) -> Plan:
    """Decide what the scan of ``db.table`` computes.

    ``footers``: the table's files are Parquet, so non-null counts of every
    data column but booleans, and min/max of integers, dates and decimals of
    up to 18 digits (stored as ``INT32``/``INT64``), are left to
    :func:`footers.read` (the scan then aggregates only sketches, lengths,
    float min/max and booleans). Drops Spark's cached file listing of the
    table first, so files written since (by anyone) are counted. Blocks for a
    few calls to Spark (and through it HMS).
    """
    spark.catalog.refreshTable(f"`{db}`.`{table}`")
    df = _filtered(spark.table(f"`{db}`.`{table}`"), partition_filter)
    types = {f.name: f.dataType for f in df.schema.fields}
    cols = supported_columns(df.schema, columns)
    keys = [k.lower() for k in partition_columns]
    data = [(n, k) for n, k in cols if n.lower() not in keys]
    deferred = {}
    for name, kind in data if footers else ():
        if kind == "BooleanType":
            continue
        precision = getattr(types[name], "precision", 0)
        bounds = kind in _FOOTER_BOUNDS or (kind == "DecimalType" and precision <= 18)
        scale = getattr(types[name], "scale", 0)
        deferred[name] = Wanted(name, kind, bounds, precision, scale)
    return Plan(
        db=db.lower(),
        table=table.lower(),
        partition_columns=tuple(partition_columns),
        df=df,
        cols=tuple(cols),
        data=tuple(data),
        key_cols=tuple((keys.index(n.lower()), n, k) for n, k in cols if n.lower() in keys),
        deferred=deferred,
        partition_filter=tuple(partition_filter),
    )


def scan(plan: Plan) -> list[dict[str, Any]]:
    """Run the aggregation of ``plan``: one row per partition read, with each
    partition's figures, its key values as text (``s0``...), its sketches'
    estimates and the table-level estimates (``..._all``). Blocks for the
    Spark job; uses the plan's session as is (its master decides where the
    work runs).

    One SQL statement (parsed and analysed once: building it as DataFrame
    columns took ~0.2 s of py4j calls here). In the one Spark job, each
    partition's sketch is estimated and all sketches are merged by a window
    over the (small) grouped result for the table level.
    """
    keys = [f"k{i}" for i in range(len(plan.partition_columns))]
    stamps = {i for i, _, kind in plan.key_cols if kind == "TimestampType"}
    inputs = [f"{_quote(k)} AS k{i}" for i, k in enumerate(plan.partition_columns)]
    aggs = [("count(1)", "rows")]
    for name, kind in plan.data:
        inputs += _inputs(name, kind, plan.deferred.get(name))
        aggs += _aggregates(name, kind, plan.deferred.get(name))
    where, args = _where(plan.partition_filter)
    source = f"SELECT {', '.join(inputs) or '1'} FROM {_quote(plan.db)}.{_quote(plan.table)}"
    selected = ", ".join([*keys, *(f"{sql} AS {alias}" for sql, alias in aggs)])
    grouped = f"SELECT {selected} FROM ({source}{where})"
    if keys:
        grouped += f" GROUP BY {', '.join(keys)}"
    sketches = [a for _, a in aggs if a.endswith("_hll")]
    # Timestamp keys reach Python as microseconds, as data columns' min/max do.
    outer = [f"unix_micros({k}) AS {k}" if i in stamps else k for i, k in enumerate(keys)]
    outer += [a for _, a in aggs if not a.endswith("_hll")]
    outer += [f"CAST({k} AS STRING) AS s{i}" for i, k in enumerate(keys)]
    outer += [f"hll_sketch_estimate({s}) AS {s}" for s in sketches]
    outer += [f"hll_sketch_estimate(hll_union_agg({s}) OVER ()) AS {s}_all" for s in sketches]
    query = f"SELECT {', '.join(outer)} FROM ({grouped})"
    spark = plan.df.sparkSession
    return [r.asDict() for r in spark.sql(query, args=args or None).collect()]


def _where(partition_filter: Sequence[dict[str, str]]) -> tuple[str, dict[str, str]]:
    """A WHERE clause selecting these partitions, and its parameters."""
    if not partition_filter:
        return "", {}
    args: dict[str, str] = {}
    alternatives = []
    for spec in partition_filter:
        terms = []
        for k, v in spec.items():
            if v == NULL_PARTITION_VALUE:
                terms.append(f"{_quote(k)} IS NULL")
            else:
                args[f"v{len(args)}"] = v
                terms.append(f"CAST({_quote(k)} AS STRING) = :v{len(args) - 1}")
        alternatives.append("(" + (" AND ".join(terms) or "TRUE") + ")")
    return " WHERE " + " OR ".join(alternatives), args


def finish(
    spark: Any,
    plan: Plan,
    part_rows: list[dict[str, Any]],
    footer_figures: Mapping[str, Figures] | None = None,
) -> TableResult:
    """Every figure but file counts, from the scan's rows and, for what the plan
    deferred, the footers' figures (by partition name).

    Where the footers do not give a deferred figure exactly (a file without
    statistics, a type they do not order as Spark does, a file that is not
    Parquet, or files that changed between the scan's listing and the job's:
    their row counts differ), a second, narrower aggregation computes it over
    the rows. Blocks for that job, if any.
    """
    keys = plan.keys
    missing = _fill_from_footers(plan, part_rows, footer_figures)
    if missing:
        _rescan(plan, part_rows, missing)
    sketches = [_prefix(n) + "hll" for n, k in plan.data if k != "BooleanType"]
    totals = {s: part_rows[0][s + "_all"] for s in sketches} if part_rows else {}
    for i, name, _ in plan.key_cols:
        distinct_values = {row[f"k{i}"] for row in part_rows} - {None}
        totals[_prefix(name) + "hll"] = len(distinct_values)
    partitions = [_partition(row, keys, plan.data, plan.key_cols) for row in part_rows]
    table_level = _fold(partitions, plan.cols, totals)
    return TableResult(
        db=plan.db,
        table=plan.table,
        partition_columns=plan.partition_columns,
        table_level=table_level,
        partitions=tuple(partitions) if plan.partition_columns else (),
        footer_columns=tuple(n for n in plan.deferred if n not in missing),
    )


def compute(
    spark: Any,
    db: str,
    table: str,
    partition_columns: Sequence[str],
    *,
    partition_filter: Sequence[dict[str, str]] = (),
    columns: Sequence[str] | None = None,
) -> TableResult:
    """Every figure of ``db.table`` but file counts, all aggregated over the rows
    (:func:`plan`, :func:`scan`, :func:`finish` without footers).

    ``partition_filter``: only these partitions (each a full ``{col: value}``
    spec); empty means all. Blocks for the Spark job.
    """
    p = plan(
        spark, db, table, partition_columns, partition_filter=partition_filter, columns=columns
    )
    return finish(spark, p, scan(p))


def _fill_from_footers(
    plan: Plan, part_rows: list[dict[str, Any]], figures: Mapping[str, Figures] | None
) -> dict[str, Wanted]:
    """Put the footers' figures into ``part_rows`` (as the scan would have named
    them); return the deferred columns they do not give exactly."""
    if not plan.deferred:
        return {}
    keys = plan.keys
    named = {_partition_name(keys, _values(row, len(keys))): row for row in part_rows}
    if figures is None or any(
        (figures[n].rows if n in figures else 0) != (named[n]["rows"] if n in named else 0)
        for n in {*named, *figures}
    ):
        return dict(plan.deferred)  # no footers, or other files than the scan read
    missing = {}
    for name, wanted in plan.deferred.items():
        each = [(row, figures[part].columns[name]) for part, row in named.items()]
        exact = all(f.nulls is not None for _, f in each) and (
            not wanted.bounds or all(f.exact_bounds for _, f in each)
        )
        if not exact:
            missing[name] = wanted
            continue
        p = _prefix(name)
        for row, f in each:
            row[p + "nn"] = row["rows"] - (f.nulls or 0)
            if wanted.bounds:
                row[p + "lo"], row[p + "hi"] = f.low, f.high
    return missing


def _rescan(plan: Plan, part_rows: list[dict[str, Any]], missing: Mapping[str, Wanted]) -> None:
    """Aggregate the ``missing`` deferred figures over the rows (no sketches: a
    code-generated hash aggregation) and put them into ``part_rows``."""
    from pyspark.sql import functions as F

    keys = plan.keys
    inputs = [F.col(f"`{k}`").cast("string").alias(f"s{i}") for i, k in enumerate(keys)]
    aggs = []
    for name, wanted in missing.items():
        col, p = F.col(f"`{name}`"), _prefix(name)
        aggs.append(F.count(col).alias(p + "nn"))
        if wanted.bounds:
            aggs += [F.min(col).alias(p + "lo"), F.max(col).alias(p + "hi")]
    names = [f"s{i}" for i in range(len(keys))]
    select = plan.df.select(*inputs, *[F.col(f"`{n}`") for n in missing])
    found = {
        tuple(r[n] for n in names): r.asDict() for r in select.groupBy(*names).agg(*aggs).collect()
    }
    for row in part_rows:
        figures = found.get(tuple(row[n] for n in names), {})
        for name, wanted in missing.items():
            p = _prefix(name)
            row[p + "nn"] = figures.get(p + "nn", 0)
            if wanted.bounds:
                row[p + "lo"], row[p + "hi"] = figures.get(p + "lo"), figures.get(p + "hi")


def _values(row: dict[str, Any], n: int) -> tuple[str, ...]:
    return tuple(NULL_PARTITION_VALUE if row[f"s{i}"] is None else row[f"s{i}"] for i in range(n))


def _partition(
    row: dict[str, Any],
    keys: Sequence[str],
    data: Sequence[tuple[str, str]],
    key_cols: Sequence[tuple[int, str, str]],
) -> PartitionResult:
    """One grouped row as a partition's figures (data columns aggregated, key
    columns from the group's key values)."""
    values = _values(row, len(keys))
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
