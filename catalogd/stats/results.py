"""What a statistics job computed: frozen values, no Spark.

:class:`TableResult` holds the table level and each partition read
(:class:`PartitionResult`), each with its columns' figures (:class:`ColumnResult`).
:mod:`catalogd.stats.compute` makes them, :mod:`catalogd.stats.publish` writes them
to HMS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ColumnResult", "PartitionResult", "TableResult"]


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
