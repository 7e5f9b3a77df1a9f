"""A bounded memo: a dict that starts over when full (pure).

Used where a derived value (a decoded object, encoded bytes) is keyed by
``(key, version)``: an entry never goes stale, so the only concern is memory.
Clearing everything past a limit is cruder than LRU but costs nothing per hit,
which matters on reads of about a microsecond (:mod:`subscriber.reads`,
:mod:`subscriber.metastore.answers`).

Thread-safety: any thread may read and :meth:`BoundedMemo.put`; under the GIL a
race only repeats work (two threads computing the same value) or clears once more.
"""

from __future__ import annotations

from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedMemo(Generic[K, V]):
    """At most ``limit`` remembered values: :meth:`put` clears them all first when full.

    Read through :attr:`values`, a plain dict that stays the same object for the
    memo's life (it is cleared in place), so a hot reader may hold it and pay
    nothing over a dict lookup.
    """

    __slots__ = ("limit", "values")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.values: dict[K, V] = {}

    def __len__(self) -> int:
        return len(self.values)

    def put(self, key: K, value: V) -> V:
        """Remember ``value`` under ``key`` (clearing everything first when full); returns it."""
        values = self.values
        if len(values) >= self.limit:
            values.clear()
        values[key] = value
        return value
