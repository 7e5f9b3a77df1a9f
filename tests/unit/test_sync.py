"""The subscriber's sync state machine against a simulated catalogd and a lossy PUB/SUB."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from catalogd.core.catalog import Catalog, DeltaUnavailableError
from subscriber.protocol.delta import Delta, Entry
from subscriber.protocol.keys import GLOBAL, database_of
from subscriber.protocol.messages import (
    Commit,
    DeltaPart,
    Heartbeat,
    SnapshotChunk,
    SnapshotEnd,
    Welcome,
)
from subscriber.sync import ActionKind, Phase, Report, Step, SyncMachine

KEYS = [
    "DATABASE:a",
    "TABLE:a.t",
    "HDFS_PARTITION:a.t:dt=1",
    "HDFS_PARTITION:a.t:dt=2",
    "DATABASE:b",
    "TABLE:b.u",
    "PRINCIPAL:r.ROLE",
    "HDFS_CACHE_POOL:p",
]


def publish(service: str, delta: Delta) -> list[object]:
    """What catalogd's publisher sends for one delta: a part per database, then a commit."""
    by_db: dict[str, list] = {}
    for e in delta.entries:
        by_db.setdefault(database_of(e.key), []).append(e)
    counts = {db: len(es) for db, es in by_db.items()}
    last = list(by_db)[-1]
    msgs: list[object] = [
        DeltaPart(
            service,
            delta.from_version,
            delta.to_version,
            db,
            tuple(es),
            counts if db == last else None,
        )
        for db, es in by_db.items()
    ]
    msgs.append(Commit(service, delta.from_version, delta.to_version, counts))
    return msgs


@dataclass
class World:
    """A simulated catalogd; requests are answered after a delay of N messages."""

    machine: SyncMachine
    catalog: Catalog = field(default_factory=Catalog)
    service: str = "s0"
    now: float = 0.0
    requests: list[tuple[int, ActionKind, int]] = field(default_factory=list)
    dropped: int = 0
    offer: bool = False
    """Each welcome carries the snapshot (as catalogd does for a small selection)."""

    def connect(self) -> None:
        """A new session: the welcome is answered now, the first message comes later."""
        snapshot = None
        if self.offer:
            snapshot = tuple(e for e in self.catalog.live_entries() if self.wanted(e.key))
        welcome = Welcome(self.service, "tcp://pub", self.catalog.version, None, snapshot)
        self.machine.on_connected(self.now, welcome)
        self.requests.clear()

    def wanted(self, key: str) -> bool:
        return self.machine.wants(database_of(key))

    def handle(self, step: Step, delay: int) -> None:
        self.dropped += step.dropped
        for action in step.actions:
            if action.kind is ActionKind.RECONNECT:
                self.connect()
            else:
                self.requests.append((delay, action.kind, action.from_version))

    def answer_due(self, force: bool = False) -> None:
        due = [r for r in self.requests if force or r[0] <= 0]
        self.requests = [(d - 1, k, v) for d, k, v in self.requests if not (force or d <= 0)]
        for _, kind, version in due:
            if kind is ActionKind.REQUEST_SNAPSHOT:
                snap = self.catalog.snapshot()
                entries = [e for e in snap.entries if self.wanted(e.key)]
                step = self.machine.on_snapshot(self.service, snap.version, entries, self.now)
            else:
                try:
                    wanted = self.machine.databases
                    delta = self.catalog.delta_since(version).filtered(
                        None if wanted is None else wanted | {GLOBAL}
                    )
                    step = self.machine.on_catch_up(delta, self.now)
                except DeltaUnavailableError:
                    step = self.machine.on_catch_up_unavailable(self.now)
            self.handle(step, 0)

    def deliver(self, msg: object, delay: int) -> None:
        if isinstance(msg, Commit) and self.machine.databases is None:
            return  # not subscribed: the last part commits inline
        self.now += 0.01
        if isinstance(msg, DeltaPart):
            step = self.machine.on_part(msg, self.now)
        elif isinstance(msg, Commit):
            step = self.machine.on_commit(msg, self.now)
        else:
            assert isinstance(msg, Heartbeat)
            step = self.machine.on_heartbeat(msg, self.now)
        self.handle(step, delay)
        self.answer_due()

    def expected(self) -> dict[str, bytes | None]:
        return {e.key: e.payload for e in self.catalog.live_entries() if self.wanted(e.key)}


