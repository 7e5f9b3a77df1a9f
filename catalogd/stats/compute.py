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

Timestamps reach Python only as their microseconds since the epoch
(``unix_micros``, an ``int``), never as
``datetime``: PySpark would convert them in the Python process's local time
zone, and years outside 1-9999 (which Spark's timestamps can hold) do not fit
a ``datetime``. :mod:`catalogd.stats.publish` writes them as Spark's ``ANALYZE``
does.

File counts and bytes come from listing each partition directory through
Hadoop's ``FileSystem`` (:mod:`catalogd.files.spark_listing`: any scheme Spark
can read), skipping hidden files (``_``/``.`` prefixes, ``._COPYING_`` copies in
progress, as Spark's file index does).

This module runs the Spark side (:func:`plan`, :func:`scan`, :func:`finish`); the SQL
text per column, its cost and the distinct-count sketch are
:mod:`catalogd.stats.aggregates`'s, turning the scan's rows into figures
:mod:`catalogd.stats.folding`'s, the values :mod:`catalogd.stats.results`'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from catalogd.stats.aggregates import (
    FOOTER_BOUNDS,
    column_aggregates,
    column_inputs,
    filter_sql,
    prefix,
    quote,
    supported_columns,
)
from catalogd.stats.folding import fold, partition, partition_name, values_of
from catalogd.stats.footers import Figures, Wanted
from catalogd.stats.results import TableResult
from subscriber.protocol.hms_partition import NULL_PARTITION_VALUE

__all__ = ["Plan", "compute", "finish", "plan", "scan"]


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
        bounds = kind in FOOTER_BOUNDS or (kind == "DecimalType" and precision <= 18)
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
    inputs = [f"{quote(k)} AS k{i}" for i, k in enumerate(plan.partition_columns)]
    aggs = [("count(1)", "rows")]
    for name, kind in plan.data:
        inputs += column_inputs(name, kind, plan.deferred.get(name))
        aggs += column_aggregates(name, kind, plan.deferred.get(name))
    where, args = filter_sql(plan.partition_filter)
    source = f"SELECT {', '.join(inputs) or '1'} FROM {quote(plan.db)}.{quote(plan.table)}"
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
    sketches = [prefix(n) + "hll" for n, k in plan.data if k != "BooleanType"]
    totals = {s: part_rows[0][s + "_all"] for s in sketches} if part_rows else {}
    for i, name, _ in plan.key_cols:
        distinct_values = {row[f"k{i}"] for row in part_rows} - {None}
        totals[prefix(name) + "hll"] = len(distinct_values)
    partitions = [partition(row, keys, plan.data, plan.key_cols) for row in part_rows]
    table_level = fold(partitions, plan.cols, totals)
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
    named = {partition_name(keys, values_of(row, len(keys))): row for row in part_rows}
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
        p = prefix(name)
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
        col, p = F.col(f"`{name}`"), prefix(name)
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
            p = prefix(name)
            row[p + "nn"] = figures.get(p + "nn", 0)
            if wanted.bounds:
                row[p + "lo"], row[p + "hi"] = figures.get(p + "lo"), figures.get(p + "hi")
