"""One table's partitions as the HMS endpoint answers from them: sorted rows.

:class:`Rows` holds ``(name, values, entry)`` per partition, sorted by name, built
once per state of the table's partitions. From a replica's partitions
(:data:`~subscriber.cache.Partitions`) every entry is at hand. From an on-demand
subscriber's :class:`~subscriber.ondemand.reader.LazyPartitions` only the names are
(the entry slot holds None): a read selects its rows by name and values first, then
:meth:`Rows.entries` fetches just those partitions, in one batch.
"""

from __future__ import annotations

from typing import Any

from subscriber.cache import Partitions
from subscriber.ondemand.reader import LazyPartitions
from subscriber.protocol.delta import Entry
from subscriber.protocol.keys import parse_partition_name

__all__ = ["Row", "Rows", "same", "token"]

Row = tuple[str, list[str], Entry | None]
"""(partition name, its values, its entry; None until fetched, on demand)."""


class Rows:
    """See the module docstring."""

    __slots__ = ("lazy", "names", "rows", "token")

    def __init__(self, source: Partitions | LazyPartitions) -> None:
        self.token = token(source)
        self.lazy = source if isinstance(source, LazyPartitions) else None
        pairs: list[tuple[str, Entry | None]] = (
            [(name, None) for name in source.names()]
            if isinstance(source, LazyPartitions)
            else list(source.items())
        )
        self.rows: list[Row] = sorted(
            ((name, [v for _, v in parse_partition_name(name)], entry) for name, entry in pairs),
            key=lambda row: row[0],
        )
        self.names = {row[0]: row for row in self.rows}

    def entries(self, rows: list[Row]) -> list[Entry]:
        """The entries of ``rows``, in order (on demand: fetched now; a partition gone
        since the names were listed is left out)."""
        if self.lazy is None:
            return [row[2] for row in rows if row[2] is not None]
        found = self.lazy.resolve([row[0] for row in rows])
        return [found[row[0]] for row in rows if row[0] in found]


def token(source: Any) -> object:
    """What tells two states of a table's partitions apart: the replica's immutable
    set itself (compared by identity), or the on-demand listing's token (a tuple)."""
    return source.token if isinstance(source, LazyPartitions) else source


def same(a: object, b: object) -> bool:
    """Whether two :func:`token` s are of one state (never compares two sets' contents)."""
    return a is b or (isinstance(a, tuple) and a == b)
