"""Snapshot chunks scanned with their partitions packed: the same entries as decoding,
garbage never accepted, packed partitions read, changed and counted like unpacked ones."""

from __future__ import annotations

import random
import zlib
from typing import Any

import pytest

import idl
from catalogd.core.catalog import Catalog
from catalogd.server.snapshots import snapshot_frames
from subscriber.cache import CatalogCache, PackedPartitions, PartitionSet
from subscriber.protocol import codec, packed, wire
from subscriber.protocol.delta import Delta, Entry, make_entry
from subscriber.protocol.errors import ProtocolError
from subscriber.protocol.messages import Heartbeat, SnapshotChunk, SnapshotEnd
from subscriber.sync import ActionKind, SyncMachine

svc = idl.catalog_service
pytestmark = pytest.mark.timeout(120)
RID = 7
SERVICE = "4af8456e" * 4  # as long as catalogd's


def catalog_of(tables: int, parts: int, seed: int = 0) -> Catalog:
    """Two databases of ``tables`` tables with ``parts`` partitions each (names with
    escapes and non-ASCII), a function and a global object."""
    rng = random.Random(seed)
    catalog = Catalog()
    catalog.commit({"DATABASE:a": b"da", "DATABASE:b": b"db", "PRINCIPAL:admin.ROLE": b"r"})
    for db in "ab":
        catalog.commit({f"TABLE:{db}.t{i}": rng.randbytes(40) for i in range(tables)})
        catalog.commit({f"FUNCTION:{db}.f(int)": b"fn"})
        for i in range(tables):
            names = [f"dt={d}/r=x%2F{d % 3}é" for d in range(parts)]
            catalog.commit(
                {f"HDFS_PARTITION:{db}.t{i}:{n}": rng.randbytes(rng.randint(1, 90)) for n in names}
            )
    return catalog


def frames_of(catalog: Catalog, chunk_size: int, **kw: Any) -> list[bytes]:
    args: dict[str, Any] = {"service_id": SERVICE, "request_id": RID, "databases": None}
    args.update(kw)
    return list(snapshot_frames(catalog, chunk_size=chunk_size, **args))


def decoded(frame: bytes) -> tuple[int, int, dict[str, Entry]]:
    """(seq, entries sent, key -> entry: a later duplicate wins, as in a view)."""
    response = codec.unpack(svc.TResponse, frame)
    chunk = wire.parse_snapshot_reply(response)
    assert isinstance(chunk, SnapshotChunk)
    return chunk.seq, len(chunk.entries), {e.key: e for e in chunk.entries}


def scanned(chunk: SnapshotChunk) -> tuple[int, dict[str, Entry]]:
    """(entries sent, key -> entry) of ``chunk``, its runs unpacked."""
    found = {e.key: e for e in chunk.entries}
    for run in chunk.packed:
        unpacked: dict[str, Entry] = {}
        packed.unpack_run(run, unpacked)
        for name, entry in unpacked.items():
            assert entry.key == f"HDFS_PARTITION:{run.table}:{name}"
            found[entry.key] = entry
    return chunk.count, found


@pytest.mark.parametrize("chunk_size", [1, 3, 7, 50, 2000])
def test_a_scanned_chunk_holds_what_decoding_gives(chunk_size: int) -> None:
    frames = frames_of(catalog_of(5, 9), chunk_size)
    for frame in frames[:-1]:
        chunk = packed.scan_chunk(frame, RID)
        assert chunk is not None
        seq, count, entries = decoded(frame)
        assert chunk.seq == seq and scanned(chunk) == (count, entries)
        assert not any(e.key.startswith("HDFS_PARTITION:") for e in chunk.entries)
    assert packed.scan_chunk(frames[-1], RID) is None  # the end is decoded the general way


def test_runs_follow_tables_across_chunk_boundaries() -> None:
    frames = frames_of(catalog_of(3, 10), 4)
    runs = [run for f in frames[:-1] for run in packed.scan_chunk(f, RID).packed]  # type: ignore[union-attr]
    per_table: dict[str, int] = {}
    for run in runs:
        per_table[run.table] = per_table.get(run.table, 0) + run.count
    assert per_table == {f"{db}.t{i}": 10 for db in "ab" for i in range(3)}
    assert len(runs) > len(per_table)  # some tables span chunks


