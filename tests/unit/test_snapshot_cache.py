"""Shared snapshot chunks: stitched zlib frames, the per-database cache, database views,
consistency of joins racing commits, and the loss checks a subscriber keeps."""

from __future__ import annotations

import random
import zlib
from typing import Any

import pytest

import idl
from catalogd.core.catalog import Catalog
from catalogd.server import sockets
from catalogd.server.snapshot_cache import (
    SnapshotCache,
    encoded_entries,
    thrift_encoded_entries,
)
from catalogd.server.snapshots import SnapshotJob, chunk_head, snapshot_frames
from subscriber.protocol import codec, wire
from subscriber.protocol.delta import Entry
from subscriber.protocol.errors import ProtocolError
from subscriber.protocol.keys import database_of
from subscriber.protocol.messages import SnapshotChunk
from subscriber.protocol.segments import adler32_combine, deflate_segment, stitched_frame
from subscriber.sync import ActionKind, SyncMachine

svc = idl.catalog_service
pytestmark = pytest.mark.timeout(60)


def populated() -> Catalog:
    catalog = Catalog()
    catalog.commit({"DATABASE:a": b"da", "DATABASE:b": b"db", "PRINCIPAL:admin.ROLE": b"r"})
    catalog.commit({f"TABLE:a.t{i}": f"a{i}".encode() * 50 for i in range(7)})
    catalog.commit({f"TABLE:b.t{i}": f"b{i}".encode() * 50 for i in range(5)})
    catalog.commit({part(i): f"p{i}".encode() * 20 for i in range(8)})
    return catalog


def part(i: int) -> str:
    return f"HDFS_PARTITION:a.t{i % 2}:dt={i}"


def frames_of(catalog: Catalog, cache: SnapshotCache | None, **kw: Any) -> list[bytes]:
    args: dict[str, Any] = {"service_id": "svc", "request_id": 7, "databases": None}
    args.update(kw)
    return list(snapshot_frames(catalog, chunk_size=3, cache=cache, **args))


def state_of(frames: list[bytes]) -> tuple[int, dict[str, bytes | None], int]:
    """(version, key -> payload, chunks) of a decoded snapshot stream."""
    *chunks, end = [codec.unpack(svc.TResponse, f) for f in frames]
    assert [c.chunk.seq for c in chunks] == list(range(len(chunks)))
    got = [e for c in chunks for e in wire.entries_from_thrift(c.chunk.entries)]
    term = end.snapshot_end
    assert (term.count, term.chunks) == (len(got), len(chunks))
    assert len({e.key for e in got}) == len(got)
    return term.version, {e.key: e.payload for e in got}, len(chunks)


def live(catalog: Catalog, dbs: set[str] | None = None) -> dict[str, bytes | None]:
    return {
        e.key: e.payload for e in catalog.live_entries() if dbs is None or database_of(e.key) in dbs
    }


# -- stitched frames ----------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_a_stitched_frame_inflates_to_prefix_body_and_suffix(seed: int) -> None:
    rng = random.Random(seed)
    sizes = [0, 1, 100, 70_000, 140_000]
    prefix, suffix = (rng.randbytes(rng.choice(sizes)) for _ in range(2))
    bodies = [
        rng.randbytes(rng.choice(sizes)) + b"x" * rng.choice(sizes) for _ in range(rng.randrange(4))
    ]
    frame = stitched_frame(prefix, [deflate_segment(b) for b in bodies], suffix)
    assert frame[0] == codec.FLAG_ZLIB
    inflater = zlib.decompressobj()
    assert inflater.decompress(frame[1:]) == prefix + b"".join(bodies) + suffix
    body = b"".join(bodies)
    assert inflater.eof and not inflater.unused_data  # adler32 checked, nothing trailing
    assert adler32_combine(zlib.adler32(prefix), zlib.adler32(body), len(body)) == zlib.adler32(
        prefix + body
    )


def test_a_chunk_frame_is_exactly_the_encoding_pack_would_compress() -> None:
    catalog = populated()
    for frame in frames_of(catalog, SnapshotCache())[:-1]:
        response = codec.unpack(svc.TResponse, frame)
        assert zlib.decompress(frame[1:]) == codec.encode(response)
        assert codec.unpack(svc.TResponse, codec.pack(response)) == response
    head = chunk_head("svc", None)  # then seq, the entries' header, the entries, 2 stops
    empty = codec.decode(svc.TResponse, head + b"\0\0\0\3\x0f\0\3\x0c\0\0\0\0\0\0")
    assert (empty.request_id, empty.chunk.seq, empty.chunk.entries) == (None, 3, [])


def test_a_corrupted_or_truncated_stitched_frame_is_refused() -> None:
    frame = frames_of(populated(), None)[0]
    with pytest.raises(ProtocolError):
        codec.unpack(svc.TResponse, frame[:-1])
    flipped = bytearray(frame)
    flipped[-1] ^= 1  # the combined adler32 is checked
    with pytest.raises(ProtocolError):
        codec.unpack(svc.TResponse, bytes(flipped))


# -- the cache ----------------------------------------------------------------------------


