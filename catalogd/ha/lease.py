"""The lease decisions, pure: no clock, no database, no threads (times are passed in).

The state store holds one lease row: ``holder`` (a process id string), ``epoch``
(bumped by every change of holder), ``expires_us`` (on the *database's* clock, so
hosts need not agree on the time) and the holder's advertised endpoints.

:func:`decide` is run inside the transaction that holds the row lock; it says what
the row becomes. :class:`RoleState` is this process's view of its own role, on its
local monotonic clock: an active may publish only while ``now < valid_until``, where
``valid_until`` is taken from the moment *before* the renewing transaction started,
shortened by a safety factor. That moment precedes the database's ``now`` used for
the expiry, so the local deadline passes before the lease can expire for anyone
else (clock *rates* may differ by far less than the factor). Once it passes
without a renewal, the process is fenced for good: it must never publish again.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

__all__ = ["Claim", "Decision", "LeaseRow", "Outcome", "Role", "RoleState", "decide"]

# The part of the lease an active trusts locally (the rest covers clock-rate drift).
SAFETY = 0.8


@dataclass(frozen=True, slots=True)
class LeaseRow:
    """The lease row as stored. ``holder`` "" and ``epoch`` 0: never held."""

    holder: str = ""
    epoch: int = 0
    expires_us: int = 0
    endpoint: str = ""
    admin: str = ""

    def live(self, now_us: int) -> bool:
        """True while the lease binds everyone but its holder."""
        return bool(self.holder) and self.expires_us > now_us


@dataclass(frozen=True, slots=True)
class Claim:
    """Who asks: a holder id unique to this process, and where it serves when active."""

    holder: str
    endpoint: str
    admin: str


class Outcome(enum.Enum):
    ACQUIRED = "acquired"  # we hold it now, under a new epoch
    RENEWED = "renewed"  # we held it and still do, same epoch
    HELD = "held"  # someone else holds a live lease
    LOST = "lost"  # we held epoch e; the row moved on: we are fenced
    RELEASED = "released"  # we gave it up (expires now, epoch kept)


@dataclass(frozen=True, slots=True)
class Decision:
    outcome: Outcome
    row: LeaseRow  # the row after the decision (the one to write when it changed)
    write: bool


def decide(row: LeaseRow, me: Claim, my_epoch: int | None, now_us: int, lease_us: int) -> Decision:
    """What to do with the lease ``row`` at database time ``now_us``.

    ``my_epoch`` is the epoch this process holds (None: it holds none). Rules:

    * held by us under our epoch: renew (same epoch, new expiry), even if it
      expired meanwhile: nobody took it, so no one else published;
    * we held an epoch but the row shows another one: LOST, write nothing;
    * not live (never held, released or expired), or held under our holder id
      by a claim we did not take up (an acquisition that came back too late to
      trust, see :meth:`RoleState.after`): acquire with ``epoch + 1``;
    * otherwise HELD by another: write nothing.
    """
    if lease_us <= 0:
        raise ValueError("the lease must last a positive time")
    expires = now_us + lease_us
    if my_epoch is not None:
        if row.holder == me.holder and row.epoch == my_epoch:
            renewed = replace(row, expires_us=expires, endpoint=me.endpoint, admin=me.admin)
            return Decision(Outcome.RENEWED, renewed, True)
        return Decision(Outcome.LOST, row, False)
    if not row.live(now_us) or row.holder == me.holder:
        acquired = LeaseRow(me.holder, row.epoch + 1, expires, me.endpoint, me.admin)
        return Decision(Outcome.ACQUIRED, acquired, True)
    return Decision(Outcome.HELD, row, False)


def release(row: LeaseRow, me: Claim, my_epoch: int | None) -> Decision:
    """Give the lease up (graceful stop): only when we hold it under ``my_epoch``."""
    if my_epoch is not None and row.holder == me.holder and row.epoch == my_epoch:
        return Decision(Outcome.RELEASED, replace(row, expires_us=0), True)
    return Decision(Outcome.LOST if my_epoch is not None else Outcome.HELD, row, False)


class Role(enum.Enum):
    STANDBY = "standby"
    ACTIVE = "active"
    FENCED = "fenced"  # was active, lost or could not renew in time: never publishes again


@dataclass(frozen=True, slots=True)
class RoleState:
    """This process's role on its monotonic clock. Start with ``RoleState()``.

    ``lease`` is the last row seen (who is active, until when); ``valid_until``
    the local deadline of an active.
    """

    role: Role = Role.STANDBY
    epoch: int | None = None
    valid_until: float = 0.0
    lease: LeaseRow = LeaseRow()

    def after(
        self, decision: Decision, started: float, lease_s: float, finished: float | None = None
    ) -> RoleState:
        """The state after a lease transaction that ran from local time ``started``
        to ``finished`` (None: at once).

        An acquisition that took more than half the trusted part of the lease
        (blocked on the row lock, a stall) is not taken up: too little of it would
        be left to serve before the first renewal. The process stays a standby;
        its next step takes the lease again under a new epoch.
        """
        if self.role is Role.FENCED:
            return replace(self, lease=decision.row)
        outcome = decision.outcome
        slow = finished is not None and finished - started > lease_s * SAFETY / 2
        if outcome is Outcome.ACQUIRED and slow:
            return replace(self, lease=decision.row)
        if outcome in (Outcome.ACQUIRED, Outcome.RENEWED):
            if self.role is Role.ACTIVE and started >= self.valid_until:
                # Renewed too late: we may already have stopped publishing; the
                # epoch is still ours but this process does not resume.
                return RoleState(Role.FENCED, self.epoch, 0.0, decision.row)
            return RoleState(
                Role.ACTIVE, decision.row.epoch, started + lease_s * SAFETY, decision.row
            )
        if outcome is Outcome.LOST:
            return RoleState(Role.FENCED, self.epoch, 0.0, decision.row)
        if outcome is Outcome.RELEASED:
            return RoleState(Role.FENCED, self.epoch, 0.0, decision.row)
        return replace(self, lease=decision.row)  # HELD: still a standby

    def tick(self, now: float) -> RoleState:
        """The state at local time ``now`` without news (a failed renewal, or none yet)."""
        if self.role is Role.ACTIVE and now >= self.valid_until:
            return replace(self, role=Role.FENCED, valid_until=0.0)
        return self

    def may_publish(self, now: float) -> bool:
        """True only for an active whose local deadline has not passed."""
        return self.role is Role.ACTIVE and now < self.valid_until
