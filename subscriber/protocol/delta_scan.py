"""Published delta parts read straight from their bytes: the per-change path (pure).

Pure functions (bytes in, values out), safe from any thread.

Every change catalogd commits reaches every subscriber as a ``TDelta`` part, most
often of one entry, and the subscriber's cost per change is what all of them pay
together (``bench/propagation.py``). The general way to read one
(:func:`subscriber.protocol.codec.unpack`: the validator's walk, thriftpy2 building a
``TDelta`` and its ``TCatalogEntry`` structs, the entries copied into core
:class:`~subscriber.protocol.delta.Entry` values) touches a lot of code for a few
fields, and at one change every few milliseconds it runs cold. :func:`scan_delta`
reads the layout catalogd writes (:func:`subscriber.protocol.wire.encode_delta`)
directly::

    0b 0001 len service_id | 0a 0002 from | 0a 0003 to | 0f 0004 0c count
    count x TCatalogEntry  = 0b 0001 len key | 0a 0002 version
                             | (0b 0003 len object | 00)  or  (02 0004 01 | 00)
    [0b 0005 len database] [0d 0006 0b 08 size, size x (len name, i32 count)] 00

Contract (as :func:`subscriber.protocol.packed.scan_chunk`): it returns a part only
for an uncompressed frame in exactly that layout, no longer than :data:`MAX_SCANNED`,
whose strings are UTF-8 and whose framing ends exactly at the frame's end; anything
else (a compressed frame, an invalidation's grouped partitions, a field out of order,
an unknown field, garbage) gives None, and the caller decodes the frame the general
way, which reads every valid layout and raises on garbage. The part it returns is the
one the general way gives for the same bytes (tested on catalogd's frames and on
every mutation of them). The bytes after the entries (database, counts, the end) are
the same for every change to one database: short ones are read once and remembered
(at most 64 of them, 256 bytes each), and the counts a part carries are read-only.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

from subscriber.protocol.codec import RAW
from subscriber.protocol.delta import Entry, make_entry
from subscriber.protocol.messages import DeltaPart, make_part

__all__ = ["MAX_SCANNED", "scan_delta"]

MAX_SCANNED = 64 * 1024
"""Longer frames (big deltas, compressed anyway past 2 KiB) go the general way."""

_SERVICE_HEADER = b"\x0b\x00\x01"
_I32 = struct.Struct(">i")  # a length, a count
_VERSIONS = struct.Struct(">3sq3sq4si")  # from, to (i64), the entries list's header, count
_FROM_HEADER, _TO_HEADER, _ENTRIES_HEADER = b"\x0a\x00\x02", b"\x0a\x00\x03", b"\x0f\x00\x04\x0c"
_KEY = struct.Struct(">3si")  # TCatalogEntry field 1 (string): header, length
_VERSION_FIELD = struct.Struct(">3sq3si")  # field 2 (i64): header, value; the next header
# and four bytes more: the object's length when field 3 follows (after a tombstone's
# header they are ``01 00`` and two bytes more, read and not used: catalogd writes a
# database field after the last entry; a part ending sooner goes the general way)
_KEY_HEADER, _VERSION_HEADER = b"\x0b\x00\x01", b"\x0a\x00\x02"
_LIVE = b"\x0b\x00\x03"  # field 3 (binary): the object
_TOMBSTONE = b"\x02\x00\x04\x01\x00"  # field 4 (bool) true, the entry's end
_DATABASE_HEADER = b"\x0b\x00\x05"
_COUNTS_HEADER = b"\x0d\x00\x06\x0b\x08"  # field 6: map<string, i32>


def scan_delta(frame: bytes, topic_database: str, start: int = 0) -> DeltaPart | None:
    """The part in ``frame[start:]`` (a PUB body: ``start`` skips the topic of a
    one-frame publication, so the body is not copied), when it is uncompressed and in
    the layout above; None otherwise. ``topic_database``: the database its topic names
    (the part's own when it carries none, as in the general way)."""
    # The per-change path: few calls and opcodes (cold, each costs a change ~0.2 us).
    if len(frame) - start > MAX_SCANNED or frame[start : start + 1] != RAW:
        return None
    try:
        header, length = _KEY.unpack_from(frame, start + 1)
        if header != _SERVICE_HEADER or length < 0:
            return None
        at = start + 8 + length
        service_id = frame[start + 8 : at].decode()
        h_from, from_version, h_to, to_version, h_list, count = _VERSIONS.unpack_from(frame, at)
        if h_from != _FROM_HEADER or h_to != _TO_HEADER or h_list != _ENTRIES_HEADER or count < 0:
            return None
        if to_version < from_version:  # refused by the general way
            return None
        at += _VERSIONS.size
        entries: list[Entry] = []
        for _ in range(count):
            header, length = _KEY.unpack_from(frame, at)
            if header != _KEY_HEADER or length < 0:
                return None
            key_end = at + 7 + length
            key = frame[at + 7 : key_end].decode()
            # The version, the next field's header and (when it is the object) its length.
            header, version, field, length = _VERSION_FIELD.unpack_from(frame, key_end)
            if header != _VERSION_HEADER:
                return None
            if field == _LIVE:  # after the version: the object, or removed
                object_at = key_end + 18
                at = object_at + length
                if length < 0 or frame[at] != 0:
                    return None
                entries.append(make_entry(key, version, frame[object_at:at]))
                at += 1
            elif frame.startswith(_TOMBSTONE, key_end + 11):
                entries.append(make_entry(key, version, None))
                at = key_end + 16
            else:
                return None
        tail = frame[at:]
        read = (_known_tail if len(tail) <= _KNOWN_TAIL_MAX else _read_tail)(tail)
        if read is None:
            return None
        database, counts = read
        if database is None:
            database = topic_database
        return make_part(service_id, from_version, to_version, database, tuple(entries), counts)
    except (struct.error, UnicodeDecodeError, IndexError, ValueError):
        return None


def _read_tail(tail: bytes) -> tuple[str | None, Mapping[str, int] | None] | None:
    """The part's database (None: not sent) and counts (fields 5 and 6), and the struct's
    end; None when they are not in the layout."""
    at, end = 0, len(tail) - 1
    database = None
    if tail.startswith(_DATABASE_HEADER):
        (length,) = _I32.unpack_from(tail, 3)
        if length < 0:
            return None
        at = 7 + length
        database = tail[at - length : at].decode()
    counts: dict[str, int] | None = None
    if tail.startswith(_COUNTS_HEADER, at):
        (size,) = _I32.unpack_from(tail, at + 5)
        if size < 0:
            return None
        at += 9
        counts = {}
        for _ in range(size):
            (length,) = _I32.unpack_from(tail, at)
            if length < 0:
                return None
            at += 4 + length
            (counts[tail[at - length : at].decode()],) = _I32.unpack_from(tail, at)
            at += 4
    if at != end or tail[at] != 0:
        return None
    return database, None if counts is None else MappingProxyType(counts)


_KNOWN_TAIL_MAX = 256
_known_tail = lru_cache(maxsize=64)(_read_tail)
"""The tail is the same few bytes for every change to one database: read once. Short
tails only, so the memo holds at most 16 KiB of a publisher's bytes."""