def test_later_joins_of_an_unchanged_catalog_reuse_every_chunk() -> None:
    catalog, cache = populated(), SnapshotCache()
    first = frames_of(catalog, cache)
    misses = cache.misses
    second = frames_of(catalog, cache, request_id=8)
    assert cache.misses == misses and cache.hits == misses  # nothing encoded again
    assert state_of(first) == state_of(second)
    assert state_of(first)[1] == live(catalog)
    assert codec.unpack(svc.TResponse, second[0]).request_id == 8


def test_a_commit_to_a_database_invalidates_only_its_chunks() -> None:
    catalog, cache = populated(), SnapshotCache()
    frames_of(catalog, cache)
    hits, misses = cache.hits, cache.misses
    catalog.commit({"TABLE:a.t1": b"changed", "TABLE:a.t2": None})
    version, state, _ = state_of(frames_of(catalog, cache))
    assert cache.misses == misses + 1 and cache.hits == hits + 2  # a; b and "" reused
    assert version == catalog.version and state == live(catalog)


def test_small_databases_share_chunks_and_no_chunk_holds_more_than_its_size() -> None:
    catalog = Catalog()
    catalog.commit({f"TABLE:d{i:02}.t{j}": b"x" for i in range(30) for j in range(i % 4)})
    catalog.commit({f"TABLE:big.t{j}": b"y" for j in range(10)})
    frames = list(
        snapshot_frames(catalog, service_id="s", request_id=1, databases=None, chunk_size=4)
    )
    *chunks, _ = [codec.unpack(svc.TResponse, f) for f in frames]
    sizes = [len(c.chunk.entries) for c in chunks]
    assert max(sizes) <= 4 and sum(sizes) == len(catalog)
    assert len(chunks) <= len(catalog) // 4 + 30 // 4 + 3  # not one frame per database
    assert state_of(frames)[1] == live(catalog)


def test_a_filtered_join_shares_the_chunks_of_an_unfiltered_one() -> None:
    catalog, cache = populated(), SnapshotCache()
    frames_of(catalog, cache)
    misses = cache.misses
    _, state, _ = state_of(frames_of(catalog, cache, databases=["b", "nowhere"]))
    assert state == live(catalog, {"b", ""})
    assert cache.misses == misses + 1  # only the empty "nowhere" (never cached)