world_event = st.one_of(
    st.tuples(
        st.just("change"),
        st.dictionaries(st.sampled_from(KEYS), st.sampled_from([None, b"x", b"y"]), min_size=1),
    ),
    st.tuples(st.just("restart"), st.integers(0, 50)),
    st.tuples(st.just("heartbeat"), st.none()),
)


@settings(max_examples=500, deadline=None)
@given(
    events=st.lists(world_event, max_size=25),
    losses=st.lists(st.booleans(), max_size=80),
    delays=st.lists(st.integers(0, 3), max_size=40),
    databases=st.one_of(st.none(), st.just(["a"]), st.just(["b", "zzz"])),
    tombstones=st.integers(0, 3),
    offer=st.booleans(),
)
def test_converges_despite_loss_delay_restart_and_filters(
    events: list, losses: list[bool], delays: list[int], databases, tombstones: int, offer: bool
) -> None:
    world = World(SyncMachine(databases=databases), Catalog(max_tombstones=tombstones))
    world.offer = offer
    world.connect()
    sent = 0
    generation = 0
    for kind, arg in events:
        if kind == "change":
            delta = world.catalog.commit(arg)
            msgs = [] if delta.empty else publish(world.service, delta)
        elif kind == "restart":
            # catalogd restarts: new service id, versions from a new start, same content.
            generation += 1
            old = world.catalog
            world.catalog = Catalog(version=arg, max_tombstones=tombstones)
            world.catalog.commit({e.key: e.payload for e in old.live_entries()})
            world.service = f"s{generation}"
            msgs = []
        else:
            msgs = [Heartbeat(world.service, world.catalog.version, 1.0)]
        for msg in msgs:
            lost = losses[sent] if sent < len(losses) else False
            delay = delays[sent % len(delays)] if delays else 0
            sent += 1
            if not lost:
                world.deliver(msg, delay)
    # Settle: answer what is outstanding, then heartbeats until nothing is pending.
    for _ in range(4):
        world.answer_due(force=True)
        world.deliver(Heartbeat(world.service, world.catalog.version, 1.0), 0)
    world.answer_due(force=True)
    event(f"gaps>0: {world.machine.gaps > 0}, dropped>0: {world.dropped > 0}")
    assert world.machine.phase is Phase.SYNCED
    view = world.machine.cache.view
    assert view.service_id == world.service
    assert view.version == world.catalog.version
    assert {e.key: e.payload for e in view.entries()} == world.expected()
    assert world.machine.lag_seconds(world.now) == 0.0


def test_first_message_triggers_snapshot_and_buffers_newer_deltas() -> None:
    m = SyncMachine()
    m.on_connected(0)
    step = m.on_heartbeat(Heartbeat("s", 5, 1.0), 0.1)
    assert [a.kind for a in step.actions] == [ActionKind.REQUEST_SNAPSHOT]
    cat = Catalog(version=5)
    delta = cat.commit({"TABLE:a.t": b"1"})
    for msg in publish("s", delta):
        assert not (
            m.on_part(msg, 0.2) if isinstance(msg, DeltaPart) else m.on_commit(msg, 0.2)
        ).actions
    # The snapshot was taken before the delta: buffered delta is applied after it.
    step = m.on_snapshot("s", 5, [], 0.3)
    assert [e.key for e in step.events] == ["TABLE:a.t"]
    assert m.cache.view.version == 6 and m.synced


def test_missing_part_is_detected_by_the_commit_counts() -> None:
    m = SyncMachine(databases=["a"])
    m.on_connected(0)
    m.on_heartbeat(Heartbeat("s", 0, 1.0), 0)
    m.on_snapshot("s", 0, [], 0)
    cat = Catalog()
    msgs = publish("s", cat.commit({"TABLE:a.t": b"1", "TABLE:b.u": b"1"}))
    parts = [x for x in msgs if isinstance(x, DeltaPart)]
    assert {p.database for p in parts} == {"a", "b"}
    # The filtered subscriber never sees b's part; drop a's part as a full HWM would.
    step = m.on_commit(msgs[-1], 1)
    assert [(a.kind, a.from_version) for a in step.actions] == [(ActionKind.REQUEST_CATCH_UP, 0)]
    assert m.gaps == 1


