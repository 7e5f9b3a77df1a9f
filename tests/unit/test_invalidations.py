"""The invalidation stream on the wire: every delta part again as keys and versions."""

from __future__ import annotations

from subscriber.protocol import wire
from subscriber.protocol.delta import INVALIDATED, Delta, Entry
from subscriber.protocol.messages import DeltaPart


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