def test_the_cache_stays_within_its_bytes_dropping_the_least_recently_used() -> None:
    catalog = Catalog()
    rng = random.Random(1)
    for db in "abcd":
        catalog.commit({f"TABLE:{db}.t{i}": rng.randbytes(300) for i in range(9)})
    probe = SnapshotCache()
    frames_of(catalog, probe, databases=["a"])
    one_db = probe.nbytes
    cache = SnapshotCache(max_bytes=2 * one_db + one_db // 2)
    for db in "abcd":
        frames_of(catalog, cache, databases=[db])
        assert cache.nbytes <= cache.max_bytes
    assert len(cache) == 2
    hits = cache.hits
    frames_of(catalog, cache, databases=["d"])
    assert cache.hits == hits + 1
    nothing = SnapshotCache(max_bytes=0)
    assert state_of(frames_of(catalog, nothing))[1] == live(catalog)
    assert len(nothing) == 0 and nothing.nbytes == 0


# -- consistency: a join racing commits ----------------------------------------------------


@pytest.mark.parametrize("max_bytes", [1 << 20, 300, 0])  # kept, evicted mid-stream, none
@pytest.mark.parametrize("seed", range(25))
def test_joins_racing_commits_each_get_one_consistent_state(seed: int, max_bytes: int) -> None:
    rng = random.Random(seed)
    catalog, cache = populated(), SnapshotCache(max_bytes)
    streams: list[tuple[int, dict[str, bytes | None], Any, list[bytes]]] = []
    for _ in range(6):
        if rng.random() < 0.7:  # a new join captures now
            streams.append(
                (catalog.version, live(catalog), iter(frames_of_lazy(catalog, cache)), [])
            )
        for _, _, frames, got in streams:  # some frames go out
            for _ in range(rng.randrange(3)):
                frame = next(frames, None)
                if frame is not None:
                    got.append(frame)
        db = rng.choice("ab")
        catalog.commit(
            {
                rng.choice([f"TABLE:{db}.t{rng.randrange(9)}", part(rng.randrange(12))]): (
                    rng.choice([None, rng.randbytes(20)])
                )
                for _ in range(3)
            }
        )
    for version, state, frames, got in streams:
        got.extend(frames)
        assert state_of(got)[:2] == (version, state)


def frames_of_lazy(catalog: Catalog, cache: SnapshotCache) -> Any:
    return snapshot_frames(
        catalog, service_id="s", request_id=1, databases=None, chunk_size=2, cache=cache
    )


def test_a_database_view_never_changes_and_its_release_spares_the_copy() -> None:
    catalog = populated()
    view = catalog.database_view("a")
    before = {e.key: e for e in view.entries()}
    assert view.size == len(before) == catalog.size_of_database("a")
    assert set(view.groups) == {"", "a.t0", "a.t1"}  # heads, then each table's partitions
    assert [e.version for e in view.groups["a.t0"].values()] == sorted(
        e.version for e in view.groups["a.t0"].values()
    )
    assert view.changed == catalog.changed_version_of("a")
    catalog.commit({"TABLE:a.t0": b"new", "TABLE:a.t9": b"added", "TABLE:a.t1": None})
    catalog.commit({part(0): b"new", part(1): None, part(20): b"added"})
    assert {e.key: e for e in view.entries()} == before
    assert catalog.changed_version_of("a") == catalog.version > view.changed
    second = catalog.database_view("a")
    catalog.release_view(second)
    catalog.release_view(view)  # an old map: harmless
    catalog.commit({"TABLE:a.t3": b"again"})
    assert second.groups[""]["TABLE:a.t3"].payload == b"again"  # released: written in place
    assert list(catalog.database_view("a").groups[""])[-1] == "TABLE:a.t3"
    assert {e.key for e in view.entries()} == set(before)


def test_removals_and_a_takeover_move_a_database_changed_version() -> None:
    catalog = populated()
    b_changed = catalog.changed_version_of("b")
    catalog.commit({"TABLE:a.t1": None})
    assert catalog.changed_version_of("a") == catalog.version
    assert catalog.changed_version_of("b") == b_changed
    catalog.skip_to(1000)
    assert catalog.changed_version_of("b") > 1000
    assert catalog.changed_version_of("nowhere") == 0


# -- the subscriber's loss checks ------------------------------------------------------------


def machine_fed(frames: list[bytes]) -> tuple[SyncMachine, list[ActionKind]]:
    from subscriber.protocol.messages import Heartbeat

    m = SyncMachine()
    m.on_connected(0)
    m.on_heartbeat(Heartbeat("svc", 1, 1.0), 0.1)
    kinds: list[ActionKind] = []
    for frame in frames:
        reply = wire.parse_snapshot_reply(codec.unpack(svc.TResponse, frame))
        if isinstance(reply, SnapshotChunk):
            step = m.on_snapshot_chunk(reply, 0.2)
        else:
            step = m.on_snapshot_end(reply, 0.2)
        kinds += [a.kind for a in step.actions]
    return m, kinds


def test_the_subscriber_installs_a_shared_stream_and_rejects_a_broken_one() -> None:
    catalog, cache = populated(), SnapshotCache()
    frames_of(catalog, cache)
    frames = frames_of(catalog, cache)  # all from the cache
    m, kinds = machine_fed(frames)
    assert m.synced and not kinds and {e.key for e in m.cache.view.entries()} == set(live(catalog))
    for broken in (
        frames[:1] + frames[2:],  # a chunk lost
        [frames[1], frames[0], *frames[2:]],  # reordered
        frames[:-2] + frames[-1:],  # the last chunk lost
    ):
        m, kinds = machine_fed(broken)
        assert not m.synced and ActionKind.REQUEST_SNAPSHOT in kinds


# -- the server's turn budget -------------------------------------------------------------


class Router:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send_multipart(self, parts: list[bytes], *_: Any, **__: Any) -> None:
        self.sent.append(parts[0])


def test_a_turn_stops_at_its_budget_and_the_next_starts_with_the_others() -> None:
    jobs = [SnapshotJob(bytes([i]), i, iter([b"f"] * 3)) for i in range(4)]
    ticks = iter(range(100))
    router = Router()
    sockets.advance_jobs(router, jobs, 0.0, budget_s=1.5, clock=lambda: next(ticks))  # type: ignore[arg-type]
    assert router.sent == [b"\x00", b"\x01"]  # the clock passed the budget after two
    assert [j.identity for j in jobs] == [b"\x02", b"\x03", b"\x00", b"\x01"]
    sockets.advance_jobs(router, jobs, 0.0)  # type: ignore[arg-type]
    assert router.sent[2:] == [b"\x02", b"\x03", b"\x00", b"\x01"]


def test_entries_are_encoded_as_thrift_encodes_them() -> None:
    entries = [
        Entry("TABLE:a.t", 1, b"x" * 300),
        Entry("HDFS_PARTITION:a.t:dt=é", 2**40, b""),
        Entry("TABLE:a.gone", 3, None),
        Entry("DATABASE:a", 4, bytes(range(256))),
    ]
    for part in ([], entries[:1], entries):
        assert encoded_entries(part) == thrift_encoded_entries(part)


def test_databases_changed_since_lists_the_newest_changes_first() -> None:
    catalog = populated()
    start = catalog.version
    assert catalog.databases_changed_since(start) == []
    catalog.commit({"TABLE:b.t0": b"new"})
    catalog.commit({part(3): None})
    catalog.commit({"PRINCIPAL:admin.ROLE": b"r2", "TABLE:b.t1": b"new"})
    assert catalog.databases_changed_since(start) == ["b", "", "a"]
    assert catalog.databases_changed_since(catalog.version - 1) == ["b"]
    assert set(catalog.databases_changed_since(0)) == {"", "a", "b"}
