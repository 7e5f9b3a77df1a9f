"""Snapshot chunks read without decoding their partitions: the replica's join path.

Pure functions (bytes in, values out), safe from any thread.

A snapshot of a big catalog is almost all partitions, and a replica reads few of
them. So a chunk frame is *scanned* instead of decoded: :func:`scan_chunk` inflates
it once, checks the framing of every entry (key, version, object), decodes the
entries that are not partitions, and keeps each table's partitions as a
:class:`~subscriber.protocol.messages.PackedRun`: the compressed frame itself (shared
by the runs it holds, ~50 B per partition) and where the run lies in its inflated
bytes. :func:`unpack_names` inflates the frame again, up to the run's end, and reads
the run's partition names and where each entry starts; :func:`entry_at` builds one
entry from there (:func:`unpack_run`: all of them): the decode cost is paid on first
read, not at sync, and only for the partitions read.

The layout scanned is the one catalogd writes (``catalogd.server.snapshots``)::

    TResponse { 1: request_id (i64, optional), 2: TStatus { 1: code 0 },
                4: TSnapshotChunk { 1: service_id, 2: seq, 3: list<TCatalogEntry> } }
    TCatalogEntry = 0b 0001 len key | 0a 0002 version | 0b 0003 len object | 00

Contract of :func:`scan_chunk`: it returns a chunk only for a frame in exactly that
layout, whose keys are UTF-8 and whose framing adds up to the end of the frame;
anything else (another message, another request's answer, an entry with a tombstone
or an unknown field, garbage) gives None, and the caller decodes the frame the
general way (:func:`subscriber.protocol.codec.unpack`), which reads every valid
layout and raises on garbage. The chunk it returns holds the same entries that
decoding the frame would give (tested on catalogd's frames and on mutated ones).
"""

from __future__ import annotations

import struct
import zlib
from array import array

from subscriber.protocol.codec import FLAG_RAW, FLAG_ZLIB, MAX_MESSAGE_SIZE
from subscriber.protocol.delta import Entry, make_entry
from subscriber.protocol.keys import PARTITION_PREFIX
from subscriber.protocol.messages import PackedRun, SnapshotChunk

__all__ = ["entry_at", "scan_chunk", "unpack_names", "unpack_run"]

_PARTITION = PARTITION_PREFIX.encode()
_KEY = struct.Struct(">3si")  # field 1 (string): header, length
_VERSION_OBJECT = struct.Struct(">3sq3si")  # field 2 (i64), field 3 (binary): header, length
_KEY_HEADER, _VERSION_HEADER, _OBJECT_HEADER = b"\x0b\x00\x01", b"\x0a\x00\x02", b"\x0b\x00\x03"
_RID = struct.Struct(">3sq")
_I32 = struct.Struct(">i")
_OK_STATUS = b"\x0c\x00\x02\x08\x00\x01\x00\x00\x00\x00\x00"  # TStatus { code: OK }
_CHUNK_SERVICE = b"\x0c\x00\x04\x0b\x00\x01"  # TResponse.chunk, TSnapshotChunk.service_id
_SEQ_ENTRIES = struct.Struct(">3si4si")  # seq (i32), the entries list's header and count
_SEQ_HEADER, _LIST_HEADER = b"\x08\x00\x02", b"\x0f\x00\x03\x0c"
_SUFFIX = b"\x00\x00"  # TSnapshotChunk's stop, TResponse's
_PEEK = 1024  # more than a head with a service id of ~900 bytes (catalogd: 32)


def scan_chunk(frame: bytes, request_id: int) -> SnapshotChunk | None:
    """The chunk in ``frame`` with its partitions packed, when ``frame`` is catalogd's
    answer to request ``request_id`` in the layout above; None otherwise."""
    if not frame or frame[0] not in (FLAG_RAW, FLAG_ZLIB):
        return None
    if frame[0] == FLAG_RAW:
        raw = frame[1:]
        if _head(raw[:_PEEK], request_id) is None:
            return None
    else:
        inflater = zlib.decompressobj()
        try:
            peek = inflater.decompress(memoryview(frame)[1:], _PEEK)
            if _head(peek, request_id) is None:
                return None
            raw = peek + inflater.decompress(inflater.unconsumed_tail, MAX_MESSAGE_SIZE)
        except zlib.error:
            return None
        if inflater.unconsumed_tail or not inflater.eof or inflater.unused_data:
            return None
    head = _head(raw, request_id)
    if head is None:
        return None
    seq, count, pos = head
    try:
        scanned = _entries(frame, raw, pos, count)
    except (struct.error, UnicodeDecodeError, IndexError):
        return None
    if scanned is None:
        return None
    entries, runs, end = scanned
    if raw[end:] != _SUFFIX:
        return None
    return SnapshotChunk(seq, tuple(entries), tuple(runs))


def _head(raw: bytes, request_id: int) -> tuple[int, int, int] | None:
    """``(seq, count, offset of the first entry)`` of a chunk answering ``request_id``."""
    if raw[:3] != b"\x0a\x00\x01" or len(raw) < 11:
        return None
    if _RID.unpack_from(raw, 0)[1] != request_id:
        return None
    pos = 11
    if raw[pos : pos + 11] != _OK_STATUS or raw[pos + 11 : pos + 17] != _CHUNK_SERVICE:
        return None
    pos += 17
    if len(raw) < pos + 4:
        return None
    (length,) = struct.unpack_from(">i", raw, pos)
    pos += 4 + length
    if length < 0 or len(raw) < pos + 15:
        return None
    try:
        raw[pos - length : pos].decode()  # the service id: checked, as a decoder would
    except UnicodeDecodeError:
        return None
    seq_header, seq, list_header, count = _SEQ_ENTRIES.unpack_from(raw, pos)
    if seq_header != _SEQ_HEADER or list_header != _LIST_HEADER or count < 0:
        return None
    return seq, count, pos + 15


