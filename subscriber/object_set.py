"""A catalog's non-partition objects in hash buckets: copy-on-write that costs the change.

Pure (no sockets, threads or clock); immutable once built, so readers share it
without a lock.

A cache view (:class:`~subscriber.cache.CacheView`) is replaced, never changed, by each
delta. Its objects (databases, tables, views, functions, principals, cache pools) were
one dict, copied whole by every delta: with 100,000 objects one changed table cost
1.7 ms of the subscriber's thread, 20 us with 1,000. :class:`ObjectSet` keeps them in
:data:`BUCKETS` dicts by key hash, like a table's partitions
(:class:`~subscriber.partitions.PartitionSet`); a delta copies the list of buckets (a
list, never changed once a set holds it: copying it is one allocation) and the buckets it
touches (~1/256 of the objects each).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import Any

from subscriber.protocol.delta import Entry

__all__ = ["BUCKETS", "ObjectSet"]

BUCKETS = 256
_MASK = BUCKETS - 1  # get() writes it as a literal: a read of a table pays one lookup less
_NONE: dict[str, Entry] = {}  # every empty bucket: never changed (changed() copies first)


class ObjectSet(Mapping[str, Entry]):
    """Key -> entry of the catalog's non-partition objects (read-only)."""

    __slots__ = ("_buckets", "_size")

    def __init__(self, buckets: list[dict[str, Entry]] | None = None, size: int = 0) -> None:
        self._buckets = buckets if buckets is not None else [_NONE] * BUCKETS
        self._size = size

    @classmethod
    def of(cls, objects: Mapping[str, Entry]) -> ObjectSet:
        """The same objects as ``objects`` (any mapping), in buckets."""
        if isinstance(objects, ObjectSet):
            return objects
        return _EMPTY.changed(dict(objects))[0]

    def get(self, key: str, default: Any = None) -> Any:
        return self._buckets[hash(key) & 255].get(key, default)  # 255: _MASK, no global

    def __getitem__(self, key: str) -> Entry:
        return self._buckets[hash(key) & _MASK][key]

    def __contains__(self, key: object) -> bool:
        return key in self._buckets[hash(key) & _MASK]

    def __iter__(self) -> Iterator[str]:
        for bucket in self._buckets:
            yield from bucket

    def __len__(self) -> int:
        return self._size

    def values(self) -> ValuesView[Entry]:
        return _Values(self)

    def items(self) -> ItemsView[str, Entry]:
        return _Items(self)

    def changed(
        self, updates: Mapping[str, Entry | None]
    ) -> tuple[ObjectSet, list[str], list[str]]:
        """A new set with ``updates`` (key -> entry; None removes) applied, and the keys
        that came and that went (an update of a present key is neither)."""
        came: list[str] = []
        went: list[str] = []
        if not updates:
            return self, came, went
        buckets = list(self._buckets)
        copied = [False] * BUCKETS
        for key, entry in updates.items():
            index = hash(key) & _MASK
            if copied[index]:
                bucket = buckets[index]
            else:
                bucket = buckets[index] = dict(buckets[index])
                copied[index] = True
            if entry is None:
                if bucket.pop(key, None) is not None:
                    went.append(key)
            else:
                if key not in bucket:
                    came.append(key)
                bucket[key] = entry
        return ObjectSet(buckets, self._size + len(came) - len(went)), came, went

    def replaced(self, key: str, entry: Entry) -> ObjectSet | None:
        """A new set with ``entry`` for ``key``, when ``key`` is present (None when not):
        the common change (one object updated) without :meth:`changed`'s bookkeeping."""
        index = hash(key) & _MASK
        bucket = self._buckets[index]
        if key not in bucket:
            return None
        bucket = dict(bucket)
        bucket[key] = entry
        buckets = self._buckets.copy()
        buckets[index] = bucket
        return ObjectSet(buckets, self._size)

    def __repr__(self) -> str:
        return f"ObjectSet({self._size} objects)"


class _Values(ValuesView[Entry]):
    """``values()`` read bucket by bucket (the mixin would look each key up again)."""

    _mapping: ObjectSet

    def __iter__(self) -> Iterator[Entry]:
        for bucket in self._mapping._buckets:
            yield from bucket.values()


class _Items(ItemsView[str, Entry]):
    _mapping: ObjectSet

    def __iter__(self) -> Iterator[tuple[str, Entry]]:
        for bucket in self._mapping._buckets:
            yield from bucket.items()


_EMPTY = ObjectSet()