def test_silence_marks_stale_and_reconnects_then_catches_up() -> None:
    m = SyncMachine()
    m.on_connected(0)
    m.on_heartbeat(Heartbeat("s", 0, 1.0), 0)
    m.on_snapshot("s", 0, [], 0)
    assert m.on_tick(2.5).actions == []
    step = m.on_tick(3.5)
    assert [a.kind for a in step.actions] == [ActionKind.RECONNECT] and m.stale
    m.on_connected(3.6)
    step = m.on_heartbeat(Heartbeat("s", 0, 1.0), 3.7)
    assert [a.kind for a in step.actions] == [ActionKind.REQUEST_CATCH_UP]
    m.on_catch_up(Delta(0, 0, ()), 3.8)
    assert m.synced and not m.stale


def test_duplicate_delta_is_dropped_and_counted() -> None:
    m = SyncMachine()
    m.on_connected(0)
    m.on_heartbeat(Heartbeat("s", 0, 1.0), 0)
    m.on_snapshot("s", 0, [], 0)
    msgs = publish("s", Catalog().commit({"TABLE:a.t": b"1"}))
    dropped = 0
    for _ in range(2):  # the part commits inline; the separate commit is redundant
        for msg in msgs:
            step = m.on_part(msg, 1) if isinstance(msg, DeltaPart) else m.on_commit(msg, 1)  # type: ignore[arg-type]
            assert not step.actions
            dropped += step.dropped
    assert dropped == 3 and m.cache.view.version == 1


# -- snapshot reassembly ---------------------------------------------------------------


def _entry(n: int) -> Entry:
    return Entry(f"TABLE:a.t{n}", n, b"x")


def _asking_snapshot() -> SyncMachine:
    """A machine that has just asked for a snapshot (its first message arrived)."""
    m = SyncMachine()
    m.on_connected(0)
    step = m.on_heartbeat(Heartbeat("s", 3, 1.0), 0.1)
    assert [a.kind for a in step.actions] == [ActionKind.REQUEST_SNAPSHOT]
    return m


def test_snapshot_chunks_in_order_are_installed_at_the_end() -> None:
    m = _asking_snapshot()
    for seq, chunk in enumerate([(_entry(1), _entry(2)), (_entry(3),)]):
        step = m.on_snapshot_chunk(SnapshotChunk(seq, chunk), 0.2)
        assert not step.actions and not step.garbage and not step.installed
        assert m.cache.view.version == 0  # nothing shows before the end
    step = m.on_snapshot_end(SnapshotEnd("s", 3, count=3, chunks=2), 0.3)
    assert step.installed and not step.actions and not step.garbage
    assert m.synced and m.cache.view.version == 3 and m.cache.view.service_id == "s"
    assert sorted(e.key for e in m.cache.view.entries()) == [
        "TABLE:a.t1",
        "TABLE:a.t2",
        "TABLE:a.t3",
    ]
    # A late answer to the finished request means nothing.
    assert m.on_snapshot_chunk(SnapshotChunk(2, (_entry(9),)), 0.4) == Step()
    assert m.on_snapshot_end(SnapshotEnd("s", 9, 0, 0), 0.4) == Step()


def test_out_of_order_chunk_restarts_the_snapshot() -> None:
    m = _asking_snapshot()
    m.on_snapshot_chunk(SnapshotChunk(0, (_entry(1),)), 0.2)
    step = m.on_snapshot_chunk(SnapshotChunk(2, (_entry(3),)), 0.2)  # chunk 1 was lost
    assert [a.kind for a in step.actions] == [ActionKind.REQUEST_SNAPSHOT]
    assert step.garbage == 1 and not step.installed
    # The new answer starts from chunk 0 again; what came before is forgotten.
    m.on_snapshot_chunk(SnapshotChunk(0, (_entry(2),)), 0.3)
    step = m.on_snapshot_end(SnapshotEnd("s", 3, count=1, chunks=1), 0.3)
    assert step.installed and [e.key for e in m.cache.view.entries()] == ["TABLE:a.t2"]


