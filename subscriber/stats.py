"""Typed statistics of a cached table: row counts, sizes and per-column stats.

The published ``TTable`` carries them in Impala's shapes (``table_stats``,
``columns[i].col_stats``, each partition's ``stats`` and ``hms_parameters``);
this module turns those into small frozen values, with ``None`` where a
number is unknown (Impala's ``-1``)::

    from subscriber.stats import table_stats
    stats = table_stats(sub.get_table("sales.orders", load=True))
    stats.num_rows, stats.columns["amount"].num_distinct, stats.columns["amount"].low

Pure: no I/O; works on any decoded ``TTable`` or ``TCatalogObject``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ColumnStats", "PartitionStats", "TableStats", "partition_stats", "table_stats"]


def _known(value: int | float | None) -> Any:
    return None if value is None or value < 0 else value


@dataclass(frozen=True)
class ColumnStats:
    """One column's statistics; ``None`` where unknown.

    ``low``/``high`` are Python values (int, float, bool, or text for dates,
    timestamps and decimals); ``avg_size``/``max_size`` are bytes per value
    (string lengths for strings and binaries).
    """

    name: str
    num_distinct: int | None
    num_nulls: int | None
    avg_size: float | None
    max_size: int | None
    num_trues: int | None = None
    num_falses: int | None = None
    low: Any = None
    high: Any = None


@dataclass(frozen=True)
class TableStats:
    """A table's statistics: basic counts and the columns that have stats."""

    num_rows: int | None
    total_bytes: int | None
    num_files: int | None
    columns: dict[str, ColumnStats] = field(default_factory=dict)


@dataclass(frozen=True)
class PartitionStats:
    """One partition's basic statistics."""

    name: str
    num_rows: int | None
    total_bytes: int | None
    num_files: int | None


def _value(value: Any) -> Any:
    if value is None:
        return None
    for name in ("long_val", "double_val", "bool_val", "int_val", "date_val", "string_val"):
        got = getattr(value, name, None)
        if got is not None:
            return got
    return None


def column_stats(column: Any) -> ColumnStats | None:
    """The :class:`ColumnStats` of one ``TColumn``, or None when it has none."""
    s = getattr(column, "col_stats", None)
    if s is None:
        return None
    return ColumnStats(
        name=column.columnName,
        num_distinct=_known(s.num_distinct_values),
        num_nulls=_known(s.num_nulls),
        avg_size=_known(s.avg_size),
        max_size=_known(s.max_size),
        num_trues=_known(s.num_trues),
        num_falses=_known(s.num_falses),
        low=_value(s.low_value),
        high=_value(s.high_value),
    )


def _count(params: dict[str, str] | None, *names: str) -> int | None:
    for name in names:
        value = (params or {}).get(name)
        if value and value.isdigit():
            return int(value)
    return None


def table_stats(table: Any) -> TableStats:
    """The :class:`TableStats` of a ``TTable`` (or a ``TCatalogObject`` holding one)."""
    table = getattr(table, "table", None) or table
    basic = getattr(table, "table_stats", None)
    params = getattr(getattr(table, "metastore_table", None), "parameters", None)
    columns = {}
    for col in table.columns or []:
        stats = column_stats(col)
        if stats is not None:
            columns[stats.name] = stats
    return TableStats(
        num_rows=_known(basic.num_rows) if basic is not None else None,
        total_bytes=_known(basic.total_file_bytes) if basic is not None else None,
        num_files=_count(params, "numFiles"),
        columns=columns,
    )


def partition_stats(partition: Any) -> PartitionStats:
    """The :class:`PartitionStats` of a ``THdfsPartition`` (or its ``TCatalogObject``)."""
    partition = getattr(partition, "hdfs_partition", None) or partition
    basic = getattr(partition, "stats", None)
    params = partition.hms_parameters
    files = getattr(partition, "file_desc", None)
    return PartitionStats(
        name=partition.partition_name or "",
        num_rows=_known(basic.num_rows) if basic is not None else None,
        total_bytes=_known(basic.total_file_bytes) if basic is not None else None,
        num_files=len(files) if files is not None else _count(params, "numFiles"),
    )
