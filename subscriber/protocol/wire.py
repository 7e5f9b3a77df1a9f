"""How protocol values travel on ZeroMQ: topics, frames and Thrift conversions.

Pure functions between the protocol's values (:mod:`subscriber.protocol.delta`,
:mod:`subscriber.protocol.messages`) and catalogd's Thrift messages
(``CatalogService.thrift``), plus the PUB topic scheme. Both catalogd and the
subscriber use this module, so the two sides cannot disagree.
Why one module of over 400 lines: that is the reason; split, the two sides'
conversions could drift apart.

A PUB message is one frame, the topic then the body (:func:`publication`; protocol 3,
two frames ``[topic, body]`` before); ``body`` is a
:func:`subscriber.protocol.codec.pack`-ed struct chosen by the topic's first byte:

=============  =================  =============================================
topic          body               meaning
=============  =================  =============================================
``d<db>\\0``    ``TDelta``         one database's part of a delta (``d\\0``: global);
                                  the last part also carries the commit counts
``c``          ``TDeltaCommit``   closes a delta: entry counts per database
``h``          ``THeartbeat``     service id, newest version, interval
``i<db>\\0``    ``TDelta``         the same part as an *invalidation*: keys and
                                  versions only (an empty object: changed; removed:
                                  gone; partition keys grouped per table in
                                  ``partitions``), for on-demand subscribers; the
                                  same counts
=============  =================  =============================================

ZeroMQ filters by topic prefix at the publisher, so a subscriber that follows
databases ``a`` and ``b`` subscribes to ``c``, ``h``, ``d\\0``, ``da\\0`` and
``db\\0`` and never receives another database's bytes. The NUL terminator
keeps ``da\\0`` from matching database ``ab``. A subscriber that follows
everything subscribes to ``d`` and ``h`` only: the last part of a delta
carries the commit counts, so a one-database change costs it one message.

ROUTER/DEALER messages are one body frame (after the envelope): a packed
``TRequest`` or ``TResponse``. A snapshot request is answered by ``TResponse``
messages with a ``TSnapshotChunk`` each, then one with a ``TSnapshotEnd``
(:func:`parse_snapshot_reply`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import Any

import idl
from subscriber.protocol import codec
from subscriber.protocol.delta import INVALIDATED, Delta, Entry, make_entry
from subscriber.protocol.delta_scan import scan_delta
from subscriber.protocol.errors import ProtocolError
from subscriber.protocol.heartbeat_scan import scan_heartbeat
from subscriber.protocol.keys import GLOBAL, PARTITION_PREFIX, database_of, split_partition_key
from subscriber.protocol.messages import (
    Commit,
    DeltaPart,
    Heartbeat,
    SnapshotChunk,
    SnapshotEnd,
    Welcome,
    interval_s,
)

svc = idl.catalog_service

TOPIC_DELTA = b"d"
TOPIC_COMMIT = b"c"
TOPIC_HEARTBEAT = b"h"
TOPIC_INVALIDATION = b"i"


def delta_topic(database: str) -> bytes:
    return TOPIC_DELTA + database.encode() + b"\0"


def invalidation_topic(database: str) -> bytes:
    return TOPIC_INVALIDATION + database.encode() + b"\0"


def subscriptions(databases: Iterable[str] | None, *, on_demand: bool = False) -> list[bytes]:
    """The SUB prefixes for following ``databases`` (None: everything); ``on_demand``:
    their invalidations instead of their deltas.

    Following everything needs no ``c`` messages: the last part of each delta
    carries the commit counts, so a single-database delta is one message.
    The heartbeat prefix comes last: a SUB's subscriptions reach the publisher in
    order and take effect there in order, so a heartbeat received proves every
    other prefix is live too (the join waits for exactly that).
    """
    prefix, topic = (
        (TOPIC_INVALIDATION, invalidation_topic) if on_demand else (TOPIC_DELTA, delta_topic)
    )
    if databases is None:
        return [prefix, TOPIC_HEARTBEAT]
    topics = [topic(db) for db in sorted(set(databases))]
    return [TOPIC_COMMIT, topic(GLOBAL), *topics, TOPIC_HEARTBEAT]


# -- entries ---------------------------------------------------------------------


def entry_to_thrift(entry: Entry) -> object:
    if entry.payload is None:
        return svc.TCatalogEntry(key=entry.key, version=entry.version, removed=True)
    return svc.TCatalogEntry(key=entry.key, version=entry.version, object=entry.payload)


def entries_from_thrift(items: Any) -> tuple[Entry, ...]:
    if not isinstance(items, list):
        raise ProtocolError("entry list missing")
    # The hot loop of a snapshot: one tuple per entry, attribute reads only.
    entries = tuple(make_entry(t.key, t.version, None if t.removed else t.object) for t in items)
    for entry, t in zip(entries, items, strict=True):
        if entry.payload is None and not t.removed:
            raise ProtocolError(f"entry {t.key!r} has neither an object nor a removed flag")
    return entries


# -- publications ----------------------------------------------------------------


def delta_messages(
    service_id: str, delta: Delta, *, invalidations: bool = True
) -> list[tuple[bytes, bytes]]:
    """The ``(topic, body)`` messages that publish ``delta``: parts, then (with
    ``invalidations``) the same parts as invalidations, then the commit."""
    by_db: dict[str, list[Entry]] = {}
    for entry in delta.entries:
        by_db.setdefault(database_of(entry.key), []).append(entry)
    counts = {db: len(items) for db, items in by_db.items()}
    last = next(reversed(by_db)) if by_db else None

    def parts(topic: Callable[[str], bytes], strip: bool) -> list[tuple[bytes, bytes]]:
        return [
            (
                topic(db),
                codec.frame(
                    encode_delta(
                        service_id,
                        delta.from_version,
                        delta.to_version,
                        items,
                        database=db,
                        counts=counts if db == last else None,
                        invalidations=strip,
                    )
                ),
            )
            for db, items in by_db.items()
        ]

    messages = parts(delta_topic, strip=False)
    if invalidations:
        messages += parts(invalidation_topic, strip=True)
    commit = svc.TDeltaCommit(
        service_id=service_id,
        from_version=delta.from_version,
        to_version=delta.to_version,
        counts=counts,
    )
    messages.append((TOPIC_COMMIT, codec.pack(commit)))
    return messages


# Thrift binary protocol pieces of TDelta and TCatalogEntry (CatalogService.thrift):
# a field is its type byte, its id (i16), its value; a struct ends with a 0 byte.
_STRING, _I32, _I64, _BOOL, _STRUCT, _MAP, _LIST = 11, 8, 10, 2, 12, 13, 15
_LENGTH = struct.Struct(">i")
_ENTRY_KEY = struct.Struct(">bhi")  # field 1 (key): header, length (the key follows)
_ENTRY_LIVE = struct.Struct(">bhqbhi")  # field 2 (version), field 3 (object): header, length
_ENTRY_REMOVED = struct.Struct(">bhqbhbb")  # field 2 (version), field 4 (removed) = true, stop
_MAP_HEAD = struct.Struct(">bhbbi")  # field 6 (counts): header, key and value types, size
_DELTA_HEAD = struct.Struct(">bhqbhqbhbi")  # fields 2, 3 (versions), 4 (entries): list header
_LIST_HEAD = struct.Struct(">bhbi")  # a list field: header, element type, size
_VERSION = struct.Struct(">q")


def encode_delta(
    service_id: str,
    from_version: int,
    to_version: int,
    entries: Iterable[Entry],
    *,
    database: str | None = None,
    counts: dict[str, int] | None = None,
    invalidations: bool = False,
) -> bytes:
    """A ``TDelta`` in the binary protocol, byte for byte what :func:`codec.encode` writes
    for the same struct (``tests/unit/test_wire.py`` checks it), built here because a
    large table's load publishes ~100,000 entries at once from the server thread:
    making their Thrift structs and encoding them took 0.55 s there, this ~0.1 s.
    Values are not checked (entries were checked when they entered the catalog).
    ``invalidations``: the keys-only stream: every live entry's object written empty,
    and partition keys grouped per table in ``partitions`` (:func:`_partition_groups`)."""
    parts: list[bytes] = [_string_field(1, service_id)]
    items = list(entries)
    groups: dict[str, list[Entry]] = {}
    if invalidations:
        items, groups = _grouped(items)
    parts.append(
        _DELTA_HEAD.pack(_I64, 2, from_version, _I64, 3, to_version, _LIST, 4, _STRUCT, len(items))
    )
    add = parts.append
    key_head, live, removed = _ENTRY_KEY.pack, _ENTRY_LIVE.pack, _ENTRY_REMOVED.pack
    for entry in items:
        key = entry.key.encode()
        add(key_head(_STRING, 1, len(key)))
        add(key)
        payload = entry.payload
        if invalidations and payload is not None:
            payload = INVALIDATED
        if payload is None:
            add(removed(_I64, 2, entry.version, _BOOL, 4, 1, 0))
        else:
            add(live(_I64, 2, entry.version, _STRING, 3, len(payload)))
            add(payload)
            add(b"\0")
    if database is not None:
        add(_string_field(5, database))
    if counts is not None:
        add(_MAP_HEAD.pack(_MAP, 6, _STRING, _I32, len(counts)))
        for name, count in counts.items():
            encoded = name.encode()
            add(_LENGTH.pack(len(encoded)) + encoded + _LENGTH.pack(count))
    if groups:
        _partition_groups(groups, add)
    add(b"\0")
    return b"".join(parts)


def _grouped(entries: list[Entry]) -> tuple[list[Entry], dict[str, list[Entry]]]:
    """(entries that are not partitions, partitions by table ``db.t``), order kept."""
    others: list[Entry] = []
    groups: dict[str, list[Entry]] = {}
    for entry in entries:
        if entry.key.startswith(PARTITION_PREFIX):
            groups.setdefault(split_partition_key(entry.key)[0], []).append(entry)
        else:
            others.append(entry)
    return others, groups


def _partition_groups(groups: dict[str, list[Entry]], add: Callable[[bytes], object]) -> None:
    """Field 7 of ``TDelta``: one ``TPartitionGroup`` per table, as thriftpy2 writes it."""
    add(_LIST_HEAD.pack(_LIST, 7, _STRUCT, len(groups)))
    for table, members in groups.items():
        add(_string_field(1, table))
        add(_LIST_HEAD.pack(_LIST, 2, _STRING, len(members)))
        for entry in members:
            name = split_partition_key(entry.key)[1].encode()
            add(_LENGTH.pack(len(name)))
            add(name)
        add(_LIST_HEAD.pack(_LIST, 3, _I64, len(members)))
        add(b"".join(_VERSION.pack(e.version) for e in members))
        removed = [i for i, e in enumerate(members) if e.payload is None]
        if removed:
            add(_LIST_HEAD.pack(_LIST, 4, _I32, len(removed)))
            add(b"".join(_LENGTH.pack(i) for i in removed))
        add(b"\0")


def _expanded(groups: Any) -> tuple[Entry, ...]:
    """The entries of ``TDelta.partitions`` (an invalidation's grouped partition keys).

    Raises:
        ProtocolError: a group without its fields, names and versions of unequal
            lengths, or a removed index out of range.
    """
    if groups is None:
        return ()
    entries: list[Entry] = []
    for group in groups:
        _require(group, "table", "names", "versions")
        names, versions = group.names, group.versions
        if len(names) != len(versions):
            raise ProtocolError(f"partition group {group.table!r}: names and versions differ")
        removed = set(group.removed or ())
        if removed and not all(0 <= i < len(names) for i in removed):
            raise ProtocolError(f"partition group {group.table!r}: a removed index out of range")
        prefix = PARTITION_PREFIX + group.table + ":"
        entries.extend(
            Entry(prefix + name, version, None if i in removed else INVALIDATED)
            for i, (name, version) in enumerate(zip(names, versions, strict=True))
        )
    return tuple(entries)


def _string_field(fid: int, value: str) -> bytes:
    encoded = value.encode()
    return _ENTRY_KEY.pack(_STRING, fid, len(encoded)) + encoded


def heartbeat_message(
    service_id: str, version: int, interval_s: float, now_ms: int, *, report: bool = False
) -> tuple[bytes, bytes]:
    beat = svc.THeartbeat(
        service_id=service_id,
        version=version,
        sent_at_ms=now_ms,
        interval_ms=int(interval_s * 1000),
        report=report or None,
    )
    return TOPIC_HEARTBEAT, codec.pack(beat)


def publication(topic: bytes, body: bytes) -> bytes:
    """One PUB frame: the topic, then the body (protocol 3). A SUB's prefix match reads
    only a frame's start, so the topic still routes it; one frame is one ``recv`` for
    every subscriber, where a topic frame and a body frame were two."""
    return topic + body


def topic_end(frame: bytes) -> int:
    """Where a PUB frame's topic ends (:func:`publication`): a delta's or an
    invalidation's topic ends at its NUL (so at 2 or later); a commit's and a
    heartbeat's is one byte.

    Raises:
        ProtocolError: an unknown topic, or a database name without its end.
    """
    kind = frame[:1]
    if kind in (TOPIC_DELTA, TOPIC_INVALIDATION):
        end = frame.find(b"\0", 1) + 1
        if not end:
            raise ProtocolError(f"topic without its end: {frame[:16]!r}")
        return end
    if kind in (TOPIC_COMMIT, TOPIC_HEARTBEAT):
        return 1
    raise ProtocolError(f"unknown topic {frame[:16]!r}")


def split_publication(frame: bytes) -> tuple[bytes, bytes]:
    """The topic and the body of a PUB frame (:func:`publication`); raises as
    :func:`topic_end`."""
    end = topic_end(frame)
    return frame[:end], frame[end:]


def parse_frame(frame: bytes) -> DeltaPart | Commit | Heartbeat | None:
    """Decode one PUB frame (:func:`publication`); None when it holds a topic and nothing
    more (a protocol-2 catalogd's topic frame: the body is the next frame). A part or a
    heartbeat in catalogd's layout is scanned in the frame, its body not copied out.

    Raises:
        ProtocolError: as :func:`topic_end` and :func:`parse_publication`.
    """
    if (end := topic_end(frame)) == len(frame):
        return None
    if end > 1:  # a delta or an invalidation (the one-byte topics are 1 long)
        if part := scan_delta(frame, frame[1 : end - 1].decode("utf-8", "replace"), end):
            return part
    elif frame[:1] == TOPIC_HEARTBEAT and (beat := scan_heartbeat(frame, 1)):
        return beat
    return parse_publication(frame[:end], frame[end:])


def parse_publication(topic: bytes, body: bytes) -> DeltaPart | Commit | Heartbeat:
    """Decode one PUB message.

    Raises:
        ProtocolError: unknown topic, undecodable body, fields missing, or a
            reversed version range.
    """
    kind = topic[:1]
    if kind in (TOPIC_DELTA, TOPIC_INVALIDATION):
        scanned = scan_delta(body, topic[1:-1].decode(errors="replace"))
        if scanned is not None:  # catalogd's layout, read directly (delta_scan.py)
            return scanned
        t = codec.unpack(svc.TDelta, body)
        _require(t, "service_id", "from_version", "to_version")
        database = t.database if t.database is not None else topic[1:-1].decode(errors="replace")
        entries = entries_from_thrift(t.entries)
        if kind == TOPIC_INVALIDATION:
            entries += _expanded(t.partitions)
        return DeltaPart(
            t.service_id,
            t.from_version,
            t.to_version,
            database,
            entries,
            dict(t.counts) if t.counts is not None else None,
        )
    if kind == TOPIC_COMMIT and len(topic) == 1:
        t = codec.unpack(svc.TDeltaCommit, body)
        _require(t, "service_id", "from_version", "to_version", "counts")
        return Commit(t.service_id, t.from_version, t.to_version, dict(t.counts))
    if kind == TOPIC_HEARTBEAT and len(topic) == 1:
        t = codec.unpack(svc.THeartbeat, body)
        _require(t, "service_id", "version", "interval_ms")
        return Heartbeat(t.service_id, t.version, interval_s(t.interval_ms), bool(t.report))
    raise ProtocolError(f"unknown topic {topic[:16]!r}")


def parse_snapshot_reply(response: Any) -> SnapshotChunk | SnapshotEnd:
    """The chunk or the end carried by a decoded ``TResponse`` to a snapshot request.

    Raises:
        ProtocolError: undecodable entries, a non-OK status, or neither a chunk nor an end.
    """
    chunk = response.chunk
    if chunk is not None:
        return SnapshotChunk(chunk.seq, entries_from_thrift(chunk.entries))
    end = response.snapshot_end
    if end is None or response.status.code != svc.TStatusCode.OK:
        raise ProtocolError("snapshot answered with an error, or with neither chunk nor end")
    return SnapshotEnd(end.service_id, end.version, end.count, end.chunks)


MAX_HMS_URI = 1024
"""The longest ``hms_uri`` a welcome may carry (a host name is at most 253 bytes)."""


def parse_welcome(t: Any) -> Welcome:
    """The :class:`Welcome` in a decoded ``TWelcome``. Its ``hms_uri`` is passed on as
    sent (its form is checked where it is used, as a ``--upstream`` would be).

    Raises:
        ProtocolError: a required field missing, or an ``hms_uri`` over
            :data:`MAX_HMS_URI` characters.
    """
    _require(t, "service_id", "pub_endpoint", "version")
    if t.hms_uri is not None and len(t.hms_uri) > MAX_HMS_URI:
        raise ProtocolError(f"welcome: hms_uri of {len(t.hms_uri)} characters")
    snapshot = None if t.snapshot is None else entries_from_thrift(t.snapshot)
    return Welcome(t.service_id, t.pub_endpoint, t.version, t.hms_uri or None, snapshot)


def delta_to_thrift(service_id: str, delta: Delta) -> object:
    return svc.TDelta(
        service_id=service_id,
        from_version=delta.from_version,
        to_version=delta.to_version,
        entries=[entry_to_thrift(e) for e in delta.entries],
    )


def delta_from_thrift(t: object) -> Delta:
    _require(t, "service_id", "from_version", "to_version")
    return Delta(t.from_version, t.to_version, entries_from_thrift(t.entries))  # type: ignore[attr-defined]


def _require(t: Any, *names: str) -> None:
    """``names`` are set, and a version range (when ``names`` has one) is not reversed."""
    missing = [n for n in names if getattr(t, n, None) is None]
    if missing:
        raise ProtocolError(f"{type(t).__name__} lacks {', '.join(missing)}")
    if "to_version" in names and t.to_version < t.from_version:
        raise ProtocolError(f"version range ({t.from_version}, {t.to_version}] is reversed")
