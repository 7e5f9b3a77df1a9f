"""The sync machine's short way for a whole delta that follows the cache gives exactly
what its general way gives, for any sequence of messages (well-formed or not)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from subscriber.ondemand.cache import OnDemandCache, OnDemandView
from subscriber.protocol.delta import INVALIDATED, Entry
from subscriber.protocol.messages import Commit, DeltaPart, Heartbeat
from subscriber.sync import SyncMachine


class GeneralOnly(SyncMachine):
    """The same machine with the short way switched off."""

    def _whole_next(self, part: DeltaPart) -> bool:
        return False


class Counting(SyncMachine):
    taken = 0

    def _whole_next(self, part: DeltaPart) -> bool:
        whole = super()._whole_next(part)
        self.taken += whole
        return whole


KEYS = ["TABLE:a.t", "TABLE:a.u", "HDFS_PARTITION:a.t:dt=1", "TABLE:b.v", "PRINCIPAL:r.ROLE"]
DATABASES = ["a", "b", ""]

entry = st.builds(
    Entry, st.sampled_from(KEYS), st.integers(0, 12), st.sampled_from([None, b"x", b"y"])
)
counts = st.one_of(
    st.none(), st.dictionaries(st.sampled_from(DATABASES), st.integers(0, 3), max_size=2)
)
# Any range the wire lets through (it refuses reversed ones: test_delta_scan.py).
part = st.builds(
    lambda service, start, length, database, entries, counts: DeltaPart(
        service, start, start + length, database, entries, counts
    ),
    st.sampled_from(["s", "s", "s", "other"]),
    st.integers(0, 10),
    st.integers(0, 3),
    st.sampled_from(DATABASES),
    st.lists(entry, max_size=3).map(tuple),
    counts,
)
# Mostly well-formed deltas that follow each other, with the odd one thrown in.
step_input = st.one_of(
    st.tuples(st.just("next"), st.lists(entry, min_size=1, max_size=3), st.booleans()),
    st.tuples(st.just("part"), part, st.booleans()),
    st.tuples(st.just("heartbeat"), st.integers(0, 12), st.booleans()),
    st.tuples(st.just("commit"), part, st.booleans()),
)


def _follow_up(version: int, entries: list[Entry], database: str) -> DeltaPart:
    """The next whole delta of ``entries`` re-versioned after ``version``."""
    fresh = tuple(Entry(e.key, version + i + 1, e.payload) for i, e in enumerate(entries))
    return DeltaPart("s", version, version + len(fresh), database, fresh, {database: len(fresh)})


def _state(m: SyncMachine) -> tuple:
    view = m.cache.view
    return (
        m.phase,
        m.stale,
        m.gaps,
        view.service_id,
        view.version,
        sorted((e.key, e.version, e.payload) for e in view.entries()),
        m.lag_seconds(100.0),
        m.next_tick(100.0),
    )


@settings(max_examples=400, deadline=None)
@given(
    inputs=st.lists(step_input, max_size=30),
    databases=st.one_of(st.none(), st.just(["a"])),
    listening=st.booleans(),
)
def test_the_short_way_equals_the_general_way(inputs, databases, listening) -> None:
    short, general = Counting(databases=databases), GeneralOnly(databases=databases)
    now = 0.0
    for m in (short, general):
        m.cache.emit_events = listening
        m.on_connected(now)
        m.on_heartbeat(Heartbeat("s", 0, 1.0), now)
        m.on_snapshot("s", 0, [], now)
    for kind, value, tick in inputs:
        now += 0.3 if tick else 0.01
        steps = []
        for m in (short, general):
            if kind == "next":
                message = _follow_up(m.cache.view.version, value, "a")
                steps.append(m.on_part(message, now))
            elif kind == "part":
                steps.append(m.on_part(value, now))
            elif kind == "commit":
                commit = Commit(value.service_id, value.from_version, value.to_version, {})
                steps.append(m.on_commit(commit, now))
            else:
                steps.append(m.on_heartbeat(Heartbeat("s", value, 1.0), now))
        assert steps[0] == steps[1]
        assert _state(short) == _state(general)
        if tick:
            assert short.on_tick(now) == general.on_tick(now)


def test_the_short_way_is_taken_for_catalogd_s_usual_change() -> None:
    m = Counting()
    m.on_connected(0)
    m.on_heartbeat(Heartbeat("s", 0, 1.0), 0)
    m.on_snapshot("s", 0, [], 0)
    for version in range(3):
        step = m.on_part(_follow_up(version, [Entry("TABLE:a.t", 0, b"x")], "a"), 1.0)
        assert [e.version for e in step.events] == [version + 1]
    assert m.taken == 3 and m.cache.view.version == 3
    # Not taken: a filtered machine (it waits for the commit), a gap, another service.
    gap = _follow_up(5, [Entry("TABLE:a.t", 0, b"x")], "a")
    assert m.on_part(gap, 1.1).actions and m.taken == 3


def test_the_short_way_moves_an_on_demand_cache_as_the_general_way() -> None:
    # The machine drives either cache; the short way calls advance() on either.
    machines = [
        cls(cache=OnDemandCache(1 << 20))  # type: ignore[arg-type]  # as api.py passes it
        for cls in (Counting, GeneralOnly)
    ]
    for m in machines:
        m.cache.emit_events = True
        m.on_connected(0)
        m.on_heartbeat(Heartbeat("s", 0, 1.0), 0)
        m.on_snapshot("s", 0, [], 0)
    for version in range(3):
        entries = [Entry("TABLE:a.t", 0, INVALIDATED), Entry("TABLE:a.u", 0, None)]
        steps = [m.on_part(_follow_up(version * 2, entries, "a"), 1.0) for m in machines]
        assert steps[0] == steps[1] and len(steps[0].events) == 2
    assert machines[0].taken == 3
    assert [m.cache.view for m in machines] == [OnDemandView("s", 6)] * 2
