"""The versioned catalog: the pure core of catalogd.

A :class:`Catalog` maps keys (:mod:`subscriber.protocol.keys`) to opaque payloads and
gives every change the next value of one global, monotonic ``catalog_version``.
It imports no sockets, threads, clocks or databases; adapters feed it changes
and publish the deltas it returns.

Invariants:

* ``version`` only grows. Each changed key gets its own version; a commit of
  ``n`` real changes advances ``version`` by exactly ``n``.
* A change whose payload equals the current one is not a change: it gets no
  version and appears in no delta (unchanged reloads are free).
* Removing a key leaves a tombstone carrying the removal's version, so a delta
  can say "gone". At most ``max_tombstones`` are kept; dropping the oldest one
  raises ``floor`` to its version.
* ``delta_since(v)`` for ``floor <= v <= version`` returns every change in
  ``(v, version]`` (the newest entry per key); applying it to a copy at ``v``
  yields exactly the live entries at ``version``. For ``v < floor`` it raises
  :class:`DeltaUnavailableError`: the caller needs a snapshot.
* Entries are kept in version order (dict insertion order, re-inserted on
  change), so a delta costs time proportional to its size, not the catalog's;
  so is each group of a database's live entries (:meth:`database_view`).
* ``changed_version_of(db)`` is the version of the newest change (add, update or
  removal) to database ``db``: equal values mean an unchanged database, so
  encodings of it can be kept and reused (catalogd's snapshot cache).
* A :class:`DatabaseView` never changes: a database's live entries are kept in
  groups (its heads, i.e. everything but partitions, and each table's partitions),
  and after a view was taken the first write copies the map of groups (O(tables))
  and the first write to each group copies that group (O(its size)): a view costs
  O(1) to take, and a write after it at most one table's partitions in copies.

Not thread-safe: one owner (catalogd's catalog thread) calls every method.

Why one module of over 400 lines: the entries, their indexes (by database, table,
type) and the copy-on-write views over them change together in one commit loop, the
hot path of every load; splitting them would spread one invariant over modules.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from types import MappingProxyType
from typing import NamedTuple

from subscriber.protocol.delta import Delta, Entry
from subscriber.protocol.errors import CatalogError
from subscriber.protocol.keys import (
    PARTITION_PREFIX,
    database_key,
    database_of,
    split_partition_key,
    table_key,
)

_PARTITION = PARTITION_PREFIX


def _place(key: str) -> tuple[str, str, str | None]:
    """``(object type, database, "db.t" for a partition key else None)`` of ``key``."""
    table = split_partition_key(key)[0] if key.startswith(_PARTITION) else None
    return key.partition(":")[0], database_of(key), table


def _discard(index: dict[str, set[str]], group: str, key: str) -> None:
    members = index[group]
    members.discard(key)
    if not members:
        del index[group]


_NO_GROUPS: Mapping[str, Mapping[str, Entry]] = MappingProxyType({})


_EMPTY: frozenset[str] = frozenset()


class DeltaUnavailableError(CatalogError):
    """The requested delta reaches back past the catalog's oldest tombstone."""


class DatabaseView(NamedTuple):
    """The live entries of one database as of ``changed`` (the version of its newest
    change), group by group; never changes (see the module's invariants). A tuple,
    made with ``tuple.__new__``: a join may take one per database, so it must be cheap."""

    db: str
    changed: int
    groups: Mapping[str, Mapping[str, Entry]]
    """Its live entries by group (``""``: its heads; ``"db.table"``: that table's
    partitions), each group's in version order."""
    size: int
    """How many live entries it holds."""
    token: int
    """Identifies the map read (for :meth:`Catalog.release_view`)."""

    def entries(self) -> Iterator[Entry]:
        """Every live entry of the view, group by group."""
        return chain.from_iterable(group.values() for group in self.groups.values())


