"""The scan's rows as statistics: each grouped row a partition's figures, and the
table level folded from them.

Data columns' figures come from the row's aggregates (aliases of
:mod:`catalogd.stats.aggregates`); partition columns', which are constant within a
partition, from the group's key values; at the table level counts add up, min/max
fold and distinct counts are the merged sketches' (given as ``totals``). Pure, no
Spark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from catalogd.stats.aggregates import LENGTHS, ORDERABLE, prefix
from catalogd.stats.results import ColumnResult, PartitionResult
from subscriber.protocol.hms_partition import NULL_PARTITION_VALUE

__all__ = ["fold", "partition", "partition_name", "values_of"]


def _column(row: dict[str, Any], name: str, kind: str, rows: int, distinct: int) -> ColumnResult:
    p = prefix(name)
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
        total_len=row.get(p + "tl") if kind in LENGTHS else None,
        max_len=row.get(p + "ml") if kind in LENGTHS else None,
        trues=trues,
        falses=falses,
    )


def _key_column(name: str, kind: str, rows: int, value: Any) -> ColumnResult:
    """A partition column within one partition, where it is the constant ``value``."""
    present = value is not None
    size = len(value) if present and kind in LENGTHS else None
    boolean = kind == "BooleanType"
    bound = value if present and (kind in ORDERABLE or boolean) else None
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


def values_of(row: dict[str, Any], n: int) -> tuple[str, ...]:
    return tuple(NULL_PARTITION_VALUE if row[f"s{i}"] is None else row[f"s{i}"] for i in range(n))


def partition(
    row: dict[str, Any],
    keys: Sequence[str],
    data: Sequence[tuple[str, str]],
    key_cols: Sequence[tuple[int, str, str]],
) -> PartitionResult:
    """One grouped row as a partition's figures (data columns aggregated, key
    columns from the group's key values)."""
    values = values_of(row, len(keys))
    rows = row["rows"]
    columns = {n: _column(row, n, k, rows, row.get(prefix(n) + "hll") or 0) for n, k in data}
    for i, name, kind in key_cols:
        columns[name] = _key_column(name, kind, rows, row[f"k{i}"])
    return PartitionResult(
        name=partition_name(keys, values), values=values, rows=rows, columns=columns
    )


def fold(
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
        distinct = int(totals.get(prefix(name) + "hll") or 0)
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


def partition_name(columns: Sequence[str], values: Sequence[str]) -> str:
    from subscriber.protocol.keys import make_partition_name

    return make_partition_name([c.lower() for c in columns], list(values)) if columns else ""