def test_other_answers_and_other_requests_are_left_to_the_decoder() -> None:
    frame = frames_of(catalog_of(1, 2), 100)[0]
    assert packed.scan_chunk(frame, RID + 1) is None
    ok = svc.TStatus(code=svc.TStatusCode.OK)
    welcome = svc.TWelcome(
        service_id="s", pub_endpoint="tcp://x:1", version=3, heartbeat_interval_ms=1000
    )
    for response in (
        svc.TResponse(request_id=RID, status=ok, welcome=welcome),
        svc.TResponse(request_id=RID, status=svc.TStatus(code=svc.TStatusCode.ERROR)),
        svc.TResponse(status=ok, chunk=svc.TSnapshotChunk(service_id="s", seq=0, entries=[])),
    ):
        assert packed.scan_chunk(codec.pack(response), RID) is None
    assert packed.scan_chunk(b"", RID) is None and packed.scan_chunk(b"\x05abc", RID) is None


def test_a_tombstone_or_an_extra_field_goes_the_general_way() -> None:
    entries = [
        svc.TCatalogEntry(key="HDFS_PARTITION:a.t:k=1", version=3, object=b"x"),
        svc.TCatalogEntry(key="TABLE:a.t", version=2, removed=True),
    ]
    chunk = svc.TSnapshotChunk(service_id="s", seq=0, entries=entries)
    response = svc.TResponse(request_id=RID, status=svc.TStatus(code=0), chunk=chunk)
    assert packed.scan_chunk(codec.pack(response), RID) is None


def test_no_mutation_of_a_frame_is_accepted_unless_it_decodes_to_the_same() -> None:
    """Every byte flipped, and every truncation, of an uncompressed chunk frame: the scan
    gives None, or exactly the entries the general decoder reads from the same bytes."""
    compressed = frames_of(catalog_of(2, 3), 30)[0]
    raw = b"\x00" + zlib.decompress(compressed[1:])
    mutants = [raw[:n] for n in range(len(raw))]
    mutants += [
        raw[:i] + bytes([raw[i] ^ flip]) + raw[i + 1 :]
        for i in range(1, len(raw))
        for flip in (0x01, 0x80, 0xFF)
    ]
    accepted = 0
    for mutant in mutants:
        chunk = packed.scan_chunk(mutant, RID)
        if chunk is None:
            continue
        accepted += 1
        try:
            _, count, entries = decoded(mutant)
        except ProtocolError:
            pytest.fail(f"scan accepted bytes the decoder refuses: {mutant!r:.200}")
        assert scanned(chunk) == (count, entries)
    assert accepted  # flips inside payloads change nothing but the payload


def test_a_compressed_frame_bomb_or_truncation_is_refused() -> None:
    frame = frames_of(catalog_of(2, 3), 30)[0]
    assert packed.scan_chunk(frame[:-5], RID) is None
    assert packed.scan_chunk(frame + b"x", RID) is None
    head = zlib.decompress(frame[1:])[:40]
    bomb = b"\x01" + zlib.compress(head + bytes(codec.MAX_MESSAGE_SIZE), 9)
    assert packed.scan_chunk(bomb, RID) is None


def packed_view() -> tuple[CatalogCache, CatalogCache]:
    """The same snapshot installed packed and decoded."""
    frames = frames_of(catalog_of(4, 12), 9)
    chunks = [packed.scan_chunk(f, RID) for f in frames[:-1]]
    with_runs = CatalogCache(emit_events=False)  # nobody listens: nothing unpacked
    with_runs.install(
        SERVICE,
        9,
        [e for c in chunks for e in c.entries],  # type: ignore[union-attr]
        [r for c in chunks for r in c.packed],  # type: ignore[union-attr]
    )
    plain = CatalogCache()
    plain.install(SERVICE, 9, [e for f in frames[:-1] for e in decoded(f)[2].values()])
    return with_runs, plain


def test_packed_partitions_answer_every_read_as_unpacked_ones_do() -> None:
    with_runs, plain = packed_view()
    a, b = with_runs.view, plain.view
    assert a.entry_count() == b.entry_count()
    for table in b.partitions:
        got, want = a.partitions_of(table), b.partitions_of(table)
        assert isinstance(got, PackedPartitions) and got.packed and len(got) == len(want)
        assert got.get("dt=3/r=x%2F0é") == want.get("dt=3/r=x%2F0é")
        assert not got.packed  # the first read unpacked it
        for spec in ({"r": "x/1é"}, {"dt": "3"}, {"r": "x/1é", "dt": "4"}):  # scan, index
            assert sorted(got.matching(spec)) == sorted(want.matching(spec))
        assert dict(got.items()) == dict(want.items())
    key = "HDFS_PARTITION:b.t3:dt=11/r=x%2F2é"
    assert with_runs.view.get(key) == plain.view.get(key) is not None
    assert {e.key: e for e in a.entries()} == {e.key: e for e in b.entries()}


