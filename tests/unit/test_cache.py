"""The subscriber cache: lock-free views fed with dropped, duplicated and reordered deltas."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalogd.core.catalog import Catalog, DeltaUnavailableError
from subscriber.cache import BUCKETS, CacheView, CatalogCache, ChangeEvent, ChangeKind, build_view
from subscriber.protocol.delta import Delta, Entry, VersionGapError
from subscriber.protocol.keys import partition_key, split_partition_key

TABLE_KEYS = ["DATABASE:a", "TABLE:a.t", "VIEW:a.v", "DATABASE:b", "TABLE:b.u", "PRINCIPAL:r.ROLE"]
PART_KEYS = [f"HDFS_PARTITION:a.t:dt={i}" for i in range(6)] + ["HDFS_PARTITION:b.u:k=1"]
KEYS = TABLE_KEYS + PART_KEYS


def cache_map(cache: CatalogCache) -> dict[str, bytes | None]:
    return {e.key: e.payload for e in cache.view.entries()}


def catalog_map(cat: Catalog) -> dict[str, bytes | None]:
    return {e.key: e.payload for e in cat.live_entries()}


def test_view_indexes_objects_and_partitions() -> None:
    cache = CatalogCache()
    cache.install(
        "s1",
        3,
        [
            Entry("DATABASE:a", 1, b"d"),
            Entry("TABLE:a.t", 2, b"t"),
            Entry("HDFS_PARTITION:a.t:dt=1", 3, b"p"),
        ],
    )
    view = cache.view
    assert view.version == 3 and view.service_id == "s1"
    assert view.keys_of("a") == {"DATABASE:a", "TABLE:a.t"}
    assert view.get("HDFS_PARTITION:a.t:dt=1") == Entry("HDFS_PARTITION:a.t:dt=1", 3, b"p")
    assert [name for name, _ in view.partitions_of("a.t").items()] == ["dt=1"]
    assert view.partitions_of("a.nope").size == 0


def test_old_views_stay_unchanged_after_apply() -> None:
    cache = CatalogCache()
    cache.install("s", 1, [Entry("HDFS_PARTITION:a.t:dt=1", 1, b"x")])
    old = cache.view
    events = cache.apply(
        Delta(1, 3, (Entry("HDFS_PARTITION:a.t:dt=1", 2, None), Entry("TABLE:a.t", 3, b"t")))
    )
    assert [(e.kind, e.key) for e in events] == [
        (ChangeKind.REMOVED, "HDFS_PARTITION:a.t:dt=1"),
        (ChangeKind.ADDED, "TABLE:a.t"),
    ]
    assert old.get("HDFS_PARTITION:a.t:dt=1") is not None and old.version == 1
    assert cache.view.get("HDFS_PARTITION:a.t:dt=1") is None
    assert "a.t" not in cache.view.partitions


def test_one_updated_object_gives_the_view_and_event_the_dataclasses_give() -> None:
    # The one-object update builds its view and its event through their slots.
    cache = CatalogCache()
    cache.install("s", 1, [Entry("TABLE:a.t", 1, b"x"), Entry("TABLE:a.u", 1, b"y")])
    before = cache.view
    events = cache.advance(1, 2, (Entry("TABLE:a.t", 2, b"z"),))
    assert events == [ChangeEvent(ChangeKind.UPDATED, "TABLE:a.t", 2)]
    assert hash(events[0]) == hash(ChangeEvent(ChangeKind.UPDATED, "TABLE:a.t", 2))
    expected = CacheView("s", 2, cache.view.objects, before.by_database, before.partitions)
    assert cache.view == expected and cache.view.objects["TABLE:a.t"].payload == b"z"
    assert dict(cache.view.objects) == {
        **dict(before.objects),
        "TABLE:a.t": Entry("TABLE:a.t", 2, b"z"),
    }
    with pytest.raises(AttributeError):
        cache.view.version = 3  # type: ignore[misc]  # frozen, as a dataclass-built view


def test_gap_is_refused_and_leaves_the_view() -> None:
    cache = CatalogCache()
    cache.install("s", 5, [])
    before = cache.view
    with pytest.raises(VersionGapError):
        cache.apply(Delta(6, 7, (Entry("TABLE:a.t", 7, b"x"),)))
    assert cache.view is before


def test_one_partition_change_copies_one_bucket() -> None:
    entries = [Entry(f"HDFS_PARTITION:a.t:dt={i}", i + 1, b"p") for i in range(1000)]
    cache = CatalogCache()
    cache.install("s", 1000, entries)
    before = cache.view.partitions_of("a.t")
    cache.apply(Delta(1000, 1001, (Entry("HDFS_PARTITION:a.t:dt=5", 1001, b"q"),)))
    after = cache.view.partitions_of("a.t")
    shared = sum(a is b for a, b in zip(before.buckets, after.buckets, strict=True))
    assert shared == BUCKETS - 1 and len(after) == 1000


def test_install_reports_differences() -> None:
    cache = CatalogCache()
    cache.install("s", 2, [Entry("TABLE:a.t", 1, b"1"), Entry("TABLE:a.u", 2, b"1")])
    events = cache.install("s2", 9, [Entry("TABLE:a.t", 8, b"2"), Entry("TABLE:a.w", 9, b"1")])
    assert sorted((e.kind.value, e.key) for e in events) == [
        ("added", "TABLE:a.w"),
        ("removed", "TABLE:a.u"),
        ("updated", "TABLE:a.t"),
    ]


def test_rebased_delta() -> None:
    d = Delta(2, 5, (Entry("a", 3, b"1"), Entry("b", 5, b"2")))
    assert d.rebased(1) is None
    assert d.rebased(2) is d
    assert d.rebased(3) == Delta(3, 5, (Entry("b", 5, b"2"),))
    assert d.rebased(7) == Delta(7, 7, ())


# -- property: a subscriber that is fed a damaged stream still converges --------

ops = st.lists(
    st.dictionaries(st.sampled_from(KEYS), st.one_of(st.none(), st.sampled_from([b"x", b"y"]))),
    min_size=1,
    max_size=25,
)
damage = st.lists(st.sampled_from(["keep", "drop", "dup", "swap"]), max_size=25)


@settings(max_examples=500, deadline=None)
@given(history=ops, join_at=st.integers(0, 25), damage=damage, tombstones=st.integers(0, 4))
def test_damaged_stream_converges(
    history: list[dict[str, bytes | None]], join_at: int, damage: list[str], tombstones: int
) -> None:
    cat = Catalog(max_tombstones=tombstones)
    deltas: list[Delta] = []
    cache = CatalogCache()
    for i, changes in enumerate(history):
        if i == join_at:
            snap = cat.snapshot()
            cache.install("s", snap.version, snap.entries)
        delta = cat.commit(changes)
        if not delta.empty:
            deltas.append(delta)
    if join_at >= len(history):
        snap = cat.snapshot()
        cache.install("s", snap.version, snap.entries)

    # Damage the stream: drop, duplicate and swap neighbours.
    stream: list[Delta] = []
    for i, d in enumerate(deltas):
        how = damage[i] if i < len(damage) else "keep"
        if how == "drop":
            continue
        stream.append(d)
        if how == "dup":
            stream.append(d)
        if how == "swap" and len(stream) >= 2:
            stream[-1], stream[-2] = stream[-2], stream[-1]

    def catch_up() -> None:
        try:
            cache.apply(cat.delta_since(cache.view.version))
        except DeltaUnavailableError:
            snap = cat.snapshot()
            cache.install("s", snap.version, snap.entries)

    for d in stream:
        rebased = d.rebased(cache.view.version)
        if rebased is None:
            catch_up()  # gap: never applied out of order
        elif not rebased.empty:
            cache.apply(rebased)
    # A heartbeat announcing a newer version triggers the last catch-up.
    if cache.view.version < cat.version:
        catch_up()
    assert cache.view.version == cat.version
    assert cache_map(cache) == catalog_map(cat)


@settings(max_examples=200, deadline=None)
@given(history=ops)
def test_snapshot_view_matches_catalog(history: list[dict[str, bytes | None]]) -> None:
    cat = Catalog()
    for changes in history:
        cat.commit(changes)
    snap = cat.snapshot()
    view = build_view("s", snap.version, snap.entries)
    assert {e.key: e.payload for e in view.entries()} == catalog_map(cat)
    assert view.entry_count() == len(cat)


def test_partition_keys_split_back_into_table_and_name() -> None:
    key = partition_key("Sales", "Orders", "dt=2024-01-01/region=a%3Ab")
    assert key == "HDFS_PARTITION:sales.orders:dt=2024-01-01/region=a%3Ab"
    assert split_partition_key(key) == ("sales.orders", "dt=2024-01-01/region=a%3Ab")
    view = build_view("s", 1, [Entry(key, 1, b"x")])
    assert view.partitions_of("sales.orders").get("dt=2024-01-01/region=a%3Ab") is not None
    assert view.get(key) == Entry(key, 1, b"x")
