"""The versioned catalog core: examples and property tests over random histories."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalogd.core import plans
from catalogd.core.catalog import Catalog, DeltaUnavailableError
from subscriber.protocol.delta import Delta, Entry, VersionGapError, apply_delta
from subscriber.protocol.keys import database_of

KEYS = [
    "DATABASE:a",
    "DATABASE:b",
    "TABLE:a.t1",
    "TABLE:a.t2",
    "VIEW:b.v",
    "HDFS_PARTITION:a.t1:dt=1",
    "HDFS_PARTITION:a.t1:dt=2",
    "HDFS_PARTITION:a.t1:dt=3",
    "PRINCIPAL:r.ROLE",
    "HDFS_CACHE_POOL:p",
]
PAYLOADS = [b"x", b"y", b"z"]


def live_map(catalog: Catalog) -> dict[str, bytes]:
    return {e.key: e.payload for e in catalog.live_entries()}  # type: ignore[misc]


def test_versions_advance_once_per_real_change() -> None:
    cat = Catalog()
    d1 = cat.commit({"DATABASE:a": b"1", "TABLE:a.t": b"2"})
    assert (d1.from_version, d1.to_version) == (0, 2)
    assert [e.version for e in d1.entries] == [1, 2]
    # Unchanged reload: no version, empty delta.
    d2 = cat.commit({"DATABASE:a": b"1", "TABLE:a.t": b"2"})
    assert d2.empty and (d2.from_version, d2.to_version) == (2, 2)
    assert cat.version == 2
    # Removing something absent is no change either.
    assert cat.commit({"TABLE:a.zzz": None}).empty


def test_removal_leaves_a_versioned_tombstone() -> None:
    cat = Catalog()
    cat.commit({"TABLE:a.t": b"1"})
    delta = cat.commit({"TABLE:a.t": None})
    assert delta.entries == (Entry("TABLE:a.t", 2, None),)
    assert "TABLE:a.t" not in cat and cat.get("TABLE:a.t") is None
    assert cat.delta_since(1).entries[0].removed


def test_last_value_wins_within_one_commit() -> None:
    cat = Catalog()
    delta = cat.commit([("TABLE:a.t", b"1"), ("TABLE:a.t", b"2")])
    assert delta.entries == (Entry("TABLE:a.t", 1, b"2"),)


def test_start_version_and_floor() -> None:
    cat = Catalog(version=1000)
    assert cat.commit({"DATABASE:a": b"1"}).entries[0].version == 1001
    with pytest.raises(DeltaUnavailableError):
        cat.delta_since(999)
    with pytest.raises(DeltaUnavailableError):
        cat.delta_since(1002)


def test_tombstone_bound_raises_floor() -> None:
    cat = Catalog(max_tombstones=1)
    cat.commit({"TABLE:a.x": b"1", "TABLE:a.y": b"1"})  # v1, v2
    cat.commit({"TABLE:a.x": None})  # v3
    cat.commit({"TABLE:a.y": None})  # v4, prunes the v3 tombstone
    assert cat.floor == 3
    with pytest.raises(DeltaUnavailableError, match=r"\[3, 4\]"):
        cat.delta_since(2)
    assert cat.delta_since(3).entries == (Entry("TABLE:a.y", 4, None),)


def test_a_replaced_group_removes_what_is_missing() -> None:
    cat = Catalog()
    cat.commit({"HDFS_PARTITION:a.t:dt=1": b"1", "HDFS_PARTITION:a.t:dt=2": b"2"})
    old = cat.keys_with_prefix("HDFS_PARTITION:a.t:", db="a")
    fresh = {"HDFS_PARTITION:a.t:dt=2": b"2", "HDFS_PARTITION:a.t:dt=3": b"3"}
    delta = cat.commit(plans.replace_group(cat, old, fresh))
    assert [(e.key, e.removed) for e in delta.entries] == [
        ("HDFS_PARTITION:a.t:dt=1", True),
        ("HDFS_PARTITION:a.t:dt=3", False),
    ]


def test_database_index_follows_adds_and_removes() -> None:
    cat = Catalog()
    cat.commit({"DATABASE:a": b"1", "TABLE:a.t": b"1", "PRINCIPAL:r.ROLE": b"1"})
    assert cat.keys_of_database("a") == {"DATABASE:a", "TABLE:a.t"}
    assert cat.keys_of_database("") == {"PRINCIPAL:r.ROLE"}
    cat.commit({"TABLE:a.t": None})
    assert cat.keys_of_database("a") == {"DATABASE:a"}
    assert len(cat) == 2


def test_apply_delta_refuses_a_gap() -> None:
    live: dict[str, Entry] = {}
    with pytest.raises(VersionGapError):
        apply_delta(live, 3, Delta(4, 5, (Entry("k", 5, b"x"),)))
    assert live == {}


# -- property tests ------------------------------------------------------------

op = st.one_of(
    st.tuples(
        st.just("put"),
        st.dictionaries(st.sampled_from(KEYS), st.sampled_from(PAYLOADS), max_size=4),
    ),
    st.tuples(st.just("del"), st.lists(st.sampled_from(KEYS), max_size=3)),
    st.tuples(
        st.just("replace"),
        st.dictionaries(
            st.sampled_from([k for k in KEYS if k.startswith("HDFS_PARTITION:a.t1:")]),
            st.sampled_from(PAYLOADS),
            max_size=3,
        ),
    ),
)


def run(cat: Catalog, ops: list) -> list[tuple[int, dict[str, bytes]]]:
    """Apply ops; return the live map after each commit, keyed by version."""
    history = [(cat.version, live_map(cat))]
    for kind, arg in ops:
        before = cat.version
        if kind == "put":
            delta = cat.commit(arg)
        elif kind == "del":
            delta = cat.commit({k: None for k in arg})
        else:
            old = cat.keys_with_prefix("HDFS_PARTITION:a.t1:", db="a")
            delta = cat.commit(plans.replace_group(cat, old, arg))
        assert delta.from_version == before and delta.to_version == cat.version
        assert cat.version - before == len(delta.entries)
        history.append((cat.version, live_map(cat)))
    return history


@settings(max_examples=500, deadline=None)
@given(ops=st.lists(op, max_size=30), max_tombstones=st.integers(0, 6))
def test_delta_since_brings_any_old_copy_to_now(ops: list, max_tombstones: int) -> None:
    cat = Catalog(max_tombstones=max_tombstones)
    history = run(cat, ops)
    now = live_map(cat)
    for version, then in history:
        if version < cat.floor:
            with pytest.raises(DeltaUnavailableError):
                cat.delta_since(version)
            continue
        delta = cat.delta_since(version)
        copy = {k: Entry(k, 0, v) for k, v in then.items()}
        assert apply_delta(copy, version, delta) == cat.version
        assert {k: e.payload for k, e in copy.items()} == now
        versions = [e.version for e in delta.entries]
        assert versions == sorted(set(versions))
        assert all(version < v <= cat.version for v in versions)
        assert len({e.key for e in delta.entries}) == len(delta.entries)


@settings(max_examples=500, deadline=None)
@given(ops=st.lists(op, max_size=30))
def test_snapshot_equals_live_state_and_versions_are_monotonic(ops: list) -> None:
    cat = Catalog()
    history = run(cat, ops)
    versions = [v for v, _ in history]
    assert versions == sorted(versions)
    snap = cat.snapshot()
    assert snap.version == cat.version
    assert {e.key: e.payload for e in snap.entries} == history[-1][1]
    assert len(cat) == len(snap.entries)
    kinds = [e.key.split(":")[0] for e in snap.entries]
    assert cat.counts_by_type() == {k: kinds.count(k) for k in set(kinds)}
    for table in ("a.t1",):
        assert cat.partition_keys("a", "t1") == {
            e.key for e in snap.entries if e.key.startswith(f"HDFS_PARTITION:{table}:")
        }
    for db in {"a", "b", ""}:
        assert cat.keys_of_database(db) == {e.key for e in snap.entries if database_of(e.key) == db}


@settings(max_examples=500, deadline=None)
@given(ops=st.lists(op, max_size=20))
def test_replaying_the_same_state_changes_nothing(ops: list) -> None:
    cat = Catalog()
    run(cat, ops)
    version = cat.version
    # Reload everything that is live with identical payloads: a no-op.
    assert cat.commit(live_map(cat)).empty
    assert cat.version == version