def test_a_delta_to_a_packed_table_goes_to_its_overlay_without_unpacking() -> None:
    with_runs, plain = packed_view()
    changes = (
        make_entry("HDFS_PARTITION:a.t1:dt=1/r=x%2F1é", 10, b"new"),
        make_entry("HDFS_PARTITION:a.t2:dt=2/r=x%2F2é", 11, None),
        make_entry("HDFS_PARTITION:a.t2:dt=99", 12, b"added"),
        make_entry("HDFS_PARTITION:a.t3:dt=77", 13, None),  # removes nothing
    )
    with_runs.apply(Delta(9, 13, changes))
    plain.apply(Delta(9, 13, changes))
    for table in ("a.t1", "a.t2", "a.t3"):
        got, want = with_runs.view.partitions_of(table), plain.view.partitions_of(table)
        assert isinstance(got, PackedPartitions) and got.packed  # the delta unpacked nothing
        assert got.get("dt=2/r=x%2F2é") == want.get("dt=2/r=x%2F2é")
        assert dict(got.items()) == dict(want.items()) and len(got) == len(want)
        spec = {"r": "x/1é"}
        assert sorted(got.matching(spec)) == sorted(want.matching(spec))
        assert sorted(got.matching({"dt": "99"})) == sorted(want.matching({"dt": "99"}))
    assert with_runs.view.get("HDFS_PARTITION:a.t2:dt=2/r=x%2F2é") is None
    assert with_runs.view.entry_count() == plain.view.entry_count()


def test_events_are_told_like_unpacked_tables_tell_them() -> None:
    with_runs, plain = packed_view()
    with_runs.emit_events = plain.emit_events = True
    changes = (
        make_entry("HDFS_PARTITION:a.t1:dt=1/r=x%2F1é", 10, b"new"),
        make_entry("HDFS_PARTITION:a.t2:dt=2/r=x%2F2é", 11, None),
        make_entry("HDFS_PARTITION:a.t2:dt=99", 12, b"added"),
        make_entry("HDFS_PARTITION:a.t3:dt=77", 13, None),
    )
    assert with_runs.apply(Delta(9, 13, changes)) == plain.apply(Delta(9, 13, changes))


@pytest.mark.parametrize("seed", range(6))
def test_random_deltas_to_packed_tables_read_as_a_plain_replica(seed: int) -> None:
    """Overlays grow, fold into plain sets past half the frames, and survive reads that
    unpack the frames halfway: every state reads as the same deltas applied unpacked."""
    rng = random.Random(seed)
    with_runs, plain = packed_view()
    names = [f"dt={d}/r=x%2F{d % 3}é" for d in range(12)] + [f"dt={d}" for d in range(20, 26)]
    version = 9
    for _ in range(40):
        table = f"{rng.choice('ab')}.t{rng.randrange(4)}"
        batch = {}
        for name in rng.sample(names, rng.randint(1, 4)):
            version += 1
            payload = None if rng.random() < 0.4 else rng.randbytes(8)
            batch[name] = make_entry(f"HDFS_PARTITION:{table}:{name}", version, payload)
        delta = Delta(version - len(batch), version, tuple(batch.values()))
        with_runs.apply(delta)
        plain.apply(delta)
        probe = f"{rng.choice('ab')}.t{rng.randrange(4)}"
        got, want = with_runs.view.partitions_of(probe), plain.view.partitions_of(probe)
        if rng.random() < 0.3:
            assert dict(got.items()) == dict(want.items())  # unpacks the frames halfway
        assert len(got) == len(want)
        assert got.get(names[0]) == want.get(names[0])
    for table in plain.view.partitions:
        got, want = with_runs.view.partitions_of(table), plain.view.partitions_of(table)
        assert dict(got.items()) == dict(want.items()) and len(got) == len(want)
        assert sorted(got.matching({"r": "x/2é"})) == sorted(want.matching({"r": "x/2é"}))


def test_an_overlay_past_half_the_frames_is_folded_into_a_plain_set() -> None:
    with_runs, _ = packed_view()  # tables of 12 partitions: the 6th change folds
    for i in range(6):
        version = 10 + i
        key = f"HDFS_PARTITION:a.t0:dt={i}/r=x%2F{i % 3}é"
        with_runs.apply(Delta(version - 1, version, (make_entry(key, version, b"v"),)))
        table = with_runs.view.partitions_of("a.t0")
        assert isinstance(table, PackedPartitions if i < 5 else PartitionSet)
    assert len(with_runs.view.partitions_of("a.t0")) == 12


