"""The sync machine's transition table, exhaustively: every (phase, event) pair."""

from __future__ import annotations

import itertools

import pytest

from subscriber.phases import TRANSITIONS, Event, Phase, next_phase
from subscriber.protocol.delta import Delta
from subscriber.protocol.errors import ProtocolError
from subscriber.sync import SyncMachine

pytestmark = pytest.mark.timeout(30)

J, S, Y, C = Phase.JOINING, Phase.SNAPSHOTTING, Phase.SYNCED, Phase.CATCHING_UP
# Rows: the phase before; columns: the event; cells: the phase after (None: refused).
EXPECTED = {
    #    CONNECTED  SNAPSHOT_NEEDED  CATCH_UP_NEEDED  SNAPSHOT_INSTALLED  CAUGHT_UP
    J: (J, S, C, Y, Y),
    S: (J, S, None, Y, Y),
    Y: (J, S, C, Y, Y),
    C: (J, S, C, Y, Y),
}
EVENTS = (
    Event.CONNECTED,
    Event.SNAPSHOT_NEEDED,
    Event.CATCH_UP_NEEDED,
    Event.SNAPSHOT_INSTALLED,
    Event.CAUGHT_UP,
)


def test_the_events_are_the_columns() -> None:
    assert set(EVENTS) == set(Event) and len(EVENTS) == len(Event)


@pytest.mark.parametrize(("phase", "event"), list(itertools.product(Phase, Event)))
def test_every_pair_is_allowed_or_refused_as_the_table_says(phase: Phase, event: Event) -> None:
    want = EXPECTED[phase][EVENTS.index(event)]
    assert TRANSITIONS.get((phase, event)) is want
    if want is None:
        with pytest.raises(ProtocolError, match="no transition"):
            next_phase(phase, event)
    else:
        assert next_phase(phase, event) is want


def test_the_machine_changes_phase_only_by_the_table() -> None:
    m = SyncMachine()
    seen: list[tuple[Phase, Event]] = []
    enter = m._enter

    def spy(event: Event) -> None:
        seen.append((m.phase, event))
        enter(event)

    m._enter = spy  # type: ignore[method-assign]
    m.on_connected(0.0)
    m.on_snapshot("svc", 5, [], 0.1)
    m.on_connected(1.0)
    m.on_catch_up(Delta(5, 6, ()), 1.1)  # a catch-up answer crossing a reconnect
    m.on_catch_up_unavailable(1.2)
    m.on_catch_up(Delta(5, 7, ()), 1.3)  # a catch-up answered while a snapshot is awaited
    assert m.phase is Y
    assert seen == [
        (J, Event.CONNECTED),
        (J, Event.SNAPSHOT_INSTALLED),
        (Y, Event.CONNECTED),
        (J, Event.CAUGHT_UP),
        (Y, Event.SNAPSHOT_NEEDED),
        (S, Event.CAUGHT_UP),
    ]
    assert all(pair in TRANSITIONS for pair in seen)
