"""An on-demand subscriber's cache: what was read, bounded, never older than what it
has been told (pure: no I/O, no clock; one lock for the reader and transport threads).

The subscriber follows catalogd's *invalidation* stream (every delta as keys and
versions, :data:`~subscriber.protocol.delta.INVALIDATED` for a change, a tombstone
for a removal) through the same :class:`~subscriber.sync.SyncMachine` as a replica,
with the same commit/count framing, gap detection and catch-ups; a "snapshot" is
empty (only the version to start from). Objects arrive separately, fetched from
catalogd at some catalog version ``A`` (the answer's). The rules:

* **applied version** ``V``: the cache has applied every invalidation up to ``V``
  (:attr:`OnDemandView.version`, what the machine compares deltas with).
* **An invalidation** of key ``k`` at version ``v`` evicts a cached ``k`` whose
  version is below ``v`` (a fetched object's version is that of its last change;
  an absence learnt at ``A`` counts as version ``A``), and is remembered in a
  bounded log (key -> newest invalidation) above :attr:`OnDemandCache.log_floor`.
* **A fetched answer** valid at ``A`` is cached only if it cannot be older than an
  invalidation already applied: when ``A >= V`` every invalidation it may miss is
  still to come and will evict it if newer; when ``A < V`` the log must reach back
  to ``A`` (else the answer is used once, not cached) and must hold no invalidation
  of ``k`` newer than the answer's version of ``k``. An answer from another service
  id than the cache's is never cached.
* **Listings** (a database's object keys, a table's partition keys, each key with
  its version) are cached whole when no invalidation of that group newer than the
  answer was applied (or ``A >= V``), then kept exact by the invalidations newer
  than the answer: a removal drops the key, a change adds or updates it.
* **A snapshot** (new service, or a gap the log cannot repair) empties the cache.
* **Bounded**: entries and listings count their bytes (payload, keys, a fixed
  overhead) against ``cap_bytes``; the least recently used go first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain

from subscriber.cache import ChangeEvent, ChangeKind
from subscriber.protocol.delta import INVALIDATED, Delta, Entry, VersionGapError
from subscriber.protocol.keys import PARTITION_PREFIX, database_of, split_partition_key
from subscriber.protocol.messages import PackedRun
from subscriber.protocol.packed import unpack_run

__all__ = [
    "DATABASES",
    "ENTRY_OVERHEAD",
    "LOG_LIMIT",
    "CacheStats",
    "OnDemandCache",
    "OnDemandView",
    "group_of",
]

ENTRY_OVERHEAD = 120
"""Bytes counted per cached entry beside its key and payload (dict slot, objects)."""
LOG_LIMIT = 200_000
"""Invalidations remembered for checking answers that were valid before them."""


@dataclass(frozen=True, slots=True)
class OnDemandView:
    """What the sync machine reads of the cache: the service and applied version."""

    service_id: str = ""
    version: int = 0


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    """Entries dropped to stay under the cap."""
    invalidated: int = 0
    """Cached entries an invalidation evicted."""
    refused: int = 0
    """Fetched entries not cached (older than an invalidation seen, or unverifiable)."""
    fetches: int = 0
    """Requests made to catalogd for what the cache lacked (kept by the subscriber)."""


DATABASES = "*"
"""The listing of every ``DATABASE`` key."""


def group_of(key: str) -> str:
    """The listing a key belongs to: ``db`` for a database's objects, ``db.table``
    (with a ``/``: ``db.table/``) for a table's partitions. A ``DATABASE`` key is in
    :data:`DATABASES` too."""
    if key.startswith(PARTITION_PREFIX):
        return split_partition_key(key)[0] + "/"
    return database_of(key)


def _groups_of(key: str) -> tuple[str, ...]:
    group = group_of(key)
    return (group, DATABASES) if key.startswith("DATABASE:") else (group,)


@dataclass(slots=True)
class _Cached:
    version: int
    payload: bytes | None  # None: absent at that version
    size: int


@dataclass(slots=True)
class _Listing:
    keys: dict[str, int]  # key -> version
    at: int  # valid at this version: invalidations up to it are in it already
    size: int
    generation: int = 0  # changes with every invalidation applied to it


class OnDemandCache:
    """See the module docstring. ``cap_bytes``: the most the cache holds."""

    def __init__(self, cap_bytes: int, *, log_limit: int = LOG_LIMIT) -> None:
        self.cap_bytes = cap_bytes
        self.view = OnDemandView()
        self.emit_events = True
        self.stats = CacheStats()
        self.log_floor = 0
        """Invalidations above this version are in the log."""
        self._log_limit = log_limit
        self._log: OrderedDict[str, int] = OrderedDict()  # key -> newest invalidation version
        self._groups: dict[str, int] = {}  # listing group -> newest invalidation version
        self._entries: OrderedDict[str, _Cached | _Listing] = OrderedDict()  # LRU, listings too
        self._bytes = 0
        self._lock = threading.Lock()

    # -- size ---------------------------------------------------------------------------

    @property
    def bytes(self) -> int:
        """Bytes counted now (at most ``cap_bytes`` after every change)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    # -- reads (any thread) -------------------------------------------------------------

    def get(self, key: str) -> Entry | None | bool:
        """The cached entry of ``key`` (a tombstone entry: known absent), or False: not
        cached (fetch it)."""
        with self._lock:
            cached = self._entries.get(key)
            if not isinstance(cached, _Cached):
                self.stats.misses += 1
                return False
            self._entries.move_to_end(key)
            self.stats.hits += 1
            return Entry(key, cached.version, cached.payload)

    def listing(self, group: str) -> dict[str, int] | None:
        """The cached listing of ``group`` (key -> version; see :func:`group_of`), or None."""
        found = self.listing_with_token(group)
        return None if found is None else found[0]

    def listing_with_token(self, group: str) -> tuple[dict[str, int], object] | None:
        """:meth:`listing` and a token that is equal exactly while it does not change."""
        with self._lock:
            found = self._entries.get(_listing_key(group))
            if not isinstance(found, _Listing):
                self.stats.misses += 1
                return None
            self._entries.move_to_end(_listing_key(group))
            self.stats.hits += 1
            return dict(found.keys), (id(found), found.at, found.generation)

    # -- fetched answers (any thread) ---------------------------------------------------

    def offer(self, service_id: str, at: int, entries: Iterable[Entry]) -> list[Entry]:
        """Cache what may be cached of ``entries`` fetched at catalog version ``at`` (a
        tombstone: absent at ``at``); returns those cached."""
        kept = []
        with self._lock:
            for entry in entries:
                version = at if entry.payload is None else entry.version
                if not self._may_cache(service_id, at, entry.key, version):
                    self.stats.refused += 1
                    continue
                size = len(entry.key) + len(entry.payload or b"") + ENTRY_OVERHEAD
                self._put(entry.key, _Cached(version, entry.payload, size))
                kept.append(entry)
            self._shrink()
        return kept

    def offer_listing(self, service_id: str, at: int, group: str, keys: dict[str, int]) -> bool:
        """Cache the whole listing of ``group`` (every key with its version) valid at
        ``at``. False: not cached (another service, or an invalidation of the group
        newer than ``at`` was applied already, or the log no longer tells)."""
        with self._lock:
            stale = at < self.view.version and (
                at < self.log_floor or self._groups.get(group, -1) > at
            )
            if service_id != self.view.service_id or stale:
                self.stats.refused += 1
                return False
            size = sum(len(k) + 16 for k in keys) + ENTRY_OVERHEAD
            self._put(_listing_key(group), _Listing(dict(keys), at, size))
            self._shrink()
        return True

    # -- invalidations (the transport thread, through the sync machine) -----------------

    def install(
        self,
        service_id: str,
        version: int,
        entries: Iterable[Entry],
        packed: Iterable[PackedRun] = (),
    ) -> list[ChangeEvent]:
        """A snapshot: an on-demand one is empty (nothing packed). Everything cached
        is dropped."""
        with self._lock:
            self._entries.clear()
            self._log.clear()
            self._groups.clear()
            self._bytes = 0
            self.log_floor = version
            self.view = OnDemandView(service_id, version)
            unpacked: dict[str, Entry] = {}
            for run in packed:
                unpack_run(run, unpacked)
            for entry in chain(entries, unpacked.values()):  # none from catalogd: for callers
                if entry.payload not in (None, INVALIDATED):
                    size = len(entry.key) + len(entry.payload or b"") + ENTRY_OVERHEAD
                    self._put(entry.key, _Cached(entry.version, entry.payload, size))
            self._shrink()
        return []

    def apply(self, delta: Delta) -> list[ChangeEvent]:
        """Apply invalidations (or whole entries: treated as invalidations)."""
        return self.advance(delta.from_version, delta.to_version, delta.entries)

    def advance(
        self, from_version: int, to_version: int, entries: Iterable[Entry]
    ) -> list[ChangeEvent]:
        """:meth:`apply` of the delta ``(from_version, to_version]`` of ``entries``, not
        built (as :meth:`subscriber.cache.CatalogCache.advance`)."""
        events: list[ChangeEvent] = []
        with self._lock:
            if from_version != self.view.version:
                raise VersionGapError(
                    f"invalidations ({from_version}, {to_version}] do not follow "
                    f"applied version {self.view.version}"
                )
            for entry in entries:
                self._invalidate(entry)
                if self.emit_events:
                    kind = ChangeKind.REMOVED if entry.payload is None else ChangeKind.UPDATED
                    events.append(ChangeEvent(kind, entry.key, entry.version))
            self.view = OnDemandView(self.view.service_id, to_version)
            while len(self._log) > self._log_limit:
                _, version = self._log.popitem(last=False)
                self.log_floor = max(self.log_floor, version)
        return events

    # -- internals (under the lock) -------------------------------------------------------

    def _may_cache(self, service_id: str, at: int, key: str, version: int) -> bool:
        if service_id != self.view.service_id:
            return False
        if at >= self.view.version:
            return True  # what it may miss is still to come, and evicts it if newer
        if at < self.log_floor:
            return False  # the log no longer reaches back to the answer
        return self._log.get(key, -1) <= version

    def _invalidate(self, entry: Entry) -> None:
        key, version = entry.key, entry.version
        self._log[key] = version
        self._log.move_to_end(key)
        cached = self._entries.get(key)
        if isinstance(cached, _Cached) and cached.version < version:
            self._drop(key)
            self.stats.invalidated += 1
        for group in _groups_of(key):
            self._groups[group] = version
            listing = self._entries.get(_listing_key(group))
            if isinstance(listing, _Listing) and version > listing.at:
                self._relist(listing, key, version, removed=entry.payload is None)

    def _relist(self, listing: _Listing, key: str, version: int, removed: bool) -> None:
        """A change newer than ``listing``'s answer: drop or add/update ``key``."""
        listing.generation += 1
        if removed:
            if listing.keys.pop(key, None) is not None:
                listing.size -= len(key) + 16
                self._bytes -= len(key) + 16
            return
        if key not in listing.keys:
            listing.size += len(key) + 16
            self._bytes += len(key) + 16
        listing.keys[key] = version

    def _put(self, key: str, value: _Cached | _Listing) -> None:
        if key in self._entries:
            self._drop(key)
        self._entries[key] = value
        self._bytes += value.size

    def _drop(self, key: str) -> None:
        value = self._entries.pop(key)
        self._bytes -= value.size

    def _shrink(self) -> None:
        while self._bytes > self.cap_bytes and self._entries:
            key = next(iter(self._entries))
            self._drop(key)
            self.stats.evictions += 1


def _listing_key(group: str) -> str:
    return "\0LIST:" + group
