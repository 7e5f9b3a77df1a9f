"""The subscriber's local copy of the catalog: one writer, lock-free readers.

:class:`CatalogCache` is pure (no sockets, threads or clock). Its one writer
(the subscriber's background thread) installs snapshots and applies deltas;
each change builds a new immutable :class:`CacheView` and swaps it in with a
single reference assignment, so readers in Spark code take no lock and always
see one consistent version.

Invariants:

* A delta is applied only when it starts at the view's version
  (:class:`~subscriber.protocol.delta.VersionGapError` otherwise, view untouched).
* Copy-on-write is proportional to the change, not the catalog: partitions
  live in per-table sets of :data:`BUCKETS` hash buckets, so changing one
  partition of a 100k-partition table copies one bucket of ~1/64 of it.
* Entries keep the encoded payload; decoding happens on read, in the reader.
* A snapshot's partitions may arrive packed (:mod:`subscriber.protocol.packed`): a
  table's partitions then stay in the compressed frames they came in
  (:class:`PackedPartitions`, ~50 B per partition) until the table is first read or
  changed, which unpacks them into a :class:`PartitionSet` once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum

from subscriber.protocol.delta import Delta, Entry, VersionGapError
from subscriber.protocol.keys import (
    PARTITION_PREFIX,
    database_of,
    parse_partition_name,
    split_partition_key,
)
from subscriber.protocol.messages import PackedRun
from subscriber.protocol.packed import unpack_run

BUCKETS = 64


class PartitionBucket(dict[str, Entry]):
    """One hash bucket of a table's partitions (name -> entry), never mutated once
    published in a view. Remembers, on first use, an index of its names by
    ``(column, value)`` so partial-spec lookups touch only matching names."""

    __slots__ = ("_index",)
    _index: dict[tuple[str, str], list[str]]

    def index(self) -> dict[tuple[str, str], list[str]]:
        try:
            return self._index
        except AttributeError:
            pass
        index: dict[tuple[str, str], list[str]] = {}
        add = index.setdefault
        for name in self:
            for pair in parse_partition_name(name):
                add(pair, []).append(name)
        self._index = index  # benign race: readers build equal indexes
        return index


_EMPTY_BUCKETS: tuple[PartitionBucket, ...] = tuple(PartitionBucket() for _ in range(BUCKETS))


@dataclass(frozen=True, slots=True)
class PartitionSet:
    """The partitions of one table: partition name -> entry, in hash buckets."""

    buckets: tuple[PartitionBucket, ...] = _EMPTY_BUCKETS
    size: int = 0

    def get(self, name: str) -> Entry | None:
        return self.buckets[hash(name) % BUCKETS].get(name)

    def items(self) -> Iterator[tuple[str, Entry]]:
        for bucket in self.buckets:
            yield from bucket.items()

    def __len__(self) -> int:
        return self.size

    def matching(self, spec: Mapping[str, str]) -> list[tuple[str, Entry]]:
        """Partitions whose ``column=value`` pairs include every pair of ``spec``
        (column names lower-case, values unescaped), like HMS get_partitions_ps."""
        pairs = list(spec.items())
        found: list[tuple[str, Entry]] = []
        for bucket in self.buckets:
            if not bucket:
                continue
            index = bucket.index()
            names = set(index.get(pairs[0], ()))
            for pair in pairs[1:]:
                if not names:
                    break
                names.intersection_update(index.get(pair, ()))
            found.extend((name, bucket[name]) for name in names)
        return found

    def changed(self, updates: Mapping[str, Entry | None]) -> PartitionSet:
        """A new set with ``updates`` (name -> entry, None removes) applied."""
        by_bucket: dict[int, list[tuple[str, Entry | None]]] = {}
        for name, entry in updates.items():
            by_bucket.setdefault(hash(name) % BUCKETS, []).append((name, entry))
        buckets = list(self.buckets)
        size = self.size
        for index, changes in by_bucket.items():
            bucket = PartitionBucket(buckets[index])
            for name, entry in changes:
                had = name in bucket
                if entry is None:
                    if had:
                        del bucket[name]
                        size -= 1
                else:
                    bucket[name] = entry
                    size += not had
            buckets[index] = bucket
        return PartitionSet(tuple(buckets), size)


class PackedPartitions:
    """The partitions of one table as a snapshot delivered them, packed: the same
    reads as :class:`PartitionSet`, answered from the set :meth:`unpacked` builds on
    first use (kept; concurrent first readers may both build it, equal sets)."""

    __slots__ = ("_runs", "_set", "_size")

    def __init__(self, runs: tuple[PackedRun, ...]) -> None:
        self._runs = runs
        self._size = sum(run.count for run in runs)
        self._set: PartitionSet | None = None

    @property
    def packed(self) -> bool:
        """Whether no read has unpacked the partitions yet."""
        return self._set is None

    def unpacked(self) -> PartitionSet:
        found = self._set
        if found is None:
            runs = self._runs
            # Another reader may have unpacked between the two reads: it sets _set
            # before it clears _runs, so one of the two reads sees its work.
            found = self._set
        if found is None:
            buckets = tuple(PartitionBucket() for _ in range(BUCKETS))
            for run in runs:
                for name, entry in unpack_run(run):
                    buckets[hash(name) % BUCKETS][name] = entry
            found = self._set = PartitionSet(buckets, sum(map(len, buckets)))
            self._runs = ()  # the frames go once every table in them is unpacked
        return found

    def get(self, name: str) -> Entry | None:
        return self.unpacked().get(name)

    def items(self) -> Iterator[tuple[str, Entry]]:
        return self.unpacked().items()

    def __len__(self) -> int:
        found = self._set
        return self._size if found is None else len(found)

    def matching(self, spec: Mapping[str, str]) -> list[tuple[str, Entry]]:
        return self.unpacked().matching(spec)

    def changed(self, updates: Mapping[str, Entry | None]) -> PartitionSet:
        return self.unpacked().changed(updates)


Partitions = PartitionSet | PackedPartitions
"""A table's cached partitions, unpacked or not (the same reads)."""


