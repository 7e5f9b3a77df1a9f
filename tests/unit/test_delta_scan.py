"""Published delta parts scanned from their bytes: the same part as the general decoder,
anything else left to it, garbage never accepted."""

from __future__ import annotations

import random
from typing import Any

import pytest

import idl
from subscriber.protocol import codec, delta_scan, wire
from subscriber.protocol.delta import INVALIDATED, Delta, Entry
from subscriber.protocol.delta_scan import MAX_SCANNED, scan_delta
from subscriber.protocol.errors import ProtocolError
from subscriber.protocol.messages import DeltaPart

svc = idl.catalog_service
pytestmark = pytest.mark.timeout(120)
SERVICE = "4af8456e" * 4  # as long as catalogd's


def general(topic: bytes, body: bytes) -> DeltaPart:
    """The part as the general way reads it (codec.unpack, then the fields copied)."""
    t = codec.unpack(svc.TDelta, body)
    database = t.database if t.database is not None else topic[1:-1].decode(errors="replace")
    entries = wire.entries_from_thrift(t.entries)
    counts = dict(t.counts) if t.counts is not None else None
    return DeltaPart(t.service_id, t.from_version, t.to_version, database, entries, counts)


def topic_database(topic: bytes) -> str:
    return topic[1:-1].decode(errors="replace")


def random_delta(rng: random.Random, version: int) -> Delta:
    """Entries of two databases and the global ones: live (empty objects too),
    tombstones, partitions, keys with escapes and non-ASCII."""
    entries = []
    for i in range(rng.randint(0, 6)):
        db = rng.choice(["a", "bé", ""])
        key = (
            f"TABLE:{db}.t{i}"
            if db
            else rng.choice(["PRINCIPAL:admin.ROLE", "HDFS_CACHE_POOL:p", "CATALOG:c"])
        )
        if db and rng.random() < 0.3:
            key = f"HDFS_PARTITION:{db}.t{i}:dt={i}/r=x%2F{i}é"
        payload = None if rng.random() < 0.25 else rng.randbytes(rng.choice([0, 1, 40, 900]))
        entries.append(Entry(key, version + 1 + i, payload))
    return Delta(version, version + 1 + len(entries), tuple(entries))


def messages(delta: Delta, **kw: Any) -> list[tuple[bytes, bytes]]:
    return [
        (topic, body)
        for topic, body in wire.delta_messages(SERVICE, delta, **kw)
        if topic != wire.TOPIC_COMMIT
    ]


@pytest.mark.parametrize("seed", range(40))
def test_a_scanned_part_is_the_part_the_decoder_reads(seed: int) -> None:
    rng = random.Random(seed)
    delta = random_delta(rng, rng.randint(0, 2**40))
    for topic, body in messages(delta):
        scanned = scan_delta(body, topic_database(topic))
        if topic.startswith(wire.TOPIC_INVALIDATION) and b"\x0f\x00\x07" in body:
            assert scanned is None  # grouped partitions: the general way
            continue
        assert scanned == general(topic, body)
        assert wire.parse_publication(topic, body) == scanned
        # A one-frame publication is scanned in place, after its topic.
        frame = wire.publication(topic, body)
        assert scan_delta(frame, topic_database(topic), len(topic)) == scanned
        assert scan_delta(b"\x01" + frame, topic_database(topic), len(topic)) is None
        assert wire.parse_frame(frame) == scanned


def test_catalogds_part_of_one_change_is_scanned_not_decoded(monkeypatch: Any) -> None:
    delta = Delta(7, 8, (Entry("TABLE:db.t", 8, b"object bytes"),))
    (topic, body), (inv_topic, inv_body) = messages(delta)

    def refuse(*args: Any, **kw: Any) -> None:
        raise AssertionError("decoded the general way")

    expected = general(topic, body), general(inv_topic, inv_body)
    monkeypatch.setattr(codec, "unpack", refuse)
    part = wire.parse_publication(topic, body)
    assert part == expected[0]
    assert part.entries == (Entry("TABLE:db.t", 8, b"object bytes"),)
    assert part.counts == {"db": 1}
    assert wire.parse_publication(inv_topic, inv_body) == expected[1]
    assert expected[1].entries[0].payload is INVALIDATED


def test_a_remembered_tail_reads_as_the_first_and_long_tails_are_not_remembered() -> None:
    # Every change to one database ends in the same bytes (database, counts): the scan
    # reads them once. Many databases in one delta make a long tail: read, not kept.
    delta_scan._known_tail.cache_clear()
    for version in range(1, 4):
        delta = Delta(version - 1, version, (Entry("TABLE:db.t", version, b"x"),))
        (topic, body), _ = messages(delta)
        part = scan_delta(body, topic_database(topic))
        assert part == general(topic, body)
        with pytest.raises(TypeError):
            part.counts["db"] = 2  # type: ignore[index]  # shared between parts: read-only
    assert delta_scan._known_tail.cache_info().misses == 1
    wide = Delta(0, 1, tuple(Entry(f"TABLE:db{i:03}.t", 1, b"x") for i in range(40)))
    parts = [m for m in messages(wide) if m[0].startswith(wire.TOPIC_DELTA)]
    for topic, body in parts:
        assert scan_delta(body, topic_database(topic)) == general(topic, body)
    info = delta_scan._known_tail.cache_info()
    topic, body = parts[-1]  # the counts of 40 databases: a tail over 256 bytes
    assert len(body) - body.index(b"\x0d\x00\x06") > delta_scan._KNOWN_TAIL_MAX
    assert scan_delta(body, topic_database(topic)) == general(topic, body)
    assert delta_scan._known_tail.cache_info() == info  # neither looked up nor kept


