"""The on-demand cache's version rules (subscriber/ondemand/cache.py), exhaustively.

A model catalog changes keys (each change one version, published as an invalidation
that reaches the cache later, in order); fetches are answered at the catalog's version
when asked and reach the cache later still, racing the invalidations; the cache's cap
evicts. After every step: a cached entry is never older than what the invalidations
applied so far have told, and a cached listing is exactly the catalog's group at the
newer of its answer's version and the applied version.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subscriber.ondemand.cache import OnDemandCache, group_of
from subscriber.protocol.delta import INVALIDATED, Delta, Entry, VersionGapError

SVC = "svc"
KEYS = [
    "TABLE:d.a",
    "TABLE:d.b",
    "HDFS_PARTITION:d.a:p=1",
    "HDFS_PARTITION:d.a:p=2",
    "FUNCTION:d.f(int)",
]


@dataclass
class Model:
    """The catalog: per key, its history of (version, present)."""

    version: int = 10
    history: dict[str, list[tuple[int, bool]]] = field(default_factory=dict)
    published: list[Entry] = field(default_factory=list)  # invalidations, in order

    def change(self, key: str, present: bool) -> None:
        self.version += 1
        self.history.setdefault(key, []).append((self.version, present))
        self.published.append(Entry(key, self.version, INVALIDATED if present else None))

    def at(self, key: str, version: int) -> tuple[int, bool]:
        """(version of the last change at or before ``version``, present); (0, False)."""
        last = (0, False)
        for v, present in self.history.get(key, []):
            if v <= version:
                last = (v, present)
        return last

    def fetch(self, key: str) -> tuple[int, Entry]:
        v, present = self.at(key, self.version)
        if present:
            return self.version, Entry(key, v, f"{key}@{v}".encode())
        return self.version, Entry(key, self.version, None)

    def listing(self, group: str) -> tuple[int, dict[str, int]]:
        found = {}
        for key in KEYS:
            v, present = self.at(key, self.version)
            if present and group_of(key) == group:
                found[key] = v
        return self.version, found


steps = st.lists(
    st.one_of(
        st.tuples(st.just("change"), st.integers(0, len(KEYS) - 1), st.booleans()),
        st.tuples(st.just("fetch"), st.integers(0, len(KEYS) - 1), st.just(False)),
        st.tuples(st.just("list"), st.integers(0, 1), st.just(False)),
        st.tuples(st.just("deliver_fetch"), st.integers(0, 5), st.just(False)),
        st.tuples(st.just("apply"), st.integers(1, 3), st.just(False)),
    ),
    max_size=60,
)


@settings(max_examples=500, deadline=None)
@given(steps, st.sampled_from([10_000, 400]))
def test_the_cache_is_never_older_than_the_invalidations_applied(
    script: list[tuple[str, int, bool]], cap: int
) -> None:
    model = Model()
    for key in KEYS[:3]:
        model.change(key, True)
    cache = OnDemandCache(cap)
    cache.install(SVC, model.version, [])
    model.published.clear()
    applied = model.version
    # fetched answers not delivered yet: (version, an entry or a (group, listing))
    in_flight: list[tuple[int, Entry | tuple[str, dict[str, int]]]] = []
    groups = ["d", "d.a/"]
    listed_at: dict[str, int] = {}  # group -> the version of its cached listing's answer
    for kind, n, flag in script:
        if kind == "change":
            model.change(KEYS[n], flag)
        elif kind == "fetch":
            at, entry = model.fetch(KEYS[n])
            in_flight.append((at, entry))
        elif kind == "list":
            at, keys = model.listing(groups[n])
            in_flight.append((at, (groups[n], keys)))
        elif kind == "deliver_fetch" and in_flight:
            at, payload = in_flight.pop(n % len(in_flight))
            if isinstance(payload, Entry):
                cache.offer(SVC, at, [payload])
            elif cache.offer_listing(SVC, at, *payload):
                listed_at[payload[0]] = at
        elif kind == "apply":
            batch = [e for e in model.published if e.version > applied][:n]
            if batch:
                to = batch[-1].version
                cache.apply(Delta(applied, to, tuple(batch)))
                applied = to
        assert cache.bytes <= cap
        check(cache, model, applied, listed_at)


def check(cache: OnDemandCache, model: Model, applied: int, listed_at: dict[str, int]) -> None:
    for key in KEYS:
        got = cache.get(key)
        if got is False:
            continue
        assert isinstance(got, Entry)
        truth_version, present = model.at(key, applied)
        assert got.version >= truth_version, (key, got, truth_version)
        if got.version == truth_version:
            assert (got.payload is not None) == present or not truth_version
    for group in ("d", "d.a/"):
        listing = cache.listing(group)
        if listing is None:
            continue
        # exactly the group at the newer of its answer's version and the applied one
        at = max(applied, listed_at[group])
        expected = {}
        for key in KEYS:
            v, present = model.at(key, at)
            if present and group_of(key) == group:
                expected[key] = v
        assert listing == expected, (group, listing, expected, applied, listed_at[group])


# -- the plain rules, one by one -----------------------------------------------------------


def fresh(version: int = 10) -> OnDemandCache:
    cache = OnDemandCache(1 << 20)
    cache.install(SVC, version, [])
    return cache


def test_a_miss_then_a_hit() -> None:
    cache = fresh()
    assert cache.get("TABLE:d.a") is False
    assert cache.offer(SVC, 10, [Entry("TABLE:d.a", 7, b"x")])
    assert cache.get("TABLE:d.a") == Entry("TABLE:d.a", 7, b"x")
    assert cache.stats.hits == 1 and cache.stats.misses == 1


def test_an_answer_older_than_an_applied_invalidation_is_not_cached() -> None:
    cache = fresh()
    cache.apply(Delta(10, 11, (Entry("TABLE:d.a", 11, INVALIDATED),)))
    assert cache.offer(SVC, 10, [Entry("TABLE:d.a", 7, b"old")]) == []
    assert cache.get("TABLE:d.a") is False and cache.stats.refused == 1
    # the same answer for another key is fine: nothing about it was applied since
    assert cache.offer(SVC, 10, [Entry("TABLE:d.b", 7, b"b")])


def test_an_answer_ahead_of_the_applied_version_waits_for_what_comes() -> None:
    cache = fresh()
    assert cache.offer(SVC, 12, [Entry("TABLE:d.a", 12, b"new")])
    cache.apply(Delta(10, 12, (Entry("TABLE:d.a", 12, INVALIDATED),)))  # the same change
    assert cache.get("TABLE:d.a") == Entry("TABLE:d.a", 12, b"new")
    cache.apply(Delta(12, 13, (Entry("TABLE:d.a", 13, None),)))  # then removed
    assert cache.get("TABLE:d.a") is False and cache.stats.invalidated == 1


def test_an_absence_is_cached_until_the_key_appears() -> None:
    cache = fresh()
    cache.offer(SVC, 10, [Entry("TABLE:d.z", 10, None)])
    got = cache.get("TABLE:d.z")
    assert isinstance(got, Entry) and got.removed
    cache.apply(Delta(10, 11, (Entry("TABLE:d.z", 11, INVALIDATED),)))
    assert cache.get("TABLE:d.z") is False


def test_answers_of_another_service_or_beyond_the_log_are_not_cached() -> None:
    cache = OnDemandCache(1 << 20, log_limit=1)
    cache.install(SVC, 10, [])
    assert cache.offer("other", 10, [Entry("TABLE:d.a", 7, b"x")]) == []
    cache.apply(Delta(10, 12, (Entry("TABLE:d.b", 11, None), Entry("TABLE:d.c", 12, None))))
    assert cache.log_floor == 11  # the log keeps one: d.b's fell out
    assert cache.offer(SVC, 10, [Entry("TABLE:d.x", 7, b"x")]) == []  # cannot tell
    assert cache.offer(SVC, 11, [Entry("TABLE:d.x", 7, b"x")])


def test_a_snapshot_empties_it_and_a_gap_is_refused() -> None:
    cache = fresh()
    cache.offer(SVC, 10, [Entry("TABLE:d.a", 7, b"x")])
    with pytest.raises(VersionGapError):
        cache.apply(Delta(11, 12, ()))
    cache.install("svc2", 50, [])
    assert cache.get("TABLE:d.a") is False and cache.bytes == 0 and cache.view.version == 50


def test_listings_follow_invalidations_newer_than_their_answer() -> None:
    cache = fresh()
    keys = {"HDFS_PARTITION:d.a:p=1": 5, "HDFS_PARTITION:d.a:p=2": 6}
    assert cache.offer_listing(SVC, 10, "d.a/", keys)
    cache.apply(
        Delta(
            10,
            12,
            (
                Entry("HDFS_PARTITION:d.a:p=3", 11, INVALIDATED),
                Entry("HDFS_PARTITION:d.a:p=1", 12, None),
                Entry("TABLE:d.a", 12, INVALIDATED),  # another group
            ),
        )
    )
    assert cache.listing("d.a/") == {"HDFS_PARTITION:d.a:p=2": 6, "HDFS_PARTITION:d.a:p=3": 11}
    # an answer older than a change of its group is refused
    assert not cache.offer_listing(SVC, 11, "d.a/", keys)
    assert not cache.offer_listing(SVC, 11, "d", {"TABLE:d.a": 3})  # "d" changed at 12
    assert cache.offer_listing(SVC, 12, "d", {"TABLE:d.a": 12})
    assert cache.listing("d") == {"TABLE:d.a": 12}


def test_the_cap_evicts_the_least_recently_used() -> None:
    cache = OnDemandCache(3 * (120 + 9 + 100))
    cache.install(SVC, 10, [])
    for name in "abcd":
        cache.offer(SVC, 10, [Entry(f"TABLE:d.{name}", 7, b"x" * 100)])
        if name == "b":
            cache.get("TABLE:d.a")  # a used: b is the oldest now
    assert cache.get("TABLE:d.b") is False
    assert all(isinstance(cache.get(f"TABLE:d.{n}"), Entry) for n in "acd")
    assert cache.stats.evictions == 1 and cache.bytes <= cache.cap_bytes


def test_a_listing_ahead_of_the_applied_version_ignores_older_invalidations() -> None:
    """Listed at 13 (p=1 added at 11, removed at 12); the invalidations of 11 and 12
    arrive afterwards: they are in the listing already and must not re-add p=1."""
    cache = fresh()
    assert cache.offer_listing(SVC, 13, "d.a/", {"HDFS_PARTITION:d.a:p=2": 13})
    cache.apply(Delta(10, 11, (Entry("HDFS_PARTITION:d.a:p=1", 11, INVALIDATED),)))
    assert cache.listing("d.a/") == {"HDFS_PARTITION:d.a:p=2": 13}
    cache.apply(Delta(11, 13, (Entry("HDFS_PARTITION:d.a:p=1", 12, None),)))
    assert cache.listing("d.a/") == {"HDFS_PARTITION:d.a:p=2": 13}
