"""Who has joined: ROUTER identities, the client ids they joined under, their reports.

Pure: no sockets, threads or clocks (``now`` is passed in). The server thread
owns one :class:`Membership` and is its only writer; other threads read
``ServerStats.subscribers`` (client id -> (applied version, last report)), which
:class:`Membership` keeps.

Invariants:

* A report counts only when :func:`may_report` says so:
  it comes from the connection (ROUTER identity) that joined (said hello) under
  that client id, and no other live connection owns the id. A made-up report
  cannot confirm a ``--sync``.
* Memory is bounded: at most ``max_members`` joined connections (the one silent
  longest makes room), and every entry expires ``ttl_s`` after it was last heard
  of, so ``subscribers`` never holds more than ``max_members`` ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Report:
    """A subscriber's report: it applied ``applied_version`` (None: it said goodbye)."""

    client_id: str
    applied_version: int | None
    at: float


def may_report(
    identity: bytes,
    client_id: str,
    joined_as: str | None,
    owner: bytes | None,
    owner_seen: float | None,
    now: float,
    ttl_s: float,
) -> bool:
    """Whether a report for ``client_id`` from the connection ``identity`` counts.

    Until subscribers authenticate, a report counts only for the connection
    that joined (said hello) under that client id (``joined_as``), and only if
    no *other* connection owns the id (``owner``, last heard of at
    ``owner_seen``) and was heard of within ``ttl_s``. With CURVE keys the
    server passes ``identity`` as ``key name NUL routing id``
    (``CatalogServer._peer``), so a report also counts only from the key that
    joined under that client id.
    """
    if joined_as != client_id:
        return False
    if owner is None or owner == identity:
        return True
    return owner_seen is None or now - owner_seen > ttl_s


@dataclass
class Membership:
    """Joined connections and the reports they send (server thread only)."""

    subscribers: dict[str, tuple[int, float]]
    """The live view other threads read (``ServerStats.subscribers``)."""
    ttl_s: float
    max_members: int
    joined: dict[bytes, tuple[str, float]] = field(default_factory=dict)
    """ROUTER identity -> (client id it joined under, when last heard of)."""
    owners: dict[str, bytes] = field(default_factory=dict)
    """client id -> the identity whose reports count for it."""
    follows: dict[str, str] = field(default_factory=dict)
    """client id -> the databases it said it follows (bounded like ``owners``)."""

    def join(self, identity: bytes, client_id: str, now: float, follows: str = "all") -> None:
        """``identity`` said hello as ``client_id`` (following ``follows``); it owns the
        id unless a live one does."""
        previous = self.joined.get(identity)
        if previous is not None and previous[0] != client_id:
            self._forget(identity)
        if identity not in self.joined and len(self.joined) >= self.max_members:
            oldest = min(self.joined, key=lambda i: self.joined[i][1])
            self._forget(oldest)
        self.joined[identity] = (client_id, now)
        owner = self.owners.get(client_id)
        if owner is None or owner not in self.joined or self._silent(owner, now):
            if owner is not None and owner != identity:
                self.subscribers.pop(client_id, None)  # the old connection's word is void
            self.owners[client_id] = identity
        if self.owners.get(client_id) == identity:
            self.follows[client_id] = follows

    def report(self, identity: bytes, report: Report) -> bool:
        """Record ``report`` from ``identity``; False (and nothing recorded) when it may not."""
        owner = self.owners.get(report.client_id)
        owner_seen = self.joined[owner][1] if owner in self.joined else None
        joined = self.joined.get(identity)
        if not may_report(
            identity,
            report.client_id,
            joined[0] if joined else None,
            owner,
            owner_seen,
            report.at,
            self.ttl_s,
        ):
            return False
        self.owners[report.client_id] = identity
        self.joined[identity] = (report.client_id, report.at)
        if report.applied_version is None:  # goodbye
            self._forget(identity)
        else:
            self.subscribers[report.client_id] = (report.applied_version, report.at)
        return True

    def expire(self, now: float) -> int:
        """Forget connections silent for longer than ``ttl_s``; returns how many."""
        silent = [i for i in self.joined if self._silent(i, now)]
        for identity in silent:
            self._forget(identity)
        return len(silent)

    def _silent(self, identity: bytes, now: float) -> bool:
        return now - self.joined[identity][1] > self.ttl_s

    def _forget(self, identity: bytes) -> None:
        client_id, _ = self.joined.pop(identity)
        if self.owners.get(client_id) == identity:
            del self.owners[client_id]
            self.subscribers.pop(client_id, None)
            self.follows.pop(client_id, None)