class ChangeKind(Enum):
    ADDED = "added"
    UPDATED = "updated"
    REMOVED = "removed"


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """What a delta did to one key, as listeners receive it."""

    kind: ChangeKind
    key: str
    version: int


@dataclass(frozen=True, slots=True)
class CacheView:
    """One immutable version of the cached catalog. Safe to share between threads."""

    service_id: str = ""
    version: int = 0
    objects: Mapping[str, Entry] = field(default_factory=dict)
    """Every non-partition key -> entry."""
    by_database: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Database -> its non-partition keys (``""`` holds global objects)."""
    partitions: Mapping[str, Partitions] = field(default_factory=dict)
    """``db.table`` -> its partitions."""

    def get(self, key: str) -> Entry | None:
        if key.startswith(PARTITION_PREFIX):
            table, name = split_partition_key(key)
            parts = self.partitions.get(table)
            return parts.get(name) if parts is not None else None
        return self.objects.get(key)

    def keys_of(self, db: str) -> frozenset[str]:
        return self.by_database.get(db, frozenset())

    def partitions_of(self, table: str) -> Partitions:
        """The partitions of ``db.table`` (lower-case), empty when none are cached."""
        return self.partitions.get(table, PartitionSet())

    def entry_count(self) -> int:
        return len(self.objects) + sum(len(p) for p in self.partitions.values())

    def entries(self) -> Iterator[Entry]:
        yield from self.objects.values()
        for parts in self.partitions.values():
            for _, entry in parts.items():
                yield entry


def build_view(
    service_id: str, version: int, entries: Iterable[Entry], packed: Iterable[PackedRun] = ()
) -> CacheView:
    """A view holding exactly the live ``entries`` and ``packed`` partitions (a
    snapshot) at ``version``."""
    view = _with_changes(CacheView(service_id, 0), version, entries, events=None)
    runs: dict[str, list[PackedRun]] = {}
    for run in packed:
        runs.setdefault(run.table, []).append(run)
    if not runs:
        return view
    partitions = dict(view.partitions)
    for table, table_runs in runs.items():
        table_set = PackedPartitions(tuple(table_runs))
        loose = partitions.get(table)  # partitions of the table that came unpacked
        partitions[table] = table_set if loose is None else table_set.changed(dict(loose.items()))
    return replace(view, partitions=partitions)


def _with_changes(
    view: CacheView,
    version: int,
    entries: Iterable[Entry],
    events: list[ChangeEvent] | None,
) -> CacheView:
    objects: dict[str, Entry] | None = None
    db_changes: dict[str, set[str]] = {}
    db_removals: dict[str, set[str]] = {}
    part_changes: dict[str, dict[str, Entry | None]] = {}
    for entry in entries:
        key = entry.key
        if key.startswith(PARTITION_PREFIX):
            table, name = split_partition_key(key)
            old = view.partitions.get(table)
            previous = old.get(name) if old is not None else None
            part_changes.setdefault(table, {})[name] = None if entry.removed else entry
        else:
            if objects is None:
                objects = dict(view.objects)
            previous = objects.get(key)
            db = database_of(key)
            if entry.removed:
                objects.pop(key, None)
                db_removals.setdefault(db, set()).add(key)
                db_changes.get(db, set()).discard(key)
            else:
                objects[key] = entry
                db_changes.setdefault(db, set()).add(key)
                db_removals.get(db, set()).discard(key)
        if events is not None:
            if entry.removed:
                if previous is not None:
                    events.append(ChangeEvent(ChangeKind.REMOVED, key, entry.version))
            else:
                kind = ChangeKind.ADDED if previous is None else ChangeKind.UPDATED
                events.append(ChangeEvent(kind, key, entry.version))

    by_database = view.by_database
    if db_changes or db_removals:
        by_database = dict(by_database)
        for db in set(db_changes) | set(db_removals):
            keys = (by_database.get(db, frozenset()) | db_changes.get(db, set())) - db_removals.get(
                db, set()
            )
            if keys:
                by_database[db] = frozenset(keys)
            else:
                by_database.pop(db, None)
    partitions = view.partitions
    if part_changes:
        partitions = dict(partitions)
        for table, updates in part_changes.items():
            new = partitions.get(table, PartitionSet()).changed(updates)
            if len(new):
                partitions[table] = new
            else:
                partitions.pop(table, None)
    return CacheView(
        view.service_id,
        version,
        objects if objects is not None else view.objects,
        by_database,
        partitions,
    )


class CatalogCache:
    """Holds the current :class:`CacheView`; the one writer replaces it.

    Thread-safety: :meth:`install` and :meth:`apply` must be called from one
    thread; :attr:`view` may be read from any thread at any time.
    """

    def __init__(self, *, emit_events: bool = True) -> None:
        self.view = CacheView()
        self.emit_events = emit_events
        """Whether install/apply report per-key events (off when nobody listens:
        a first sync of a million partitions then creates no million events)."""

    def install(
        self,
        service_id: str,
        version: int,
        entries: Iterable[Entry],
        packed: Iterable[PackedRun] = (),
    ) -> list[ChangeEvent]:
        """Replace the whole cache with a snapshot; return what changed versus before."""
        new = build_view(service_id, version, entries, packed)
        events = _diff(self.view, new) if self.emit_events else []
        self.view = new
        return events

    def apply(self, delta: Delta) -> list[ChangeEvent]:
        """Apply ``delta``; return the per-key change events.

        Raises:
            VersionGapError: ``delta`` does not start at the current version.
        """
        view = self.view
        if delta.from_version != view.version:
            raise VersionGapError(
                f"delta ({delta.from_version}, {delta.to_version}] does not follow "
                f"cached version {view.version}"
            )
        events: list[ChangeEvent] = []
        self.view = _with_changes(
            view, delta.to_version, delta.entries, events if self.emit_events else None
        )
        return events


def _diff(old: CacheView, new: CacheView) -> list[ChangeEvent]:
    events = []
    old_entries = {e.key: e for e in old.entries()}
    for entry in new.entries():
        before = old_entries.pop(entry.key, None)
        if before is None:
            events.append(ChangeEvent(ChangeKind.ADDED, entry.key, entry.version))
        elif before.payload != entry.payload:
            events.append(ChangeEvent(ChangeKind.UPDATED, entry.key, entry.version))
    events.extend(ChangeEvent(ChangeKind.REMOVED, key, new.version) for key in old_entries)
    return events


__all__ = [
    "BUCKETS",
    "CacheView",
    "CatalogCache",
    "ChangeEvent",
    "ChangeKind",
    "PackedPartitions",
    "PartitionSet",
    "Partitions",
    "build_view",
]
