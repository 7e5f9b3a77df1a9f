"""HMS's row order, learnt from its own answers (bounded; thread-safe).

Some HMS reads return several rows in whatever order its backing database reads
them: HMS 2.3's ``get_table_objects_by_name``, ``get_all_functions`` and the
partial-spec partition calls run a query with no ``ORDER BY`` (the plan's order:
partitions in creation order on a fresh Derby; tables by name there, but for hundreds
of tables on PostgreSQL neither by name nor by creation). The catalog cannot derive
it. For all of a database's tables catalogd publishes it (``published`` below).
Otherwise the first such call is forwarded, and
:class:`RowOrders` remembers the order of the rows in HMS's answer, keyed by the
exact cached state it answers for: the name *and catalog version* of every row. The
next call over the same rows is answered from the cache in that order; any change to
one of them (a new version), or a row more or fewer, is another key, so it is
forwarded and learnt again. An answer whose rows are not exactly the cached ones (the
cache is behind HMS, or a ``max_parts`` cut it short) teaches nothing.

What it assumes: HMS's order for a set of rows changes only when one of those rows
changes (an insert, update or delete of them, which catalogd publishes). A backing
database reorganised in place (``VACUUM FULL``, ``CLUSTER``, Derby's compress), or a
new plan for the query, would reorder rows without a catalog change; an order learnt
here would then be answered until one of the rows changes (catalogd reads the orders
it publishes again every 10 minutes).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

import idl
from subscriber.metastore import framing
from subscriber.metastore.shapes import Forward
from subscriber.protocol import codec
from subscriber.protocol.errors import InvalidRequestError, ProtocolError
from subscriber.protocol.keys import make_partition_name

__all__ = [
    "MAX_KEYS",
    "MAX_ROWS",
    "RowOrders",
    "function_names",
    "partition_names",
    "table_names",
]

_SERVICE = idl.hive_metastore.ThriftHiveMetastore
T = TypeVar("T")

MAX_KEYS = 512
"""Orders remembered at most (least recently used dropped first)."""
MAX_ROWS = 10_000
"""Answers with more rows than this are not remembered (always forwarded)."""

Names = Callable[[Any], "list[str] | None"]
"""A decoded ``<method>_result`` -> the names of its rows in order (None: unreadable)."""


def table_names(result: Any) -> list[str] | None:
    """Rows of ``get_table_objects_by_name(_req)``: lower-case table names."""
    tables = result.success
    if tables is not None and not isinstance(tables, list):
        tables = tables.tables  # GetTablesResult
    if tables is None:
        return None
    return [(t.tableName or "").lower() for t in tables]


def function_names(result: Any) -> list[str] | None:
    """Rows of ``get_all_functions``: ``db.name`` as stored."""
    if result.success is None or result.success.functions is None:
        return None
    return [f"{f.dbName}.{f.functionName}" for f in result.success.functions]


def partition_names(keys: list[str]) -> Names:
    """Rows of a partial-spec call: partition names (``get_partition_names_ps``), or
    built from each ``Partition``'s values with the table's partition ``keys``."""

    def names(result: Any) -> list[str] | None:
        if result.success is None:
            return None
        try:
            return [
                row if isinstance(row, str) else make_partition_name(keys, row.values or [])
                for row in result.success
            ]
        except InvalidRequestError:  # values that do not fit the keys: nothing learnt
            return None

    return names


class RowOrders:
    """See the module docstring."""

    def __init__(self, max_keys: int = MAX_KEYS, max_rows: int = MAX_ROWS) -> None:
        self._max_keys = max_keys
        self._max_rows = max_rows
        self._orders: OrderedDict[Hashable, tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self.learnt = 0
        """Orders learnt from HMS's answers."""
        self.published = 0
        """Answers in an order catalogd published (learnt there once for every endpoint)."""

    def __len__(self) -> int:
        return len(self._orders)

    def arrange(
        self,
        scope: Hashable,
        rows: Mapping[str, tuple[int, T]],
        names: Names,
        published: Sequence[tuple[str, int]] | None = None,
    ) -> list[T]:
        """``rows`` (name -> (catalog version, value)) in HMS's order: as they are when
        there is at most one, else in the order ``published`` by catalogd ((name,
        version) rows, used only when they are exactly ``rows``), else in the order
        learnt here for exactly these rows.

        Raises:
            Forward: not learnt yet; its ``learn`` teaches this object HMS's answer.
        """
        if len(rows) <= 1:
            return [value for _, value in rows.values()]
        if published is not None and _same_rows(published, rows):
            self.published += 1
            return [rows[name][1] for name, _ in published]
        key = (scope, frozenset((name, version) for name, (version, _) in rows.items()))
        with self._lock:
            order = self._orders.get(key)
            if order is not None:
                self._orders.move_to_end(key)
        if order is not None:
            return [rows[name][1] for name in order]
        wanted = frozenset(rows)
        raise Forward(
            "several rows: HMS returns its database's row order (learnt from this answer)",
            learn=lambda method, reply: self._learn(key, wanted, method, reply, names),
        )

    def _learn(
        self, key: Hashable, wanted: frozenset[str], method: str, reply: bytes, names: Names
    ) -> None:
        if len(wanted) > self._max_rows:
            return
        try:
            header = framing.read_header(reply)
            if header is None or header.type != framing.REPLY:
                return
            result = codec.decode(getattr(_SERVICE, f"{method}_result"), reply[header.body_start :])
        except ProtocolError:
            return
        order = names(result)
        if order is None or len(order) != len(wanted) or frozenset(order) != wanted:
            return  # not the cached rows: the cache is behind HMS, or an error
        with self._lock:
            self._orders[key] = tuple(order)
            self._orders.move_to_end(key)
            while len(self._orders) > self._max_keys:
                self._orders.popitem(last=False)
            self.learnt += 1


def _same_rows(published: Sequence[tuple[str, int]], rows: Mapping[str, tuple[int, Any]]) -> bool:
    """Whether ``published`` names exactly ``rows``, each once, at its version."""
    if len(published) != len(rows):
        return False
    seen = set()
    for name, version in published:
        row = rows.get(name)
        if row is None or row[0] != version or name in seen:
            return False
        seen.add(name)
    return True
