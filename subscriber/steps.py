"""What one input to the sync machine produces (pure values).

:class:`~subscriber.sync.SyncMachine` answers every message and clock tick with a
:class:`Step`: actions the transport carries out (requests to send, a reconnect),
change events for listeners, counters, and a version to report to catalogd.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from subscriber.cache import ChangeEvent

__all__ = ["Action", "ActionKind", "Report", "Step"]


class ActionKind(Enum):
    REQUEST_SNAPSHOT = "request-snapshot"
    REQUEST_CATCH_UP = "request-catch-up"
    RECONNECT = "reconnect"


@dataclass(frozen=True, slots=True)
class Action:
    kind: ActionKind
    from_version: int = 0


@dataclass(frozen=True, slots=True)
class Report:
    """Tell catalogd that this subscriber holds ``version`` of ``service_id``."""

    service_id: str
    version: int


@dataclass(slots=True)
class Step:
    """What one input produced: actions for the transport, events for listeners."""

    actions: list[Action] = field(default_factory=list)
    events: list[ChangeEvent] = field(default_factory=list)
    dropped: int = 0
    """Messages ignored as stale, duplicate or foreign (counted by the transport)."""
    garbage: int = 0
    """Snapshot answers out of order, undecodable or truncated (counted by the transport)."""
    installed: bool = False
    """A complete snapshot replaced the cache."""
    report: Report | None = None
    """Due now: the applied version to report to catalogd."""
