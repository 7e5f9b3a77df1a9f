"""Snapshot streaming: a catalog snapshot as encoded response frames, one peer at a time.

Pure: no sockets, threads or clocks. The server thread asks a
:class:`SnapshotJob` for its next frame, tries to send it, and calls
:meth:`SnapshotJob.sent` only when the send succeeded, so a peer whose pipe is
full gets the same frame again on a later loop turn (flow control without
loss).

Contract of :func:`snapshot_frames`:

* The version and the entries are captured when it is called (on the thread
  that owns the catalog): each database's chunks cached for its current state,
  or an O(1) view of it (:meth:`Catalog.database_view`) to encode from, so the
  capture costs O(databases changed since the last capture), not O(entries)
  (:mod:`catalogd.server.snapshot_cache`). Encoding happens lazily, one chunk
  per frame, so one big snapshot never stalls publishing, and a database's
  chunks are encoded once for every join that sees it unchanged.
* Entries are the catalog's live entries database by database (sorted by name,
  ``""`` the global objects first), each database's in version order; limited to
  ``databases`` plus the global objects (``GLOBAL``) when ``databases`` is
  given. (Subscribers install a snapshot as a set: they need no global order.)
* Every chunk carries ``seq`` 0, 1, 2, ... and at most ``chunk_size`` entries (a
  big database fills chunks of its own, small ones share chunks); the last frame
  is always a ``TSnapshotEnd`` with ``(service_id, version, count, chunks)``, so a
  subscriber detects a truncated or reordered stream. An empty selection is just
  the terminator (``count == chunks == 0``).
* A chunk frame is a standard ``codec.pack`` zlib frame of its ``TResponse``,
  stitched (:mod:`subscriber.protocol.segments`): the bytes that vary per join
  (``request_id``, ``service_id``, ``seq``, the entry count) are a stored block in
  front of the cached deflated entries, so receivers read it like any other frame.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import count as counting
from typing import Any

import idl
from catalogd.core.catalog import Catalog
from catalogd.server.snapshot_cache import EncodedDatabase, SnapshotCache
from subscriber.protocol import codec, wire
from subscriber.protocol.keys import GLOBAL
from subscriber.protocol.segments import Segment, stitched_frame

svc = idl.catalog_service
PARK_MIN_S, PARK_MAX_S = 0.005, 0.1


def wanted_databases(databases: Iterable[str] | None) -> set[str] | None:
    """The databases a filtered request covers (always with the global objects); None: all."""
    return None if databases is None else set(databases) | {GLOBAL}


def small_selection(
    catalog: Catalog, databases: list[str] | None, *, max_entries: int, max_bytes: int
) -> list[Any] | None:
    """The snapshot of ``databases`` as ``TCatalogEntry`` structs, in version order, when
    it holds at most ``max_entries`` entries of at most ``max_bytes`` payload bytes in
    all; None when it is larger. Counts first, so a large catalog costs one lookup per
    database named, never a scan."""
    wanted = wanted_databases(databases)
    if wanted is None:
        if len(catalog) > max_entries:
            return None
        entries = list(catalog.live_entries())
    else:
        if sum(catalog.size_of_database(db) for db in wanted) > max_entries:
            return None
        found = (catalog.get(key) for db in wanted for key in catalog.keys_of_database(db))
        entries = sorted((e for e in found if e is not None), key=lambda e: e.version)
    if sum(len(e.payload or b"") for e in entries) > max_bytes:
        return None
    return [wire.entry_to_thrift(e) for e in entries]


def snapshot_frames(
    catalog: Catalog,
    *,
    service_id: str,
    request_id: int | None,
    databases: list[str] | None,
    chunk_size: int,
    empty: bool = False,
    cache: SnapshotCache | None = None,
) -> Iterator[bytes]:
    """Encode a snapshot lazily, chunk by chunk; the entries are captured now.
    ``empty``: an on-demand subscriber's, only the version (no entries, no scan).
    ``cache``: the server's, shared by its joins (None: a private one, nothing shared)."""
    version = catalog.version
    wanted = wanted_databases(databases)
    parts: list[EncodedDatabase] = []
    if not empty:
        if cache is None:
            cache = SnapshotCache(max_bytes=0)
        parts = cache.capture(catalog, None if wanted is None else sorted(wanted), chunk_size)
    return _frames(service_id, request_id, version, iter(parts), chunk_size)