def test_other_layouts_go_the_general_way() -> None:
    delta = Delta(1, 3, (Entry("TABLE:a.t", 2, b"x" * 3000), Entry("TABLE:a.u", 3, None)))
    (topic, body), *_ = messages(delta)
    assert body[0] == codec.FLAG_ZLIB and scan_delta(body, "a") is None  # compressed
    groups = Delta(1, 2, (Entry("HDFS_PARTITION:a.t:k=1", 2, b"p"),))
    inv_topic, inv_body = messages(groups)[1]
    assert scan_delta(inv_body, "a") is None  # an invalidation's grouped partitions
    assert wire.parse_publication(inv_topic, inv_body).entries[0].key == "HDFS_PARTITION:a.t:k=1"
    # Fields as thriftpy2 writes them, in an order catalogd does not use, or a tombstone
    # that also carries an object:
    odd = svc.TDelta(
        service_id="s",
        from_version=1,
        to_version=2,
        entries=[svc.TCatalogEntry(key="TABLE:a.t", version=2, object=b"o", removed=False)],
    )
    body = codec.pack(odd)
    assert scan_delta(body, "a") is None
    assert wire.parse_publication(b"da\0", body).entries[0].payload == b"o"
    many = tuple(Entry(f"TABLE:a.t{i}", i + 2, b"") for i in range(1200))
    body = codec.frame(wire.encode_delta(SERVICE, 1, 1201, many), compress_threshold=10**9)
    assert MAX_SCANNED // 2 < len(body) <= MAX_SCANNED
    assert scan_delta(body, "a") == general(b"da\0", body)
    assert scan_delta(body + bytes(MAX_SCANNED), "a") is None  # too long: not looked at
    assert scan_delta(b"", "a") is None


def test_no_mutation_is_accepted_unless_the_decoder_reads_the_same() -> None:
    """Every truncation and byte flip of a part with tombstones, a database and counts:
    the scan gives None, or exactly the part the general way reads from those bytes."""
    delta = Delta(
        5,
        8,
        (
            Entry("TABLE:a.t", 6, b"obj"),
            Entry("FUNCTION:a.f(int)", 7, None),
            Entry("TABLE:a.é", 8, b""),
        ),
    )
    topic, raw = messages(delta)[0]
    mutants = [raw[:n] for n in range(len(raw))]
    mutants += [
        raw[:i] + bytes([raw[i] ^ flip]) + raw[i + 1 :]
        for i in range(len(raw))
        for flip in (0x01, 0x02, 0x80, 0xFF)
    ]
    mutants += [raw + b"\0", raw[:-1] + b"\x0b\x00\x05\x00\x00\x00\x01z\0"]
    accepted = 0
    for mutant in mutants:
        part = scan_delta(mutant, topic_database(topic))
        if part is None:
            continue
        accepted += 1
        try:
            expected = general(topic, mutant)
        except ProtocolError:
            pytest.fail(f"scan accepted bytes the decoder refuses: {mutant!r:.200}")
        assert part == expected
    assert accepted > 50  # flips inside versions and objects change only those


def test_declared_lengths_and_counts_beyond_the_input_are_refused_at_once() -> None:
    head = b"\x00\x0b\x00\x01\x00\x00\x00\x01s\x0a\x00\x02" + bytes(8) + b"\x0a\x00\x03" + bytes(8)
    for tail in (
        b"\x0f\x00\x04\x0c\x7f\xff\xff\xff\x00",  # 2**31 - 1 entries in 1 byte
        b"\x0f\x00\x04\x0c\xff\xff\xff\xff\x00",  # -1 entries
        b"\x0f\x00\x04\x0c\x00\x00\x00\x01\x0b\x00\x01\x7f\xff\xff\xff",  # a 2 GiB key
        b"\x0f\x00\x04\x0c\x00\x00\x00\x00\x0d\x00\x06\x0b\x08\x7f\xff\xff\xff\x00",  # counts
    ):
        assert scan_delta(head + tail, "a") is None
        with pytest.raises(ProtocolError):
            wire.parse_publication(b"da\0", head + tail)


def test_a_reversed_version_range_is_refused_both_ways() -> None:
    """A part or commit whose range runs backwards is garbage, not an exception later."""
    body = codec.frame(wire.encode_delta(SERVICE, 5, 4, ()), compress_threshold=10**9)
    assert scan_delta(body, "a") is None
    with pytest.raises(ProtocolError, match="reversed"):
        wire.parse_publication(b"da\0", body)
    commit = svc.TDeltaCommit(service_id="s", from_version=5, to_version=4, counts={})
    with pytest.raises(ProtocolError, match="reversed"):
        wire.parse_publication(wire.TOPIC_COMMIT, codec.pack(commit))
