"""Reads of an on-demand subscriber: a lazy view that fetches what the cache lacks.

:class:`LazyView` answers the same reads as a replica's
:class:`~subscriber.cache.CacheView` (``get``, ``keys_of``, ``objects``,
``by_database``, ``partitions_of``), so :mod:`subscriber.reads` and the public API
work unchanged over it: a read the :class:`~subscriber.ondemand.cache.OnDemandCache`
holds is answered at once; a miss is fetched from catalogd over the subscriber's
DEALER (:class:`Fetcher`, ``TRequest.fetch``) and offered to the cache, which keeps
it when the version rules allow. A table's partitions are listed by name first (a
page of keys at a time) and only those a read needs are fetched (by name, at most
:data:`~catalogd.server.fetches.MAX_KEYS` at once).

With catalogd unreachable, what the cache holds is still answered; a miss raises
:class:`~subscriber.protocol.errors.UnavailableError` after ``timeout_s``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import idl
from subscriber.ondemand.cache import DATABASES, OnDemandCache
from subscriber.protocol import wire
from subscriber.protocol.delta import Entry
from subscriber.protocol.errors import UnavailableError
from subscriber.protocol.keys import (
    GLOBAL,
    database_of,
    parse_partition_name,
    partition_key,
    split_partition_key,
)
from subscriber.requests import Answered

__all__ = ["BATCH", "PAGE", "Fetcher", "LazyView"]

svc = idl.catalog_service

BATCH = 1_000
"""Keys fetched in one request (catalogd's limit)."""
PAGE = 10_000
"""Keys listed in one request (catalogd's limit)."""

Send = Callable[[Any, Answered], None]
"""Queue a TRequest and the callback its TResponse (or None) goes to."""


class Fetcher:
    """Blocking fetches over the transport: ``send`` queues a request with a callback."""

    def __init__(self, send: Send, timeout_s: float) -> None:
        self._send = send
        self.timeout_s = timeout_s
        self.fetches = 0

    def keys(self, keys: list[str]) -> tuple[str, int, list[Entry]]:
        """(service id, version valid at, entries; a tombstone: absent)."""
        answer = self._ask(svc.TFetchRequest(keys=keys))
        return answer.service_id, answer.version, list(wire.entries_from_thrift(answer.entries))

    def listing(self, db: str, table: str | None) -> tuple[str, int, dict[str, int]] | None:
        """(service id, version, key -> version) of a whole group; None when it changed
        between pages (the caller may use it once, not cache it)."""
        keys: dict[str, int] = {}
        offset, first = 0, None
        while True:
            answer = self._ask(
                svc.TFetchRequest(list_db=db, list_table=table, offset=offset, limit=PAGE)
            )
            first = first or (answer.service_id, answer.version)
            keys.update((e.key, e.version) for e in answer.entries)
            offset += len(answer.entries)
            if not answer.entries or offset >= (answer.total or 0):
                break
        if (answer.service_id, answer.version) != first:
            return None
        return first[0], first[1], keys

    def _ask(self, request: Any) -> Any:
        done = threading.Event()
        box: list[Any] = []

        def answered(response: Any) -> None:
            box.append(response)
            done.set()

        self.fetches += 1
        self._send(svc.TRequest(fetch=request), answered)
        if not done.wait(self.timeout_s):
            raise UnavailableError(f"catalogd did not answer a fetch within {self.timeout_s:g}s")
        response = box[0]
        if response is None or response.fetched is None:
            why = "no answer (disconnected)" if response is None else response.status.message
            raise UnavailableError(f"catalogd could not answer a fetch: {why}")
        return response.fetched


class LazyView:
    """A replica view's reads over an on-demand cache (see the module docstring)."""

    def __init__(self, cache: OnDemandCache, fetcher: Fetcher) -> None:
        self._cache = cache
        self._fetch = fetcher
        self.service_id = cache.view.service_id
        self.version = cache.view.version
        self.objects: Mapping[str, Entry] = _Objects(self)
        self.by_database: Mapping[str, frozenset[str]] = _Databases(self)

    def get(self, key: str) -> Entry | None:
        found = self._cache.get(key)
        if found is False:
            found = self.fetch([key])[0]
        assert isinstance(found, Entry)
        return None if found.payload is None else found

    def fetch(self, keys: list[str]) -> list[Entry]:
        """``keys`` fetched (a tombstone: absent) and offered to the cache."""
        out = []
        for start in range(0, len(keys), BATCH):
            service_id, at, entries = self._fetch.keys(keys[start : start + BATCH])
            self._cache.offer(service_id, at, entries)
            out += entries
        return out

    def keys_of(self, db: str) -> frozenset[str]:
        return frozenset(self._listing(db, db, None))

    def partitions_of(self, table: str) -> LazyPartitions:
        return LazyPartitions(self, table)

    def _listing(self, group: str, db: str, table: str | None) -> dict[str, int]:
        return self._listing_with_token(group, db, table)[0]

    def _listing_with_token(
        self, group: str, db: str, table: str | None
    ) -> tuple[dict[str, int], object]:
        found = self._cache.listing_with_token(group)
        if found is not None:
            return found
        listed = self._fetch.listing(db, table)
        if listed is None:  # changed while paging: once more, then use it uncached
            listed = self._fetch.listing(db, table)
        if listed is None:
            return {}, object()
        service_id, at, keys = listed
        self._cache.offer_listing(service_id, at, group, keys)
        found = self._cache.listing_with_token(group)
        return found if found is not None else (keys, object())


class LazyPartitions:
    """A table's partitions: names listed once, entries fetched as reads need them."""

    def __init__(self, view: LazyView, table: str) -> None:
        self._view = view
        self._table = table
        db, _, name = table.partition(".")
        keys, self.token = view._listing_with_token(f"{table}/", db, name)
        """Equal for two reads exactly when the table's partition names did not change."""
        self._names = [split_partition_key(k)[1] for k in keys]

    def names(self) -> list[str]:
        """The partition names, without fetching any partition."""
        return list(self._names)

    def resolve(self, names: list[str]) -> dict[str, Entry]:
        """name -> entry of ``names`` (cached, or fetched in batches); gone ones left out."""
        return dict(self._entries(names))

    def __len__(self) -> int:
        return len(self._names)

    def get(self, name: str) -> Entry | None:
        db, table = self._table.split(".", 1)
        return self._view.get(partition_key(db, table, name))

    def items(self) -> Iterator[tuple[str, Entry]]:
        return iter(self._entries(self._names))

    def matching(self, spec: Mapping[str, str]) -> list[tuple[str, Entry]]:
        """Like :meth:`PartitionSet.matching`, evaluated over the names: only the
        partitions that match are fetched."""
        pairs = set(spec.items())
        wanted = [n for n in self._names if pairs <= set(parse_partition_name(n))]
        return self._entries(wanted)

    def _entries(self, names: list[str]) -> list[tuple[str, Entry]]:
        db, table = self._table.split(".", 1)
        keys = {partition_key(db, table, n): n for n in names}
        found: dict[str, Entry] = {}
        missing = []
        for key in keys:
            cached = self._view._cache.get(key)
            if cached is False:
                missing.append(key)
            elif isinstance(cached, Entry) and cached.payload is not None:
                found[key] = cached
        for entry in self._view.fetch(missing):
            if entry.payload is not None:
                found[entry.key] = entry
        return [(keys[k], e) for k, e in found.items()]


class _Objects(Mapping[str, Entry]):
    """``view.objects``: a non-partition key's entry, fetched on a miss."""

    def __init__(self, view: LazyView) -> None:
        self._view = view

    def __getitem__(self, key: str) -> Entry:
        entry = self._view.get(key)
        if entry is None:
            raise KeyError(key)
        return entry

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._view.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        raise TypeError("an on-demand view does not enumerate every object")

    def __len__(self) -> int:
        raise TypeError("an on-demand view does not count every object")


class _Databases(Mapping[str, frozenset[str]]):
    """``view.by_database``: the databases (listed), each one's keys on access."""

    def __init__(self, view: LazyView) -> None:
        self._view = view

    def _names(self) -> list[str]:
        keys = self._view._listing(DATABASES, DATABASES, None)
        return sorted({database_of(k) for k in keys} | {GLOBAL})

    def __getitem__(self, db: str) -> frozenset[str]:
        return self._view.keys_of(db)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())
