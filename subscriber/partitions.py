"""A table's cached partitions: hash-bucketed sets, and packed ones from a snapshot.

Pure (no sockets, threads or clock); every value here is immutable once published
in a view (:mod:`subscriber.cache`), so readers take no lock.

* :class:`PartitionSet`: partition name -> entry in :data:`BUCKETS` hash buckets;
  changing one partition copies one bucket (~1/64 of the table).
* :class:`PackedPartitions`: the partitions a snapshot delivered, still in the
  compressed frames they came in (:mod:`subscriber.protocol.packed`, ~50 B per
  partition), plus an *overlay* of the changes applied since (a small
  :class:`PartitionSet` whose removals are kept as tombstones). Reads unpack the frames
  once (:class:`Frames`, shared by every later state of the table) into a
  :class:`RunIndex` (names and offsets; entries built as read) and look at the overlay
  first. A delta costs what it changes, never an unpack or a re-bucketing:
  the overlay is folded into a plain set only once it holds as many changes as half
  the frames' partitions, so the writer pays that O(table) work after enough changes
  to amortise it, and the unpack at most once per table.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from subscriber.partition_index import NameIndex
from subscriber.protocol.delta import Entry
from subscriber.protocol.messages import PackedRun
from subscriber.protocol.packed import entry_at, unpack_names

__all__ = [
    "BUCKETS",
    "Frames",
    "PackedPartitions",
    "PartitionBucket",
    "PartitionSet",
    "Partitions",
    "RunIndex",
]

BUCKETS = 64


class PartitionBucket(dict[str, Entry]):
    """One hash bucket of a table's partitions (name -> entry), never mutated once
    published in a view. Remembers, on first use, an index of its names by
    ``(column, value)`` so partial-spec lookups touch only matching names."""

    __slots__ = ("_index",)
    _index: NameIndex

    def index(self) -> NameIndex:
        try:
            return self._index
        except AttributeError:
            pass
        index = self._index = NameIndex(list(self))  # benign race: readers build equal ones
        return index


_EMPTY_BUCKETS: tuple[PartitionBucket, ...] = tuple(PartitionBucket() for _ in range(BUCKETS))


@dataclass(frozen=True, slots=True)
class PartitionSet:
    """The partitions of one table: partition name -> entry, in hash buckets."""

    buckets: tuple[PartitionBucket, ...] = _EMPTY_BUCKETS
    size: int = 0

    def get(self, name: str) -> Entry | None:
        buckets = self.buckets
        return buckets[hash(name) % len(buckets)].get(name)

    def items(self) -> Iterator[tuple[str, Entry]]:
        for bucket in self.buckets:
            yield from bucket.items()

    def __len__(self) -> int:
        return self.size

    def matching(self, spec: Mapping[str, str]) -> list[tuple[str, Entry]]:
        """Partitions whose ``column=value`` pairs include every pair of ``spec``
        (column names lower-case, values unescaped), like HMS get_partitions_ps."""
        found: list[tuple[str, Entry]] = []
        for bucket in self.buckets:
            if bucket:
                found.extend((name, bucket[name]) for name in bucket.index().matching(spec))
        return found

    def changed(
        self, updates: Mapping[str, Entry | None], *, keep_tombstones: bool = False
    ) -> PartitionSet:
        """A new set with ``updates`` (name -> entry) applied: None or a tombstone (an
        entry without payload) removes, unless ``keep_tombstones`` stores tombstones."""
        by_bucket: dict[int, list[tuple[str, Entry | None]]] = {}
        count = len(self.buckets)
        for name, entry in updates.items():
            by_bucket.setdefault(hash(name) % count, []).append((name, entry))
        buckets = list(self.buckets)
        size = self.size
        for index, changes in by_bucket.items():
            bucket = PartitionBucket(buckets[index])
            for name, entry in changes:
                had = name in bucket
                if entry is None or (entry.payload is None and not keep_tombstones):
                    if had:
                        del bucket[name]
                        size -= 1
                else:
                    bucket[name] = entry
                    size += not had
            buckets[index] = bucket
        return PartitionSet(tuple(buckets), size)


_EMPTY = PartitionSet()


class RunIndex:
    """A packed table's partitions once read: its runs' bytes, inflated, with each
    partition's name and where its entry starts in them. An entry is built when asked
    for, so a first filtered read builds only the entries it returns; the name index
    is built on the first filter, the name -> offset map on the first lookup."""

    __slots__ = ("_index", "_names", "_offsets", "_raw", "_starts")

    def __init__(self, raw: bytes, starts: array[int], names: list[str]) -> None:
        self._raw, self._starts, self._names = raw, starts, names
        self._offsets: dict[str, int] | None = None
        self._index: NameIndex | None = None

    def _offset_of(self) -> dict[str, int]:
        offsets = self._offsets
        if offsets is None:  # benign races here and below: readers build equal values
            offsets = self._offsets = dict(zip(self._names, self._starts, strict=True))
        return offsets

    def get(self, name: str) -> Entry | None:
        at = self._offset_of().get(name)
        return None if at is None else entry_at(self._raw, at)

    def items(self) -> Iterator[tuple[str, Entry]]:
        raw = self._raw
        for name, at in zip(self._names, self._starts, strict=True):
            yield name, entry_at(raw, at)

    def __len__(self) -> int:
        return len(self._names)

    def matching(self, spec: Mapping[str, str]) -> list[tuple[str, Entry]]:
        index = self._index
        if index is None:
            index = self._index = NameIndex(self._names)
        raw, offsets = self._raw, self._offset_of()
        return [(name, entry_at(raw, offsets[name])) for name in index.matching(spec)]


class Frames:
    """A table's partitions as one snapshot delivered them (its runs of packed frames),
    and the :class:`RunIndex` they unpack to: built by the first caller of
    :meth:`unpacked` and kept (concurrent first callers may both build it: equal ones)."""

    __slots__ = ("_runs", "count", "set")

    def __init__(self, runs: tuple[PackedRun, ...]) -> None:
        self._runs = runs
        self.count = sum(run.count for run in runs)
        """How many partitions the runs hold."""
        self.set: RunIndex | None = None

    def unpacked(self) -> RunIndex:
        found = self.set
        if found is None:
            runs = self._runs
            # Another caller may have unpacked between the two reads: it sets ``set``
            # before it clears ``_runs``, so one of the two reads sees its work.
            found = self.set
        if found is None:
            if len(runs) == 1:
                found = RunIndex(*unpack_names(runs[0]))
            else:  # a table over several frames: one buffer, offsets shifted
                pieces: list[bytes] = []
                starts: array[int] = array("q")
                names: list[str] = []
                base = 0
                for run in runs:
                    piece, at, named = unpack_names(run)
                    starts.extend(pos + base for pos in at)
                    names += named
                    pieces.append(piece)
                    base += len(piece)
                found = RunIndex(b"".join(pieces), starts, names)
            self.set = found
            self._runs = ()  # the frames go once every table in them is unpacked
        return found


class PackedPartitions:
    """The partitions of one table as :class:`Frames` plus an overlay of later changes
    (name -> entry; tombstones for removals): the same reads as :class:`PartitionSet`."""

    __slots__ = ("_frames", "_overlay", "_size")

    def __init__(self, frames: Frames, overlay: PartitionSet = _EMPTY) -> None:
        self._frames = frames
        self._overlay = overlay
        self._size: int | None = frames.count if not overlay.size else None

    @classmethod
    def of(cls, runs: tuple[PackedRun, ...]) -> PackedPartitions:
        return cls(Frames(runs))

    @property
    def packed(self) -> bool:
        """Whether no read has unpacked the frames yet."""
        return self._frames.set is None

    def get(self, name: str) -> Entry | None:
        entry = self._overlay.get(name)
        if entry is not None:
            return None if entry.payload is None else entry
        return self._frames.unpacked().get(name)

    def items(self) -> Iterator[tuple[str, Entry]]:
        overlay = self._overlay
        for name, entry in self._frames.unpacked().items():
            if overlay.get(name) is None:
                yield name, entry
        for name, entry in overlay.items():
            if entry.payload is not None:
                yield name, entry

    def __len__(self) -> int:
        size = self._size
        if size is None:
            base = self._frames.unpacked()
            size = len(base)
            for name, entry in self._overlay.items():
                size += (entry.payload is not None) - (base.get(name) is not None)
            self._size = size
        return size

    def matching(self, spec: Mapping[str, str]) -> list[tuple[str, Entry]]:
        overlay = self._overlay
        found = [
            (name, entry)
            for name, entry in self._frames.unpacked().matching(spec)
            if overlay.get(name) is None
        ]
        if overlay.size:
            found += [(n, e) for n, e in overlay.matching(spec) if e.payload is not None]
        return found

    def changed(self, updates: Mapping[str, Entry | None]) -> Partitions:
        """This table with ``updates`` applied (None or a tombstone removes): into the
        overlay while it stays under half the frames' partitions; else folded into one
        :class:`PartitionSet` (O(table), after at least that many changes)."""
        frames, overlay = self._frames, self._overlay
        if 2 * (overlay.size + len(updates)) < frames.count:
            marked = {n: e for n, e in updates.items() if e is not None}
            if len(marked) != len(updates):  # None has no version: such callers fold
                return self._folded().changed(updates)
            return PackedPartitions(frames, overlay.changed(marked, keep_tombstones=True))
        return self._folded().changed(updates)

    def _folded(self) -> PartitionSet:
        """The table as a plain set in :data:`BUCKETS` buckets (the frames' set has one)."""
        changes: dict[str, Entry | None] = dict(self._frames.unpacked().items())
        changes.update(self._overlay.items())  # tombstones remove
        return _EMPTY.changed(changes)


Partitions = PartitionSet | PackedPartitions
"""A table's cached partitions, packed or not (the same reads)."""