@pytest.mark.parametrize(
    "end",
    [
        SnapshotEnd("s", 3, count=3, chunks=2),  # a chunk's worth of entries missing
        SnapshotEnd("s", 3, count=2, chunks=3),  # the last chunk lost
    ],
)
def test_truncated_snapshot_restarts_and_keeps_the_cache(end: SnapshotEnd) -> None:
    m = _asking_snapshot()
    m.on_snapshot_chunk(SnapshotChunk(0, (_entry(1),)), 0.2)
    m.on_snapshot_chunk(SnapshotChunk(1, (_entry(2),)), 0.2)
    step = m.on_snapshot_end(end, 0.3)
    assert [a.kind for a in step.actions] == [ActionKind.REQUEST_SNAPSHOT]
    assert step.garbage == 1 and not step.installed
    assert m.phase is Phase.SNAPSHOTTING and m.cache.view.version == 0
    assert list(m.cache.view.entries()) == []


def test_undecodable_snapshot_answer_restarts_only_while_one_is_expected() -> None:
    m = _asking_snapshot()
    step = m.on_snapshot_garbage(0.2)
    assert [a.kind for a in step.actions] == [ActionKind.REQUEST_SNAPSHOT]
    assert step.garbage == 1
    m.on_snapshot_end(SnapshotEnd("s", 3, 0, 0), 0.3)
    assert m.synced
    assert m.on_snapshot_garbage(0.4) == Step()


def test_deltas_buffered_while_snapshotting_survive_a_restart() -> None:
    m = _asking_snapshot()
    cat = Catalog(version=3)
    for msg in publish("s", cat.commit({"TABLE:a.t": b"1"})):
        m.on_part(msg, 0.2) if isinstance(msg, DeltaPart) else m.on_commit(msg, 0.2)  # type: ignore[arg-type]
    m.on_snapshot_chunk(SnapshotChunk(1, ()), 0.2)  # out of order: restart
    step = m.on_snapshot_end(SnapshotEnd("s", 3, 0, 0), 0.3)
    assert step.installed and [e.key for e in step.events] == ["TABLE:a.t"]
    assert m.cache.view.version == 4


# -- report timing ---------------------------------------------------------------------


def test_reports_start_when_synced_then_come_each_interval_not_each_delta() -> None:
    m = _asking_snapshot()
    assert m.on_tick(5.0).report is None  # not synced: nothing to report
    step = m.on_snapshot("s", 3, [], 5.1)
    assert step.report == Report("s", 3)
    assert m.on_tick(5.2).report is None  # reported just now
    msgs = publish("s", Catalog(version=3).commit({"TABLE:a.t": b"1"}))
    step = m.on_part(msgs[0], 5.3)  # type: ignore[arg-type]
    assert m.cache.view.version == 4 and step.report is None  # a delta costs no report
    assert m.on_commit(msgs[-1], 5.4).report is None  # type: ignore[arg-type]
    # Due at 6.1, with the next message (heartbeats come each interval); a tick waits
    # one heartbeat interval more for one, so an idle subscriber wakes once a second.
    assert m.on_tick(6.1).report is None and m.next_tick(6.1) > 0.9
    assert m.on_tick(7.1).report == Report("s", 4)  # none came
    assert m.on_heartbeat(Heartbeat("s", 4, 1.0), 8.2).report == Report("s", 4)


def _fed(m: SyncMachine, msgs: list[object], now: float) -> list[Report | None]:
    """The reports that feeding ``msgs`` (parts and commits) to ``m`` gave."""
    return [
        (m.on_part(msg, now) if isinstance(msg, DeltaPart) else m.on_commit(msg, now)).report  # type: ignore[arg-type]
        for msg in msgs
    ]


