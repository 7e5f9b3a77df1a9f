"""Encoded snapshot chunks, shared by every join while their database is unchanged.

Pure: no sockets, threads or clocks; used by the server thread only (not
thread-safe).

A snapshot is streamed database by database (:mod:`catalogd.server.snapshots`).
:class:`EncodedDatabase` holds one database's chunks: each is the Thrift encoding
of at most ``chunk_size`` elements of a ``TSnapshotChunk.entries`` list (group
by group, each group in version order), deflated once into a
:class:`~subscriber.protocol.segments.Segment`. Chunks are encoded on demand,
one per call, the first time any join needs them, from a
:class:`~catalogd.core.catalog.DatabaseView` taken by the first join that found
none (O(1); while it is read, the catalog copies what a commit changes first:
the map of groups and the group). Joins that come later, or run alongside, read
the same chunks: the Nth join of an unchanged database costs a memory copy per
chunk.

Invariants:

* An ``EncodedDatabase`` holds exactly the live entries of ``db`` at the version
  ``changed`` (its newest change): :meth:`SnapshotCache.capture` hands out a
  cached one only while ``db`` is unchanged (it drops every database
  ``Catalog.databases_changed_since`` its last capture), and a join's parts are
  all taken in one turn, at one catalog version: a commit to ``db`` invalidates
  its chunks, and a join never mixes two states of a database, or of the catalog.
* The cache keeps at most ``max_bytes`` of deflated chunks (least recently used
  databases go first; a job streaming an evicted one keeps its own reference).
  Measured: about 51 B per partition (``bench/join_bench.py --storm``), so a
  1M-partition catalog needs ~50 MiB; the default bound is 256 MiB.
"""

from __future__ import annotations

import struct
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
# field 1 (type, id, length 0), the 7 of field 2 (type, id, i32) and the 8 of field 3's
# header (type, id, element type, count), and ends with the struct's stop byte: what
# lies between is the entries themselves, which is what a chunk keeps.
_HEAD, _TAIL = 22, 1


def encoded_entries(entries: list[Entry]) -> bytes:
    """The elements of a ``TSnapshotChunk.entries`` list as ``codec.encode`` writes them
    (tested), concatenated; built without Thrift structs, which cost most of the
    encoding (~4 us per entry, against ~1)."""
    parts: list[bytes] = []
    append = parts.append
    for entry in entries:
        key, payload = entry.key.encode(), entry.payload
        if payload is None:  # never in a snapshot; encoded the slow, general way
            append(codec.encode(wire.entry_to_thrift(entry), check=False))
            continue
        append(_KEY.pack(b"\x0b\x00\x01", len(key)) + key)
        append(_VERSION_OBJECT.pack(b"\x0a\x00\x02", entry.version, b"\x0b\x00\x03", len(payload)))
        append(payload)
        append(b"\x00")
    return b"".join(parts)


def thrift_encoded_entries(entries: list[Entry]) -> bytes:
    """:func:`encoded_entries` through thriftpy2's encoder (the reference it is tested on)."""
    chunk = svc.TSnapshotChunk(
        service_id="", seq=0, entries=[wire.entry_to_thrift(e) for e in entries]
    )
    return codec.encode(chunk, check=False)[_HEAD:-_TAIL]


# Thrift binary: field header = type byte + i16 id; string/binary = i32 length + bytes.
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
        """(deflated encoded entries, how many), in order."""
        self.nbytes = 0
        self.used = 0
        """When a capture last took it (the cache's counter: least recently used goes)."""
        self._left = view.size
        self._view: DatabaseView | None = view
        self._values: Iterator[Entry] = view.entries()
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
            segment = deflate_segment(encoded_entries(batch))
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
    of ``max_bytes`` deflated bytes (0: keep nothing, share nothing between joins).

    Kept up to date at each capture from ``Catalog.databases_changed_since``, so a
    capture costs O(databases changed since the last one) to make new parts, plus
    ~50 ns per database (an unfiltered one copies and stamps the list of parts); the
    first unfiltered capture makes a part for every database (~7 us each, loaded).
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError("max_bytes must be non-negative")
        self.max_bytes = max_bytes
        self.nbytes = 0
        self.hits = self.misses = 0
        self._parts: dict[str, EncodedDatabase] = {}
        self._missing: set[str] | None = None
        """Live databases with no part (None: not known, every database may be)."""
        self._version = -1
        self._chunk_size = 0
        self._turn = 0

    def __len__(self) -> int:
        """Databases whose chunks are kept (encoded, or being encoded)."""
        return sum(1 for part in self._parts.values() if part.chunks)

    def capture(
        self, catalog: Catalog, databases: list[str] | None, chunk_size: int
    ) -> list[EncodedDatabase]:
        """The parts of a snapshot of ``databases`` (None: all) as of now, in order:
        cached ones for the databases unchanged since they were made, new ones
        (encoded lazily from an O(1) view) for the others."""
        if chunk_size != self._chunk_size or not self.max_bytes:
            self._forget_all(chunk_size)
        if catalog.version != self._version:
            for db in catalog.databases_changed_since(self._version):
                self._forget(db)
                if self._missing is not None and catalog.size_of_database(db):
                    self._missing.add(db)
            self._version = catalog.version
        self._turn += 1
        misses = self.misses
        if databases is not None:
            parts = [self._part(catalog, db) for db in databases]
        else:
            if self._missing is None:
                self._missing = {db for db in catalog.databases() if db not in self._parts}
            for db in sorted(self._missing):
                self._part(catalog, db)
            self._missing.clear()
            parts = list(self._parts.values())
            for part in parts:  # ~50 ns each
                part.used = self._turn
        self.hits += len(parts) - (self.misses - misses)
        return parts

    def _part(self, catalog: Catalog, db: str) -> EncodedDatabase:
        part = self._parts.get(db)
        if part is None:
            view = catalog.database_view(db)
            part = EncodedDatabase(view, self._chunk_size, catalog.release_view, self._account)
            if view.size:  # an empty one: nothing to keep
                self._parts[db] = part
            self.misses += 1
        part.used = self._turn
        return part

    def _account(self, encoded: EncodedDatabase, grown: int) -> None:
        if self._parts.get(encoded.db) is not encoded:
            return  # evicted or replaced: its jobs hold it, the cache does not
        self.nbytes += grown
        if self.nbytes > self.max_bytes:  # rare: drop the least recently captured
            for part in sorted(self._parts.values(), key=lambda p: p.used):
                self._forget(part.db)
                if self._missing is not None:
                    self._missing.add(part.db)
                if self.nbytes <= self.max_bytes:
                    break

    def _forget(self, db: str) -> None:
        part = self._parts.pop(db, None)
        if part is not None:
            self.nbytes -= part.nbytes
        if self._missing is not None:
            self._missing.discard(db)

    def _forget_all(self, chunk_size: int) -> None:
        self._parts.clear()
        self._missing = None
        self.nbytes = 0
        self._chunk_size = chunk_size
