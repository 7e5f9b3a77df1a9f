"""The machine's next tick: before it a clock tick does nothing, just after it one acts,
so an idle transport may sleep until then instead of ticking 20 times a second."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from subscriber.protocol.delta import Entry
from subscriber.protocol.messages import DeltaPart, Heartbeat
from subscriber.sync import ActionKind, Phase, SyncMachine

SERVICE = "s0"


def synced(now: float = 0.0) -> SyncMachine:
    machine = SyncMachine()
    machine.on_connected(now)
    machine.on_snapshot(
        SERVICE, 2, [Entry("DATABASE:a", 1, b"a"), Entry("TABLE:a.t", 2, b"t")], now
    )
    assert machine.phase is Phase.SYNCED
    return machine


def acts(machine: SyncMachine, at: float) -> bool:
    """Whether a tick at ``at`` would act (asked of a copy: the machine is unchanged)."""
    step = copy.deepcopy(machine).on_tick(at)
    return bool(step.actions or step.report)


def check(machine: SyncMachine, now: float) -> None:
    wait = machine.next_tick(now)
    assert wait >= 0
    if wait >= 3600:
        return
    for fraction in (0.0, 0.5, 0.999):
        if wait > 0:
            assert not acts(machine, now + fraction * wait), (fraction, wait)
    assert acts(machine, now + wait + 1e-6)


def test_a_synced_idle_machine_sleeps_until_its_report_then_its_silence() -> None:
    machine = synced()  # the install's report went with it
    # The next is due a second later, with a message; a tick sends it an interval after.
    assert machine.next_tick(0.0) == 2.0
    assert machine.on_tick(1.5).report is None
    assert machine.on_heartbeat(Heartbeat(SERVICE, 2, 1.0), 1.0).report is not None
    assert abs(machine.next_tick(1.0) - 2.0) < 1e-9
    check(machine, 1.0)
    assert machine.on_tick(3.0).report is not None  # no heartbeat came to carry it
    # Past its report, the silence deadline (3 heartbeat intervals after the last one):
    machine._reports.interval = 60.0  # noqa: SLF001 - isolate the silence deadline
    assert abs(machine.next_tick(3.0) - 1.0) < 1e-9
    assert ActionKind.RECONNECT in [a.kind for a in machine.on_tick(4.01).actions]


def test_a_heartbeat_asking_for_reports_makes_the_next_tick_now() -> None:
    machine = synced()
    machine.on_tick(0.0)
    machine.on_heartbeat(Heartbeat(SERVICE, 3, 1.0, True), 0.1)  # asks; version 3 not here
    part = DeltaPart(SERVICE, 2, 3, "a", (Entry("TABLE:a.t", 3, b"t2"),), {"a": 1})
    machine.on_part(part, 0.2)  # applied: its report was due with it, so sent
    assert machine.next_tick(0.2) > 0.5
    check(machine, 0.2)


def test_a_machine_waiting_for_a_snapshot_ticks_when_the_request_times_out() -> None:
    machine = SyncMachine(request_timeout_s=10.0, stale_after_heartbeats=100.0)
    machine.on_connected(0.0)
    step = machine.on_heartbeat(Heartbeat(SERVICE, 5, 1.0), 0.5)
    assert [a.kind for a in step.actions] == [ActionKind.REQUEST_SNAPSHOT]
    assert abs(machine.next_tick(0.5) - 10.0) < 1e-9
    check(machine, 0.5)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["beat", "ask", "part", "gap", "tick", "restart"]),
            st.floats(min_value=0.0, max_value=5.0),
        ),
        max_size=25,
    )
)
def test_no_tick_acts_before_the_next_tick_and_one_acts_right_after(
    inputs: list[tuple[str, float]],
) -> None:
    machine = synced()
    now, version = 0.0, 2
    check(machine, now)
    for kind, elapsed in inputs:
        now += elapsed
        if kind in ("beat", "ask"):
            machine.on_heartbeat(Heartbeat(SERVICE, version, 1.0, kind == "ask"), now)
        elif kind == "part":
            entry = Entry("TABLE:a.t", version + 1, str(version).encode())
            machine.on_part(DeltaPart(SERVICE, version, version + 1, "a", (entry,), {"a": 1}), now)
            version += 1
        elif kind == "gap":  # a delta ahead of the cache: a catch-up request goes out
            entry = Entry("TABLE:a.t", version + 2, b"x")
            machine.on_part(
                DeltaPart(SERVICE, version + 1, version + 2, "a", (entry,), {"a": 1}), now
            )
        elif kind == "restart":  # another service: a snapshot request goes out
            machine.on_heartbeat(Heartbeat("s1", 1, 1.0), now)
        else:
            machine.on_tick(now)
        check(machine, now)