def _frames(
    service_id: str, rid: int | None, version: int, parts: Iterator[EncodedDatabase], size: int
) -> Iterator[bytes]:
    head = chunk_head(service_id, rid)
    chunks = entries = 0
    batch: list[Segment] = []
    count = 0
    for segment, n in _pieces(parts):
        if batch and count + n > size:  # the frame is as full as it gets: send it
            yield _chunk_frame(head, chunks, batch, count)
            chunks, entries, batch, count = chunks + 1, entries + count, [], 0
        batch.append(segment)
        count += n
        if count >= size:
            yield _chunk_frame(head, chunks, batch, count)
            chunks, entries, batch, count = chunks + 1, entries + count, [], 0
    if batch:
        yield _chunk_frame(head, chunks, batch, count)
        chunks, entries = chunks + 1, entries + count
    end = svc.TSnapshotEnd(service_id=service_id, version=version, count=entries, chunks=chunks)
    yield codec.pack(svc.TResponse(request_id=rid, status=_ok(), snapshot_end=end))


def _pieces(parts: Iterator[EncodedDatabase]) -> Iterator[tuple[Segment, int]]:
    """Every database's deflated chunks in order, each encoded when first needed."""
    for part in parts:
        for i in counting():
            piece = part.chunk(i)
            if piece is None:
                break
            yield piece


# The bytes of a chunk's TResponse after its entries: TSnapshotChunk's stop, TResponse's.
_CHUNK_SUFFIX = b"\x00\x00"
# The end of an encoded chunk TResponse with no entries: seq (i32), the entries field's
# header (type, id, element type, count) and the suffix.
_HEAD_TAIL = 4 + 8 + len(_CHUNK_SUFFIX)
_SEQ_ENTRIES = struct.Struct(">i4si")


def chunk_head(service_id: str, rid: int | None) -> bytes:
    """A chunk's encoded ``TResponse`` up to its ``seq`` value (the same for every chunk
    of one answer)."""
    chunk = svc.TSnapshotChunk(service_id=service_id, seq=0, entries=[])
    response = svc.TResponse(request_id=rid, status=_ok(), chunk=chunk)
    return codec.encode(response, check=False)[:-_HEAD_TAIL]


def _chunk_frame(head: bytes, seq: int, segments: list[Segment], count: int) -> bytes:
    """The frame of chunk ``seq``: ``codec.pack`` of its ``TResponse`` in meaning, built
    from the cached deflated entries (:mod:`subscriber.protocol.segments`)."""
    prefix = head + _SEQ_ENTRIES.pack(seq, b"\x0f\x00\x03\x0c", count)
    return stitched_frame(prefix, segments, _CHUNK_SUFFIX)


@dataclass(eq=False)
class SnapshotJob:
    """One snapshot on its way to one peer (``identity`` is its ROUTER identity)."""

    identity: bytes
    request_id: int | None
    frames: Iterator[bytes]
    frame: bytes | None = None
    """The frame taken from ``frames`` but not yet sent."""
    retry_at: float = 0.0
    """Monotonic time before which the job is parked (its peer's pipe was full)."""
    backoff: float = 0.0

    def next_frame(self) -> bytes | None:
        """The frame to send now: the unsent one again, else the next; None when done."""
        if self.frame is None:
            self.frame = next(self.frames, None)
        return self.frame

    def sent(self) -> None:
        """The frame from :meth:`next_frame` went out; the next call moves on."""
        self.frame = None
        self.backoff = 0.0

    def park(self, now: float) -> None:
        """The peer's pipe was full at ``now``: wait 5 ms, doubling up to 100 ms, then retry."""
        self.backoff = min(PARK_MAX_S, max(PARK_MIN_S, self.backoff * 2))
        self.retry_at = now + self.backoff


def _ok() -> Any:
    return svc.TStatus(code=svc.TStatusCode.OK)
