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

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedMemo(dict[K, V]):
    """A dict of at most ``limit`` items: :meth:`put` clears it first when it is full.

    Read it with the dict's own ``get`` (no wrapper on the hit path).
    """

    __slots__ = ("limit",)

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: K, value: V) -> V:
        """Remember ``value`` under ``key`` (clearing everything first when full); returns it."""
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value