def test_a_heartbeat_asking_for_reports_gets_each_new_version_until_its_own() -> None:
    catalog = Catalog(version=3)
    m = _asking_snapshot()
    m.on_snapshot("s", 3, [], 5.0)
    for i in (4, 5):
        _fed(m, publish("s", catalog.commit({"TABLE:a.t": str(i).encode()})), 5.1)
    assert m.cache.view.version == 5
    # catalogd's --sync barrier waits for version 5: its heartbeat asks.
    assert m.on_heartbeat(Heartbeat("s", 5, 1.0, report=True), 5.2).report == Report("s", 5)
    assert m.on_heartbeat(Heartbeat("s", 5, 1.0, report=True), 5.3).report is None  # told
    assert set(_fed(m, publish("s", catalog.commit({"TABLE:a.t": b"6"})), 5.4)) == {None}
    # Asked while a delta is missing: the version caught up to is reported at once.
    catalog.commit({"TABLE:a.t": b"7"})  # version 7, its publication lost
    step = m.on_heartbeat(Heartbeat("s", 7, 1.0, report=True), 5.5)
    assert [a.kind for a in step.actions] == [ActionKind.REQUEST_CATCH_UP] and not step.report
    step = m.on_catch_up(catalog.delta_since(6), 5.6)
    assert m.cache.view.version == 7 and step.report == Report("s", 7)


def test_reports_ride_on_heartbeats_not_on_changes() -> None:
    # 10 changes a second and a heartbeat each second (a little early or late): every
    # report goes with a heartbeat, none with a change (the fan-out's per-change path).
    catalog = Catalog(version=3)
    m = _asking_snapshot()
    m.on_snapshot("s", 3, [], 5.0)
    carried: list[tuple[str, int]] = []
    for tick in range(1, 51):
        now = 5.0 + tick / 10
        for report in _fed(m, publish("s", catalog.commit({"TABLE:a.t": b"%d" % tick})), now):
            carried += [("delta", report.version)] if report else []
        if tick % 10 == 0:
            jitter = 0.02 if tick % 20 else -0.02
            beat = m.on_heartbeat(Heartbeat("s", catalog.version, 1.0), now + jitter)
            carried += [("beat", beat.report.version)] if beat.report else []
    assert carried == [("beat", v) for v in (13, 23, 33, 43, 53)]
    # Heartbeats stop: a change carries the report one heartbeat interval later.
    changes = [publish("s", catalog.commit({"TABLE:a.t": b"%f" % t})) for t in (11.5, 12.1)]
    reports = [_fed(m, msgs, t) for msgs, t in zip(changes, (11.5, 12.1), strict=True)]
    assert set(reports[0]) == {None} and Report("s", 55) in reports[1]


def test_unchanged_version_is_reported_again_every_interval() -> None:
    m = SyncMachine(report_interval_s=2.0)
    m.on_connected(0)
    m.on_heartbeat(Heartbeat("s", 0, 1.0), 0)
    assert m.on_snapshot("s", 0, [], 0).report == Report("s", 0)
    assert m.on_tick(1.9).report is None
    assert m.on_heartbeat(Heartbeat("s", 0, 1.0), 2.0).report == Report("s", 0)
    assert m.on_tick(2.1).report is None
    assert m.on_tick(4.0).report is None  # a tick waits one heartbeat interval more
    assert m.on_tick(5.0).report == Report("s", 0)


def test_no_reports_while_stale_or_resyncing() -> None:
    m = SyncMachine()
    m.on_connected(0)
    m.on_heartbeat(Heartbeat("s", 0, 1.0), 0)
    m.on_snapshot("s", 0, [], 0)
    step = m.on_tick(3.5)  # three intervals of silence
    assert [a.kind for a in step.actions] == [ActionKind.RECONNECT] and step.report is None
    m.on_connected(3.6)
    step = m.on_heartbeat(Heartbeat("s", 2, 1.0), 3.7)  # catching up
    assert step.report is None and m.on_tick(4.5).report is None
    step = m.on_catch_up(Delta(0, 2, (Entry("TABLE:a.t", 2, b"x"),)), 4.6)
    assert m.synced and step.report == Report("s", 2)


def test_a_heartbeat_says_on_the_wire_whether_it_asks_for_reports() -> None:
    from subscriber.protocol import wire

    for asked in (False, True):
        topic, body = wire.heartbeat_message("s", 7, 0.5, 1000, report=asked)
        assert wire.parse_publication(topic, body) == Heartbeat("s", 7, 0.5, report=asked)
