"""What a handler group of :class:`~subscriber.metastore.answers.CacheAnswers` uses of it.

A handler group (``function_answers``, ``spec_answers``, ...) is a class taking a
:class:`Lookups` and returning ``{method: Handler}``; CacheAnswers passes itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from subscriber.cache import CacheView
from subscriber.metastore import orders
from subscriber.metastore.rows import Rows
from subscriber.protocol.delta import Entry

__all__ = ["Handler", "Lookups"]

Handler = Callable[[CacheView, Any], bytes]
"""(cache view, decoded args) -> the encoded ``<method>_result`` struct."""


class Lookups(Protocol):
    """The shared lookups of :class:`~subscriber.metastore.answers.CacheAnswers`."""

    decode: Callable[[Entry], Any]
    databases: frozenset[str] | None
    orders: orders.RowOrders
    upstream_reads_catalogs: bool | None
    """Whether the upstream HMS reads ``@hive#db`` (3.1+; None: not known yet)."""
    upstream_serves_requests: bool | None
    """Whether it has Hive 4's request calls (4.0+; None: not known yet)."""

    def answer(self, view: CacheView, name: str, args: Any) -> bytes:
        """The encoded ``<name>_result`` of another served call (Forward, HMS errors)."""
        ...

    def follows(self, db: str) -> None:
        """Raises Forward when the subscriber does not follow ``db``."""

    def partitioned(self, view: CacheView, db: str, name: str) -> tuple[Any, Rows]:
        """The HMS ``Table`` of ``db.name`` and its partitions' :class:`Rows`.

        Raises:
            Forward: the table is not in the cache, not loaded, or not followed.
        """
        ...