def _entries(
    frame: bytes, raw: bytes, pos: int, count: int
) -> tuple[list[Entry], list[PackedRun], int] | None:
    """Every entry from ``pos``: the non-partitions decoded, the partitions in runs.
    None when an entry is not in the layout; ``struct.error``, ``IndexError`` or
    ``UnicodeDecodeError`` when the bytes end early or a key is not UTF-8."""
    entries: list[Entry] = []
    runs: list[PackedRun] = []
    unpack_key, unpack_rest = _KEY.unpack_from, _VERSION_OBJECT.unpack_from
    prefix = b""  # the key prefix of the run being scanned ("" between runs)
    table, start, n = "", 0, 0
    size = len(raw)
    for _ in range(count):
        header, key_length = unpack_key(raw, pos)
        key_at = pos + 7
        pos = key_at + key_length
        if header != _KEY_HEADER or key_length < 0 or pos > size:
            return None
        key = raw[key_at:pos]
        version_header, version, object_header, length = unpack_rest(raw, pos)
        if version_header != _VERSION_HEADER or object_header != _OBJECT_HEADER or length < 0:
            return None
        entry_at = key_at - 7
        pos += 18 + length
        if pos >= size or raw[pos] != 0:
            return None
        pos += 1
        text = key.decode()
        if prefix and key.startswith(prefix):
            n += 1
            continue
        if n:
            runs.append(PackedRun(table, frame, start, entry_at, n))
            prefix, n = b"", 0
        if key.startswith(_PARTITION):
            colon = text.find(":", len(PARTITION_PREFIX))
            if colon > 0:
                prefix, table, start, n = (
                    key[: colon + 1],
                    text[len(PARTITION_PREFIX) : colon],
                    entry_at,
                    1,
                )
                continue
        entries.append(make_entry(text, version, raw[pos - 1 - length : pos - 1]))
    if n:
        runs.append(PackedRun(table, frame, start, pos, n))
    return entries, runs, pos


def unpack_run(run: PackedRun, into: dict[str, Entry]) -> None:
    """Put every partition of ``run`` into ``into`` (partition name -> entry).

    Raises:
        ValueError: the frame does not hold the run (never for a run from
            :func:`scan_chunk`, which checked it).
    """
    raw = _inflated(run)
    unpack_key, unpack_rest = _KEY.unpack_from, _VERSION_OBJECT.unpack_from
    pos = run.start
    skip = len(PARTITION_PREFIX) + len(run.table) + 1  # "HDFS_PARTITION:" "db.t" ":"
    for _ in range(run.count):
        key_length = unpack_key(raw, pos)[1]
        pos += 7
        key = raw[pos : pos + key_length].decode()
        pos += key_length
        version, length = unpack_rest(raw, pos)[1::2]
        pos += 18
        into[key[skip:]] = make_entry(key, version, raw[pos : pos + length])
        pos += length + 1
    if pos != run.end:
        raise ValueError("packed run does not end where it was scanned to")


def unpack_names(run: PackedRun) -> tuple[bytes, array[int], list[str]]:
    """The run's bytes (inflated), where each of its entries starts in them, and each
    entry's partition name, in the run's order.

    Raises:
        ValueError: the frame does not hold the run (never for a run from
            :func:`scan_chunk`, which checked it).
    """
    raw = _inflated(run)[run.start :]
    starts: array[int] = array("q")
    names: list[str] = []
    add_start, add_name = starts.append, names.append
    length_at = _I32.unpack_from
    skip = len(PARTITION_PREFIX) + len(run.table) + 1  # "HDFS_PARTITION:" "db.t" ":"
    pos = 0
    for _ in range(run.count):
        add_start(pos)
        key_end = pos + 7 + length_at(raw, pos + 3)[0]
        add_name(raw[pos + 7 + skip : key_end].decode())
        pos = key_end + 19 + length_at(raw, key_end + 14)[0]  # version, object, stop
    if pos != len(raw):
        raise ValueError("packed run does not end where it was scanned to")
    return raw, starts, names


def entry_at(raw: bytes, pos: int) -> Entry:
    """The entry encoded at ``pos`` of a run's bytes (an offset from :func:`unpack_names`)."""
    key_end = pos + 7 + _I32.unpack_from(raw, pos + 3)[0]
    version, length = _VERSION_OBJECT.unpack_from(raw, key_end)[1::2]
    start = key_end + 18
    return make_entry(raw[pos + 7 : key_end].decode(), version, raw[start : start + length])


def _inflated(run: PackedRun) -> bytes:
    """The first ``run.end`` bytes of the run's frame, inflated."""
    frame = run.frame
    if frame[0] == FLAG_RAW:
        raw = frame[1 : run.end + 1]
    else:
        raw = zlib.decompressobj().decompress(memoryview(frame)[1:], run.end)
    if len(raw) != run.end:
        raise ValueError("packed run beyond its frame")
    return raw