def test_a_table_whose_partitions_all_go_leaves_the_view_once_unpacked() -> None:
    with_runs, _ = packed_view()
    names = [n for n, _ in with_runs.view.partitions_of("b.t1").items()]
    removals = tuple(
        make_entry(f"HDFS_PARTITION:b.t1:{n}", 10 + i, None) for i, n in enumerate(names)
    )
    with_runs.apply(Delta(9, 9 + len(removals), removals))
    assert "b.t1" not in with_runs.view.partitions


def test_a_reinstall_reports_the_differences_of_packed_views() -> None:
    with_runs, plain = packed_view()
    frames = frames_of(catalog_of(4, 12, seed=1), 9)  # other payloads, same keys
    chunks = [packed.scan_chunk(f, RID) for f in frames[:-1]]
    entries = [e for c in chunks for e in c.entries]  # type: ignore[union-attr]
    runs = [r for c in chunks for r in c.packed]  # type: ignore[union-attr]
    with_runs.emit_events = True  # a listener: every key's event, so everything unpacked
    events = with_runs.install(SERVICE, 20, entries, runs)
    assert len(events) == with_runs.view.entry_count() - 5  # all but the unchanged heads


def test_the_machine_counts_packed_entries_against_the_end() -> None:
    frames = frames_of(catalog_of(2, 5), 4)
    chunks = [packed.scan_chunk(f, RID) for f in frames[:-1]]
    end = wire.parse_snapshot_reply(codec.unpack(svc.TResponse, frames[-1]))
    assert isinstance(end, SnapshotEnd)

    def fed(sent: list[SnapshotChunk | None]) -> tuple[SyncMachine, list[ActionKind]]:
        machine = SyncMachine()
        machine.on_connected(0)
        machine.on_heartbeat(Heartbeat(SERVICE, 1, 1.0), 0.1)
        kinds = []
        for chunk in sent:
            assert chunk is not None
            kinds += [a.kind for a in machine.on_snapshot_chunk(chunk, 0.2).actions]
        kinds += [a.kind for a in machine.on_snapshot_end(end, 0.3).actions]
        return machine, kinds

    machine, kinds = fed(chunks)
    assert machine.synced and not kinds
    assert machine.cache.view.entry_count() == end.count
    machine, kinds = fed(chunks[:-1])  # the last chunk lost
    assert not machine.synced and ActionKind.REQUEST_SNAPSHOT in kinds


def test_readers_racing_to_unpack_all_see_every_partition() -> None:
    """The first readers of a packed table may unpack it together; none may see it
    empty (one clears the frames after publishing its set)."""
    import sys
    import threading

    frames = frames_of(catalog_of(1, 40), 2000)
    chunk = packed.scan_chunk(frames[0], RID)
    assert chunk is not None
    runs = tuple(r for r in chunk.packed if r.table == "a.t0")
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(200):
            table = PackedPartitions.of(runs)
            sizes: list[int] = []
            threads = [
                threading.Thread(
                    target=lambda t, out: out.append(len(dict(t.items()))), args=(table, sizes)
                )
                for _ in range(4)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert sizes == [40] * 4
    finally:
        sys.setswitchinterval(interval)


def test_a_delta_after_a_read_still_goes_to_the_overlay() -> None:
    """Folding re-buckets the whole table: never at the first change after a read."""
    with_runs, plain = packed_view()
    assert len(dict(with_runs.view.partitions_of("a.t0").items())) == 12  # unpacked
    delta = Delta(9, 10, (make_entry("HDFS_PARTITION:a.t0:dt=1/r=x%2F1é", 10, b"v"),))
    with_runs.apply(delta)
    plain.apply(delta)
    table = with_runs.view.partitions_of("a.t0")
    assert isinstance(table, PackedPartitions) and not table.packed
    assert dict(table.items()) == dict(plain.view.partitions_of("a.t0").items())


def test_an_install_tells_its_events_in_version_order() -> None:
    """A snapshot arrives database by database (``""`` first, then ``a``, ``b``), not in
    version order; a listener sees the install's events in version order, as a delta's."""
    frames = frames_of(catalog_of(2, 3), 5)
    chunks = [packed.scan_chunk(f, RID) for f in frames[:-1]]
    cache = CatalogCache()
    events = cache.install(
        SERVICE,
        50,
        [e for c in chunks for e in c.entries],  # type: ignore[union-attr]
        [r for c in chunks for r in c.packed],  # type: ignore[union-attr]
    )
    versions = [event.version for event in events]
    assert versions == sorted(versions) and len(events) == cache.view.entry_count()
