"""The invalidation stream on the wire: every delta part again as keys and versions,
partition keys grouped per table."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import idl
from subscriber.protocol import codec, wire
from subscriber.protocol.delta import INVALIDATED, Delta, Entry
from subscriber.protocol.errors import ProtocolError
from subscriber.protocol.messages import DeltaPart

svc = idl.catalog_service


def test_each_part_is_published_again_as_invalidations_with_the_same_counts() -> None:
    delta = Delta(
        4,
        7,
        (
            Entry("TABLE:a.t", 5, b"table"),
            Entry("HDFS_PARTITION:a.t:p=1", 6, None),
            Entry("DATABASE:b", 7, b"db"),
        ),
    )
    messages = wire.delta_messages("svc", delta)
    topics = [topic for topic, _ in messages]
    assert topics == [b"da\0", b"db\0", b"ia\0", b"ib\0", b"c"]
    parts = [wire.parse_publication(t, b) for t, b in messages[:-1]]
    assert all(isinstance(p, DeltaPart) for p in parts)
    deltas, invalidations = parts[:2], parts[2:]
    for full, keys in zip(deltas, invalidations, strict=True):
        assert isinstance(full, DeltaPart) and isinstance(keys, DeltaPart)
        assert (keys.database, keys.counts) == (full.database, full.counts)
        assert [(e.key, e.version, e.removed) for e in keys.entries] == [
            (e.key, e.version, e.removed) for e in full.entries
        ]
        assert all(e.payload in (None, INVALIDATED) for e in keys.entries)
    assert wire.delta_messages("svc", delta, invalidations=False)[2][0] == b"c"


def test_on_demand_subscriptions_follow_invalidations_only() -> None:
    assert wire.subscriptions(None, on_demand=True) == [b"i", b"h"]
    assert wire.subscriptions(["b", "a"], on_demand=True) == [b"c", b"i\0", b"ia\0", b"ib\0", b"h"]
    assert wire.subscriptions(None) == [b"d", b"h"]


NAME = st.text(st.characters(codec="utf-8", exclude_characters=":"), max_size=12)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a.t", "a.u", "a.v"]),
            NAME,
            st.integers(1, 2**62),
            st.booleans(),
        ),
        max_size=30,
        unique_by=lambda item: (item[0], item[1]),
    ),
    st.lists(st.sampled_from(["TABLE:a.t", "DATABASE:a", "FUNCTION:a.f()"]), unique=True),
)
def test_grouped_partitions_are_what_thrift_writes_and_decode_to_every_key(
    partitions: list[tuple[str, str, int, bool]], others: list[str]
) -> None:
    entries = [Entry(key, 3, b"x") for key in others] + [
        Entry(f"HDFS_PARTITION:{table}:{name}", version, None if removed else b"part")
        for table, name, version, removed in partitions
    ]
    encoded = wire.encode_delta("svc", 1, 9, entries, database="a", invalidations=True)
    groups: dict[str, list[tuple[str, int, bool]]] = {}
    for table, name, version, removed in partitions:
        groups.setdefault(table, []).append((name, version, removed))
    expected = svc.TDelta(
        service_id="svc",
        from_version=1,
        to_version=9,
        entries=[svc.TCatalogEntry(key=k, version=3, object=INVALIDATED) for k in others],
        database="a",
        partitions=[
            svc.TPartitionGroup(
                table=table,
                names=[n for n, _, _ in members],
                versions=[v for _, v, _ in members],
                removed=[i for i, (_, _, r) in enumerate(members) if r] or None,
            )
            for table, members in groups.items()
        ]
        or None,
    )
    assert encoded == codec.encode(expected)
    part = wire.parse_publication(b"ia\0", codec.frame(encoded))
    assert isinstance(part, DeltaPart)
    assert sorted((e.key, e.version, e.removed) for e in part.entries) == sorted(
        (e.key, e.version, e.payload is None) for e in entries
    )
    assert all(e.payload in (None, INVALIDATED) for e in part.entries)


@pytest.mark.parametrize(
    "group",
    [
        svc.TPartitionGroup(table="a.t", names=["p=1", "p=2"], versions=[1]),
        svc.TPartitionGroup(table="a.t", names=["p=1"], versions=[1], removed=[1]),
        svc.TPartitionGroup(table="a.t", names=["p=1"], versions=[1], removed=[-1]),
        svc.TPartitionGroup(table="a.t", versions=[1]),
    ],
)
def test_a_malformed_partition_group_is_refused(group: object) -> None:
    body = codec.pack(
        svc.TDelta(service_id="s", from_version=1, to_version=2, entries=[], partitions=[group]),
        check=False,
    )
    with pytest.raises(ProtocolError):
        wire.parse_publication(b"ia\0", body)


def test_a_delta_topic_ignores_partition_groups() -> None:
    # Only invalidations group; a full delta's partitions are entries with objects.
    group = svc.TPartitionGroup(table="a.t", names=["p=1"], versions=[2])
    body = codec.pack(
        svc.TDelta(service_id="s", from_version=1, to_version=2, entries=[], partitions=[group])
    )
    part = wire.parse_publication(b"da\0", body)
    assert isinstance(part, DeltaPart) and part.entries == ()
