"""The sync machine's phases and the one table of transitions between them (pure).

:class:`~subscriber.sync.SyncMachine` is in one :class:`Phase` at a time and changes
it only through :func:`next_phase`, by the :class:`Event` that happened; a pair not
in :data:`TRANSITIONS` is a bug and raises. (h11's ``_state.py`` keeps its
connection states the same way.) What each phase means is in :mod:`subscriber.sync`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

from subscriber.protocol.errors import ProtocolError

__all__ = ["TRANSITIONS", "Event", "Phase", "next_phase"]


class Phase(Enum):
    """What the machine is waiting for: a first message, a snapshot, nothing, a catch-up."""

    JOINING = "joining"
    SNAPSHOTTING = "snapshotting"
    SYNCED = "synced"
    CATCHING_UP = "catching-up"


class Event(Enum):
    """What moves the machine from one phase to another (see :data:`TRANSITIONS`)."""

    CONNECTED = "connected"
    """The transport (re)created its sockets: wait for the first message."""
    SNAPSHOT_NEEDED = "snapshot-needed"
    """First contact, a new service, a catch-up the server cannot give, a request timed out."""
    CATCH_UP_NEEDED = "catch-up-needed"
    """A gap, a lost part, a heartbeat ahead, or a reconnect to the same service."""
    SNAPSHOT_INSTALLED = "snapshot-installed"
    CAUGHT_UP = "caught-up"


_J, _S, _Y, _C = Phase.JOINING, Phase.SNAPSHOTTING, Phase.SYNCED, Phase.CATCHING_UP
TRANSITIONS: Mapping[tuple[Phase, Event], Phase] = {
    # A new connection starts over from any phase.
    (_J, Event.CONNECTED): _J,
    (_S, Event.CONNECTED): _J,
    (_Y, Event.CONNECTED): _J,
    (_C, Event.CONNECTED): _J,
    # A snapshot is the way out of anything (asked again while one is awaited).
    (_J, Event.SNAPSHOT_NEEDED): _S,
    (_S, Event.SNAPSHOT_NEEDED): _S,
    (_Y, Event.SNAPSHOT_NEEDED): _S,
    (_C, Event.SNAPSHOT_NEEDED): _S,
    # A catch-up needs a cache to catch up from: never while a snapshot is awaited.
    (_J, Event.CATCH_UP_NEEDED): _C,
    (_Y, Event.CATCH_UP_NEEDED): _C,
    (_C, Event.CATCH_UP_NEEDED): _C,
    # A complete snapshot or catch-up answer syncs whatever was awaited meanwhile
    # (answers cross: a catch-up answered after a snapshot was asked for, ...).
    (_J, Event.SNAPSHOT_INSTALLED): _Y,
    (_S, Event.SNAPSHOT_INSTALLED): _Y,
    (_Y, Event.SNAPSHOT_INSTALLED): _Y,
    (_C, Event.SNAPSHOT_INSTALLED): _Y,
    (_J, Event.CAUGHT_UP): _Y,
    (_S, Event.CAUGHT_UP): _Y,
    (_Y, Event.CAUGHT_UP): _Y,
    (_C, Event.CAUGHT_UP): _Y,
}
"""Every allowed ``(phase, event) -> next phase``; :meth:`~subscriber.sync.SyncMachine._enter` is
the one place the phase changes, and refuses a pair not listed here."""


def next_phase(phase: Phase, event: Event) -> Phase:
    """The phase after ``event`` in ``phase``.

    Raises:
        ProtocolError: :data:`TRANSITIONS` allows no such transition (a bug in the machine).
    """
    after = TRANSITIONS.get((phase, event))
    if after is None:
        raise ProtocolError(f"sync machine: no transition from {phase} on {event}")
    return after
