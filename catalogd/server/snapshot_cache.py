"""Encoded snapshot chunks, shared by every join while their database is unchanged.

Pure: no sockets, threads or clocks; used by the server thread only (not
thread-safe).

A snapshot is streamed database by database (:mod:`catalogd.server.snapshots`).
:class:`EncodedDatabase` holds one database's chunks: each is the Thrift encoding
of a ``TSnapshotChunk.entries`` field (at most ``chunk_size`` entries, in the
database's version order), deflated once into a
:class:`~subscriber.protocol.segments.Segment`. Chunks are encoded on demand,
one per call, the first time any join needs them, from a
:class:`~catalogd.core.catalog.DatabaseView` taken when the first join asked
(O(1); the catalog copies the database's map before a write if the view is still
being read). Joins that come later, or run alongside, read the same chunks:
the Nth join of an unchanged database costs a memory copy per chunk.

Invariants:

* An ``EncodedDatabase`` holds exactly the live entries of ``db`` at the version
  ``changed`` (its newest change): :meth:`SnapshotCache.database` returns a
  cached one only while ``catalog.changed_version_of(db)`` still equals it, so a
  commit to ``db`` invalidates it and a join never mixes two states of a database.
* The cache keeps at most ``max_bytes`` of deflated chunks (least recently used
  databases go first; a job streaming an evicted one keeps its own reference).
  Measured: about 51 B per partition (``bench/join_bench.py --stall``), so a
  1M-partition catalog needs ~50 MiB; the default bound is 256 MiB.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Callable, Iterator
from itertools import islice

import idl
from catalogd.core.catalog import Catalog, DatabaseView
from subscriber.protocol import codec, wire
from subscriber.protocol.delta import Entry
from subscriber.protocol.segments import Segment, deflate_segment

svc = idl.catalog_service
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
# encode(TSnapshotChunk(service_id="", seq=0, entries=...)) starts with the 7 bytes of
# field 1 (type, id, length 0) and the 7 of field 2 (type, id, i32) and ends with the
# struct's stop byte; what lies between is the entries field, which is what we keep.
_HEAD, _TAIL = 14, 1


def entries_field(entries: list[Entry]) -> bytes:
    """The binary encoding of a ``TSnapshotChunk.entries`` field (header and list), as
    ``codec.encode`` writes it (tested), for live entries; built here without Thrift
    structs, which cost most of the encoding (~4 us per entry, against ~1)."""
    parts = [_LIST_HEAD, _COUNT.pack(len(entries))]
    append = parts.append
    for entry in entries:
        key, payload = entry.key.encode(), entry.payload
        if payload is None:  # not in a snapshot; encoded the slow, general way
            append(_thrift_entry(entry))
            continue
        append(_KEY.pack(b"\x0b\x00\x01", len(key)) + key)
        append(_VERSION_OBJECT.pack(b"\x0a\x00\x02", entry.version, b"\x0b\x00\x03", len(payload)))
        append(payload)
        append(b"\x00")
    return b"".join(parts)


def thrift_entries_field(entries: list[Entry]) -> bytes:
    """:func:`entries_field` through thriftpy2's encoder (the reference it is tested on)."""
    chunk = svc.TSnapshotChunk(
        service_id="", seq=0, entries=[wire.entry_to_thrift(e) for e in entries]
    )
    return codec.encode(chunk, check=False)[_HEAD:-_TAIL]


def _thrift_entry(entry: Entry) -> bytes:
    return codec.encode(wire.entry_to_thrift(entry), check=False)


# Thrift binary: field header = type byte + i16 id; string/binary = i32 length + bytes.
_LIST_HEAD = b"\x0f\x00\x03\x0c"  # field 3, a list of structs
_COUNT = struct.Struct(">i")
_KEY = struct.Struct(">3si")  # field 1 (string): header, length
_VERSION_OBJECT = struct.Struct(">3sq3si")  # field 2 (i64), then field 3's header, length


class EncodedDatabase:
    """One database's snapshot chunks as of version ``changed``, encoded on demand."""

    def __init__(
        self,
        view: DatabaseView,
        chunk_size: int,
        release: Callable[[DatabaseView], None],
        grew: Callable[[EncodedDatabase, int], None],
    ) -> None:
        self.db, self.changed, self.chunk_size = view.db, view.changed, chunk_size
        self.chunks: list[tuple[Segment, int]] = []
        """(deflated entries field, its number of entries), in order."""
        self.nbytes = 0
        self._left = len(view.entries)
        self._view: DatabaseView | None = view
        self._values: Iterator[Entry] = iter(view.entries.values())
        self._release, self._grew = release, grew
        self._finish_if_done()

    @property
    def complete(self) -> bool:
        return self._view is None

    def chunk(self, i: int) -> tuple[Segment, int] | None:
        """Chunk ``i`` (encoding it now if it is the next one), or None past the last.
        Encodes at most one chunk per call: callers ask in order."""
        if i == len(self.chunks) and self._left:
            batch = list(islice(self._values, min(self.chunk_size, self._left)))
            segment = deflate_segment(entries_field(batch))
            self.chunks.append((segment, len(batch)))
            self._left -= len(batch)
            self.nbytes += len(segment.deflated)
            self._grew(self, len(segment.deflated))
            self._finish_if_done()
        return self.chunks[i] if i < len(self.chunks) else None

    def _finish_if_done(self) -> None:
        if not self._left and self._view is not None:
            view, self._view = self._view, None
            self._values = iter(())
            self._release(view)


class SnapshotCache:
    """Per database, the :class:`EncodedDatabase` of its current state, within a bound
    of ``max_bytes`` deflated bytes (0: keep nothing, share nothing between joins)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError("max_bytes must be non-negative")
        self.max_bytes = max_bytes
        self.nbytes = 0
        self.hits = self.misses = 0
        self._dbs: OrderedDict[str, EncodedDatabase] = OrderedDict()

    def __len__(self) -> int:
        return len(self._dbs)

    def database(self, catalog: Catalog, db: str, chunk_size: int) -> EncodedDatabase:
        """Database ``db``'s chunks as of now: the cached ones while ``db`` is unchanged,
        else a new (lazily encoded) set, cached in place of the old. O(1)."""
        changed = catalog.changed_version_of(db)
        cached = self._dbs.get(db)
        if cached is not None and cached.changed == changed and cached.chunk_size == chunk_size:
            self._dbs.move_to_end(db)
            self.hits += 1
            return cached
        self.misses += 1
        if cached is not None:
            self._drop(db)
        view = catalog.database_view(db)
        encoded = EncodedDatabase(view, chunk_size, catalog.release_view, self._account)
        if self.max_bytes and view.entries:
            self._dbs[db] = encoded
        return encoded

    def forget_changed(self, catalog: Catalog) -> None:
        """Drop what no join can use any more: databases changed (or gone) since
        encoded. O(databases cached)."""
        for db, encoded in list(self._dbs.items()):
            if catalog.changed_version_of(db) != encoded.changed:
                self._drop(db)

    def _account(self, encoded: EncodedDatabase, grown: int) -> None:
        if self._dbs.get(encoded.db) is not encoded:
            return  # evicted or replaced: its jobs hold it, the cache does not
        self.nbytes += grown
        while self.nbytes > self.max_bytes and self._dbs:
            self._drop(next(iter(self._dbs)))

    def _drop(self, db: str) -> None:
        self.nbytes -= self._dbs.pop(db).nbytes