_view = tuple.__new__


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Every live entry at ``version``, in version order."""

    version: int
    entries: tuple[Entry, ...]


class Catalog:
    """A versioned map from object keys to payloads, with tombstones and deltas.

    Args:
        version: the version to start from (catalogd passes the persisted
            high-water mark so versions never go backwards across restarts).
        max_tombstones: how many tombstones to keep for catch-up deltas.
    """

    def __init__(self, *, version: int = 0, max_tombstones: int = 100_000) -> None:
        if version < 0 or max_tombstones < 0:
            raise ValueError("version and max_tombstones must be non-negative")
        self._version = version
        self._floor = version
        self._max_tombstones = max_tombstones
        # key -> newest entry (live or tombstone), in increasing version order.
        self._entries: dict[str, Entry] = {}
        # tombstoned key -> removal version, oldest first, for bounded pruning.
        self._tombstones: OrderedDict[str, int] = OrderedDict()
        # database -> group ("": its heads, "db.table": that table's partitions) ->
        # key -> live entry, each group in version order, so database-wide operations
        # need no full scan; copied on write while a view may read them.
        self._by_database: dict[str, dict[str, dict[str, Entry]]] = {}
        self._sizes: dict[str, int] = {}  # database -> live entries
        self._shared: dict[str, int] = {}  # database -> views of its current map out
        # database -> groups copied since its map was last copied for a view (absent:
        # no view was ever taken of it, so no group is shared).
        self._fresh: dict[str, set[str]] = {}
        # database -> the version of its newest change (removals included), in that
        # order (re-inserted on change), so the databases changed lately are at the end.
        self._changed: dict[str, int] = {}
        self._last_changed: str | None = None  # the database at the end of _changed
        # "db.table" -> live partition keys, so a table refresh needs no scan.
        self._partitions: dict[str, set[str]] = {}
        # database -> live keys other than partitions (a listing of its objects).
        self._heads: dict[str, set[str]] = {}
        # object type (key prefix) -> live count, for status and metrics.
        self._counts: dict[str, int] = {}
        self._live = 0

    def skip_to(self, version: int) -> None:
        """Renumber every live entry above ``version`` (call once, before serving).

        A catalogd taking over as the active (HA) loaded its catalog on its own, so
        its entries' versions mean nothing to subscribers of the old active: they
        are given ``version + 1``, ``version + 2``, ... in their current order, so
        every version a subscriber sees after the takeover, of the snapshot and of
        each entry in it, is above every version the old active may have published.
        Tombstones go and the floor moves up: no delta spans the gap, subscribers
        of this service take a snapshot.
        """
        live = [e for e in self._entries.values() if e.payload is not None]
        self._entries = {}
        self._tombstones.clear()
        self._by_database, self._shared, self._changed, self._fresh = {}, {}, {}, {}
        self._sizes = {}
        self._last_changed = None
        for offset, old in enumerate(live, start=1):
            entry = Entry(old.key, version + offset, old.payload)
            self._entries[entry.key] = entry
            db = database_of(entry.key)
            group = split_partition_key(entry.key)[0] if entry.key.startswith(_PARTITION) else ""
            self._by_database.setdefault(db, {}).setdefault(group, {})[entry.key] = entry
            self._sizes[db] = self._sizes.get(db, 0) + 1
            self._changed.pop(db, None)
            self._changed[db] = entry.version
        self._version = version + len(live)
        self._floor = self._version

    # -- reading -----------------------------------------------------------------

    @property
    def version(self) -> int:
        """The version of the newest change (or the start version)."""
        return self._version

    @property
    def floor(self) -> int:
        """The oldest version :meth:`delta_since` can start from."""
        return self._floor

    def __len__(self) -> int:
        """The number of live objects."""
        return self._live

    def __contains__(self, key: object) -> bool:
        entry = self._entries.get(key)  # type: ignore[call-overload]
        return entry is not None and entry.payload is not None

    def get(self, key: str) -> Entry | None:
        """The live entry for ``key``, or None when absent or removed."""
        entry = self._entries.get(key)
        return entry if entry is not None and entry.payload is not None else None

    def keys_of_database(self, db: str) -> frozenset[str]:
        """Live keys that belong to database ``db`` (``""`` for global objects)."""
        return frozenset(self._keys_of(db))

    def _keys_of(self, db: str) -> Iterator[str]:
        return chain.from_iterable(self._by_database.get(db, {}).values())

    def databases(self) -> list[str]:
        """Every database holding a live key (``""``: global objects), sorted."""
        return sorted(self._by_database)

    def changed_version_of(self, db: str) -> int:
        """The version of the newest change to database ``db`` (0: never changed)."""
        return self._changed.get(db, 0)

    def database_view(self, db: str) -> DatabaseView:
        """Database ``db``'s live entries now, as a view that never changes. O(1): the
        next write to ``db`` copies its map of groups first (O(tables)) unless every
        view of it was given back (:meth:`release_view`), and the first write to each
        group after that copy copies the group (O(its size))."""
        groups = self._by_database.get(db)
        if groups is None:
            return _view(DatabaseView, (db, self.changed_version_of(db), _NO_GROUPS, 0, 0))
        self._shared[db] = self._shared.get(db, 0) + 1
        proxy = MappingProxyType(groups)
        return _view(DatabaseView, (db, self._changed[db], proxy, self._sizes[db], id(groups)))

    def databases_changed_since(self, version: int) -> list[str]:
        """The databases changed (entries added, updated or removed) after ``version``,
        newest change first: O(their number), not the catalog's."""
        names = []
        for db, changed in reversed(self._changed.items()):
            if changed <= version:
                break
            names.append(db)
        return names

    def release_view(self, view: DatabaseView) -> None:
        """``view`` is read no more (call once per view): when no view of its database's
        current map is left, writes to that database need no copy."""
        current = self._by_database.get(view.db)
        if current is None or id(current) != view.token or view.db not in self._shared:
            return  # an older map (already copied away from): nothing to do
        self._shared[view.db] -= 1
        if not self._shared[view.db]:
            del self._shared[view.db]

    def size_of_database(self, db: str) -> int:
        """How many live keys database ``db`` has (``""``: global objects), without copying."""
        return self._sizes.get(db, 0)

    def counts_by_type(self) -> dict[str, int]:
        """Live objects per type (``TABLE``, ``HDFS_PARTITION``, ...)."""
        return {kind: n for kind, n in self._counts.items() if n}

    def partition_keys(self, db: str, table: str) -> frozenset[str]:
        """Live ``HDFS_PARTITION`` keys of table ``db.table``."""
        return frozenset(self._partitions.get(f"{db.lower()}.{table.lower()}", ()))

    def table_keys(self, db: str, table: str) -> frozenset[str]:
        """Every live key of one table or view: header (TABLE or VIEW) and partitions."""
        heads = {table_key(db, table), table_key(db, table, view=True)}
        return self.partition_keys(db, table) | {k for k in heads if k in self}

    def head_keys(self, db: str) -> Collection[str]:
        """Live keys of database ``db`` other than partitions (its object, tables, views,
        functions), not copied: read it on the thread that commits, before the next commit."""
        return self._heads.get(db, _EMPTY)

    def database_keys(self) -> list[str]:
        """The live ``DATABASE`` keys (one look per database, no scan of its objects)."""
        return [key for key in map(database_key, self._heads) if key in self]

    def partition_key_set(self, db: str, table: str) -> Collection[str]:
        """:meth:`partition_keys` not copied (same caveat as :meth:`head_keys`)."""
        return self._partitions.get(f"{db.lower()}.{table.lower()}", _EMPTY)

    def keys_with_prefix(self, prefix: str, *, db: str | None = None) -> list[str]:
        """Live keys starting with ``prefix``; ``db`` narrows the scan to one database."""
        pool: Iterable[str] = self._keys_of(db) if db is not None else self._entries
        return sorted(k for k in pool if k.startswith(prefix) and k in self)

    def live_entries(self) -> Iterator[Entry]:
        """Live entries in version order."""
        return (e for e in self._entries.values() if e.payload is not None)

    def live_entries_of(self, databases: Iterable[str]) -> list[Entry]:
        """The live entries of ``databases`` (``""``: global objects), by the database
        index: the work is what they hold, not the catalog's size."""
        by_db = self._by_database
        return [e for db in databases for g in by_db.get(db, {}).values() for e in g.values()]

    def snapshot(self) -> Snapshot:
        return Snapshot(self._version, tuple(self.live_entries()))

    def delta_since(self, version: int) -> Delta:
        """Every change after ``version``, newest entry per key, in version order.

        Raises:
            DeltaUnavailableError: ``version`` is older than :attr:`floor` or
                newer than :attr:`version`.
        """
        if version < self._floor or version > self._version:
            raise DeltaUnavailableError(
                f"no delta from version {version}: this catalog serves "
                f"[{self._floor}, {self._version}]"
            )
        newer: list[Entry] = []
        for entry in reversed(self._entries.values()):
            if entry.version <= version:
                break
            newer.append(entry)
        newer.reverse()
        return Delta(version, self._version, tuple(newer))

    # -- writing -----------------------------------------------------------------

    def commit(
        self, changes: Mapping[str, bytes | None] | Iterable[tuple[str, bytes | None]]
    ) -> Delta:
        """Apply changes (key -> payload, None removes) and return what changed.

        Unchanged payloads and removals of absent keys are skipped. When a key
        appears twice the last value wins. Returns the delta from the version
        before the call; it is empty (``from == to``) when nothing changed.
        """
        items = changes.items() if isinstance(changes, Mapping) else changes
        start = self._version
        applied: list[Entry] = []
        entries = self._entries
        # A table's load commits ~100,000 partitions at once on the server thread: the
        # loop keeps the common case (a new live key) inline, and the place of every
        # partition of one table is worked out once.
        places: dict[str, tuple[str, str, str | None]] = {}
        for key, payload in dict(items).items():
            current = entries.get(key)
            current_payload = current.payload if current is not None else None
            if payload == current_payload:
                continue
            self._version += 1
            entry = Entry(key, self._version, payload)
            applied.append(entry)
            if current is not None:
                del entries[key]  # re-inserted below: dict order stays version order
            entries[key] = entry
            if key.startswith(_PARTITION):
                prefix = key[: key.find(":", len(_PARTITION))]
                place = places.get(prefix)
                if place is None:
                    place = places[prefix] = _place(key)
            else:
                place = _place(key)
            self._index(key, entry, place, was_live=current_payload is not None)
        self._prune_tombstones()
        return Delta(start, self._version, tuple(applied))

    def _index(
        self, key: str, entry: Entry, place: tuple[str, str, str | None], *, was_live: bool
    ) -> None:
        """Bring the tombstones, counts and indexes up to date with ``entry`` (just
        stored under ``key``, whose :func:`_place` is ``place``)."""
        kind, db, table = place
        if db != self._last_changed:  # re-inserted: the order stays that of the changes
            self._changed.pop(db, None)
            self._last_changed = db
        self._changed[db] = entry.version
        groups = self._by_database.get(db)
        if groups is None:
            groups = self._by_database[db] = {}
            self._fresh.pop(db, None)  # no view reads any group of a new map
        elif self._shared and db in self._shared:  # a view reads this map: copy on write
            groups = self._by_database[db] = dict(groups)
            del self._shared[db]
            self._fresh[db] = set()
        name = table if table is not None else ""
        members = groups.get(name)
        if members is None:
            members = groups[name] = {}
            if db in self._fresh:
                self._fresh[db].add(name)
        elif self._fresh and db in self._fresh and name not in self._fresh[db]:
            members = groups[name] = dict(members)  # a view may read it: copy on write
            self._fresh[db].add(name)
        if was_live:
            del members[key]  # re-inserted below if live: version order within the database
        if entry.payload is None:
            self._tombstones[key] = entry.version
            self._tombstones.move_to_end(key)
            if was_live:
                self._live -= 1
                self._counts[kind] -= 1
                self._sizes[db] -= 1
                if not members:
                    del groups[name]
                if not groups:
                    del self._by_database[db], self._sizes[db]
                if table is not None:
                    _discard(self._partitions, table, key)
                else:
                    _discard(self._heads, db, key)
        else:
            members[key] = entry
            if self._tombstones:
                self._tombstones.pop(key, None)
            if not was_live:
                self._live += 1
                self._sizes[db] = self._sizes.get(db, 0) + 1
                self._counts[kind] = self._counts.get(kind, 0) + 1
                index = self._partitions if table is not None else self._heads
                index.setdefault(table if table is not None else db, set()).add(key)

    def _prune_tombstones(self) -> None:
        while len(self._tombstones) > self._max_tombstones:
            key, removed_at = self._tombstones.popitem(last=False)
            del self._entries[key]
            # A copy older than this removal can no longer learn of it.
            self._floor = max(self._floor, removed_at)
