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
  live in per-table sets of :data:`~subscriber.partitions.BUCKETS` hash buckets, so
  changing one partition of a 100k-partition table copies one bucket of ~1/64 of it
  (:mod:`subscriber.partitions`); the other objects live in one
  :class:`~subscriber.object_set.ObjectSet` of 256 buckets, and a database's key set
  is made anew only when a key comes or goes (a table created or dropped), not when
  one changes.
* Entries keep the encoded payload; decoding happens on read, in the reader.
* A snapshot's partitions may arrive packed (:mod:`subscriber.protocol.packed`): a
  table's partitions then stay in the compressed frames they came in
  (:class:`~subscriber.partitions.PackedPartitions`, ~50 B per partition) until the
  table is first read, which unpacks them once; deltas go to an overlay meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from operator import attrgetter

from subscriber.object_set import ObjectSet
from subscriber.partitions import BUCKETS, PackedPartitions, Partitions, PartitionSet
from subscriber.protocol.delta import Delta, Entry, VersionGapError
from subscriber.protocol.keys import PARTITION_PREFIX, database_of, split_partition_key
from subscriber.protocol.messages import PackedRun


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
    objects: Mapping[str, Entry] = field(default_factory=ObjectSet)
    """Every non-partition key -> entry (an :class:`~subscriber.object_set.ObjectSet`
    in a view the cache made: a delta copies what it changes, not every object)."""
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
        table_set = PackedPartitions.of(tuple(table_runs))
        loose = partitions.get(table)  # partitions of the table that came unpacked
        partitions[table] = table_set if loose is None else table_set.changed(dict(loose.items()))
    return replace(view, partitions=partitions)


# The one-object update builds its event and its view through their slots: a frozen
# dataclass's __init__ costs twice the time, and this is every change's path.
_new = object.__new__
_set_kind, _set_key, _set_event_version = (
    vars(ChangeEvent)[f].__set__ for f in ChangeEvent.__slots__
)
_set_service_id, _set_version, _set_objects, _set_by_database, _set_partitions = (
    vars(CacheView)[f].__set__ for f in CacheView.__slots__
)
_UPDATED = ChangeKind.UPDATED


def _updated(key: str, version: int) -> ChangeEvent:
    """``ChangeEvent(ChangeKind.UPDATED, key, version)``."""
    event = _new(ChangeEvent)
    _set_kind(event, _UPDATED)
    _set_key(event, key)
    _set_event_version(event, version)
    return event


def _view(
    service_id: str,
    version: int,
    objects: Mapping[str, Entry],
    by_database: Mapping[str, frozenset[str]],
    partitions: Mapping[str, Partitions],
) -> CacheView:
    """``CacheView(service_id, version, objects, by_database, partitions)``."""
    view = _new(CacheView)
    _set_service_id(view, service_id)
    _set_version(view, version)
    _set_objects(view, objects)
    _set_by_database(view, by_database)
    _set_partitions(view, partitions)
    return view


def _with_changes(
    view: CacheView,
    version: int,
    entries: Iterable[Entry],
    events: list[ChangeEvent] | None,
) -> CacheView:
    before = view.objects
    if type(before) is not ObjectSet:  # a view the cache made holds one: no call
        before = ObjectSet.of(before)
    if type(entries) is tuple and len(entries) == 1:  # most deltas: one object updated
        entry = entries[0]
        key = entry.key
        if entry.payload is not None and not key.startswith(PARTITION_PREFIX):
            objects = before.replaced(key, entry)
            if objects is not None:
                if events is not None:
                    events.append(_updated(key, entry.version))
                return _view(view.service_id, version, objects, view.by_database, view.partitions)
    updates: dict[str, Entry | None] = {}  # non-partition key -> entry (None: removed)
    part_changes: dict[str, dict[str, Entry | None]] = {}
    previous: Entry | None = None
    for entry in entries:
        key = entry.key
        if key.startswith(PARTITION_PREFIX):
            table, name = split_partition_key(key)
            if events is not None:  # a packed table is unpacked only to tell events
                old = view.partitions.get(table)
                previous = old.get(name) if old is not None else None
            part_changes.setdefault(table, {})[name] = entry  # a tombstone removes
        else:
            if events is not None:
                previous = updates[key] if key in updates else before.get(key)
            updates[key] = None if entry.removed else entry
        if events is not None:
            if entry.removed:
                if previous is not None:
                    events.append(ChangeEvent(ChangeKind.REMOVED, key, entry.version))
            else:
                kind = ChangeKind.ADDED if previous is None else ChangeKind.UPDATED
                events.append(ChangeEvent(kind, key, entry.version))
    objects, came, went = before.changed(updates)
    by_database = view.by_database
    if came or went:  # a database's key set changes when a key comes or goes, not on updates
        added: dict[str, set[str]] = {}
        gone: dict[str, set[str]] = {}
        for moved, into in ((came, added), (went, gone)):
            for key in moved:
                into.setdefault(database_of(key), set()).add(key)
        by_database = dict(by_database)
        for db in added.keys() | gone.keys():
            keys = (by_database.get(db, frozenset()) | added.get(db, set())) - gone.get(db, set())
            if keys:
                by_database[db] = frozenset(keys)
            else:
                by_database.pop(db, None)
    partitions = view.partitions
    if part_changes:
        partitions = dict(partitions)
        for table, part_updates in part_changes.items():
            new = partitions.get(table, PartitionSet()).changed(part_updates)
            if isinstance(new, PartitionSet) and not new.size:
                partitions.pop(table, None)
            else:  # a packed table's size is known once a read unpacks it
                partitions[table] = new
    return CacheView(
        view.service_id,
        version,
        objects,
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
        return self.advance(delta.from_version, delta.to_version, delta.entries)

    def advance(
        self, from_version: int, to_version: int, entries: Iterable[Entry]
    ) -> list[ChangeEvent]:
        """:meth:`apply` of the delta ``(from_version, to_version]`` of ``entries`` (its
        checked range and form: newest per key, oldest first), without building the
        :class:`Delta` (the per-change path)."""
        view = self.view
        if from_version != view.version:
            raise VersionGapError(
                f"delta ({from_version}, {to_version}] does not follow "
                f"cached version {view.version}"
            )
        events: list[ChangeEvent] = []
        self.view = _with_changes(view, to_version, entries, events if self.emit_events else None)
        return events


_VERSION = attrgetter("version")


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
    # A snapshot comes database by database, not in version order: listeners get the
    # events of an install in version order, as they get a delta's.
    events.sort(key=_VERSION)
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
