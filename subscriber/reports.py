"""When a subscriber reports its applied version to catalogd (pure: time is passed in).

catalogd learns each subscriber's applied version (its ``--sync`` barriers, its status
page) from one-way ``TSubscriberReport`` requests. :class:`ReportClock` keeps the
timing that :class:`~subscriber.sync.SyncMachine` follows while synced:

* A report goes every ``interval`` seconds with a heartbeat (due half a heartbeat
  interval early: ``slack`` may be negative); a delta or a tick (the transport woke for
  no message) sends it ``slack`` later, one heartbeat interval (at most ``interval``).
  catalogd heartbeats every heartbeat interval, so reports ride on heartbeats: an idle
  subscriber wakes once per interval, not twice, and a change's path carries none
  (at 10 changes a second they rode on changes: ~1 in 10 of each subscriber's, so every
  change's fan-out paid for a few reports). Reports still come at least every
  ``2 * interval``, well inside catalogd's 10 s expiry of a silent subscriber.
* A heartbeat asking for reports (a barrier waits for version V) makes each new version
  go at once until one at least V has gone.
* A delta costs no report (nor catalogd a message per subscriber).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ReportClock"]


@dataclass(slots=True)
class ReportClock:
    """The last report and what was asked; :meth:`due_at` says when the next is due."""

    interval: float = 1.0
    version: int = -1
    """The version last reported (-1: none yet)."""
    at: float = 0.0
    """When it was reported."""
    until: int = 0
    """Each new version is reported at once until one this new has been."""

    def ask(self, version: int) -> None:
        """A heartbeat asked for reports until ``version`` is reported."""
        self.until = max(self.until, version)

    def asked(self, current: int) -> bool:
        """A report of ``current`` was asked for and has not gone."""
        return current != self.version and self.version < self.until

    def due_at(self, current: int, now: float, slack: float = 0.0) -> float:
        """When a report of ``current`` is due: ``now`` when asked, else ``interval`` +
        ``slack`` after the last one."""
        return now if self.asked(current) else self.at + self.interval + slack

    def due(self, current: int, now: float, slack: float = 0.0) -> bool:
        """Whether a report of ``current`` is due at ``now`` (:meth:`due_at` in one call:
        it is asked on every message)."""
        version = self.version
        return (current != version and version < self.until) or (
            now >= self.at + self.interval + slack
        )

    def sent(self, version: int, now: float) -> None:
        self.version, self.at = version, now
