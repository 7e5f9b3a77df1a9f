"""The subscriber's synchronisation protocol as a pure state machine.

The transport (:mod:`subscriber.transport`) owns the sockets; it feeds decoded
messages (:mod:`subscriber.protocol.messages`) and clock ticks into
:class:`SyncMachine` and carries out the :class:`Step` each returns: requests to
send (:class:`Action`), a version report to send, counters to add. Nothing
here does I/O or reads a clock: time arrives as ``now`` arguments, so every
path is testable in microseconds.

Protocol (the ZeroMQ guide's Clone pattern, hardened):

1. ``JOINING``: the SUB socket is subscribed; wait until *anything* arrives on
   it, which proves the subscription is live (closes the slow-joiner race;
   catalogd publishes a heartbeat the moment a subscription reaches it). When
   the welcome carried the whole snapshot (a small selection at version V), that
   first message installs it and is then handled as in ``SYNCED``: anything
   published after V and before the SUB was live shows as a gap (a heartbeat or
   delta ahead of V) and is caught up, so no snapshot request is needed.
2. ``SNAPSHOTTING``: ask for a snapshot and buffer every delta meanwhile. The
   answer comes in chunks numbered from 0, then an end that states the entry
   and chunk counts; a chunk out of order, an undecodable answer or counts
   that do not match (a truncated snapshot) ask for the snapshot again. On
   the complete snapshot at version V, apply buffered deltas newer than V,
   drop older.
3. ``SYNCED``: apply each committed delta only when it follows the cached
   version (:meth:`Delta.rebased`); a gap, a commit whose per-database parts did
   not all arrive, or a heartbeat announcing a version we lack asks for a
   catch-up from the cached version (``CATCHING_UP``, buffering again); the
   server answers with a delta or, when its log no longer reaches back, with a
   snapshot. A new ``service_id`` means catalogd restarted: snapshot again.
4. No message for ``stale_after`` seconds marks the cache stale (reads still
   work) and asks the transport to reconnect, which restarts at ``JOINING``.

While synced, each message, tick and completed snapshot or catch-up also tells
whether to report the applied version to catalogd, by :class:`~subscriber.reports.ReportClock`
(every ``report_interval_s``, riding on a message; at once when a heartbeat asked).

Invariants: the cache only ever moves by whole deltas that follow its version
or by complete snapshots; every lost message is detected by a version gap, a
count mismatch, or a heartbeat.

The phases and the table of allowed transitions between them are in
:mod:`subscriber.phases`; :meth:`SyncMachine._enter` is the one place the phase changes.

Why one module of just over 400 lines: it is the protocol's one state machine; splitting
its handlers across files would hide the invariants stated above.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter

from subscriber.cache import CatalogCache
from subscriber.phases import Event, Phase, next_phase
from subscriber.protocol.delta import Delta, Entry
from subscriber.protocol.keys import GLOBAL
from subscriber.protocol.messages import (
    Commit,
    DeltaPart,
    Heartbeat,
    PackedRun,
    SnapshotChunk,
    SnapshotEnd,
    Welcome,
)
from subscriber.reports import ReportClock
from subscriber.steps import Action, ActionKind, Report, Step

__all__ = ["Action", "ActionKind", "Phase", "Report", "Step", "SyncMachine"]

Runs = Iterable[PackedRun]


@dataclass(slots=True)
class _Assembly:
    """The snapshot being received: its entries so far and the next chunk's number."""

    entries: list[Entry] = field(default_factory=list)
    packed: list[PackedRun] = field(default_factory=list)
    count: int = 0
    next_seq: int = 0


class SyncMachine:
    """Drives one :class:`CatalogCache` from protocol messages.

    Args:
        databases: follow only these databases (plus global objects); None = all.
        stale_after_heartbeats: heartbeat intervals of silence before stale.
        request_timeout_s: re-send a snapshot/catch-up request after this long.
        report_interval_s: while synced, report the applied version at least
            this often (and once it changes, when a heartbeat asked for it).
        cache: what the deltas are applied to (default a replica; an on-demand
            subscriber passes an :class:`~subscriber.ondemand.cache.OnDemandCache`).
    """

    def __init__(
        self,
        *,
        databases: Iterable[str] | None = None,
        stale_after_heartbeats: float = 3.0,
        request_timeout_s: float = 10.0,
        report_interval_s: float = 1.0,
        cache: CatalogCache | None = None,
    ) -> None:
        self.cache: CatalogCache = cache if cache is not None else CatalogCache()
        self.databases = None if databases is None else frozenset(d.lower() for d in databases)
        self.phase = Phase.JOINING
        self.stale = False
        self.gaps = 0
        self._stale_after = stale_after_heartbeats
        self._request_timeout = request_timeout_s
        self._interval = 1.0
        self._service_id: str | None = None  # the service we follow
        self._announced = 0  # newest version the service told us about
        self._last_heard: float | None = None
        self._current_since: float | None = None  # when the cache last matched _announced
        self._requested_at: float | None = None
        self._pending: dict[tuple[str, int, int], dict[str, DeltaPart]] = {}  # parts by database
        self._buffer: list[tuple[str, Delta]] = []  # (service id, delta) while not synced
        self._assembly: _Assembly | None = None  # the snapshot asked for, while it arrives
        self._offer: Welcome | None = None  # a welcome carrying a snapshot, while joining
        self._reports = ReportClock(report_interval_s)

    # -- read side ------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        return self.phase is Phase.SYNCED and not self.stale

    def lag_seconds(self, now: float) -> float:
        """0 while the cache holds every announced version, else seconds since it did."""
        if self._current_since is None:
            return float("inf")
        if self.cache.view.version >= self._announced and not self.stale:
            return 0.0
        return max(0.0, now - self._current_since)

    def wants(self, database: str) -> bool:
        return database == GLOBAL or self.databases is None or database in self.databases

    # -- inputs ---------------------------------------------------------------------

    def on_connected(self, now: float, welcome: Welcome | None = None) -> Step:
        """The transport (re)created its sockets and subscribed, after ``welcome``: the
        first message of its service installs the welcome's snapshot, if it has one."""
        self._enter(Event.CONNECTED)
        self._offer = welcome if welcome is not None and welcome.snapshot is not None else None
        self._pending.clear()
        self._buffer.clear()
        self._assembly = None
        self._requested_at = None
        self._last_heard = now
        return Step()

    def on_part(self, part: DeltaPart, now: float) -> Step:
        if self._whole_next(part):  # the common case, the short way
            return self._apply_whole(part, now)
        return self._report_if_due(self._part(part, now), now, self._tick_slack())

    def on_commit(self, commit: Commit, now: float) -> Step:
        return self._report_if_due(self._commit(commit, now), now, self._tick_slack())

    def on_heartbeat(self, beat: Heartbeat, now: float) -> Step:
        # Reports ride on heartbeats (due half a heartbeat interval early: beats jitter).
        return self._report_if_due(self._heartbeat(beat, now), now, -self._tick_slack() / 2)

    def on_snapshot_chunk(self, chunk: SnapshotChunk, now: float) -> Step:
        """One chunk of the answer to the snapshot this machine asked for."""
        assembly = self._assembly
        if assembly is None:
            return Step()  # nothing asked for: a stale answer
        if chunk.seq != assembly.next_seq:
            return self._restart_snapshot()
        assembly.entries.extend(chunk.entries)
        assembly.packed.extend(chunk.packed)
        assembly.count += chunk.count
        assembly.next_seq += 1
        return Step()

    def on_snapshot_end(self, end: SnapshotEnd, now: float) -> Step:
        """The end of the snapshot answer: install it if no chunk went missing."""
        assembly = self._assembly
        if assembly is None:
            return Step()
        if end.count != assembly.count or end.chunks != assembly.next_seq:
            return self._restart_snapshot()  # truncated
        installed = self._install(
            end.service_id, end.version, assembly.entries, now, assembly.packed
        )
        return self._report_if_due(installed, now)

    def on_snapshot_garbage(self, now: float) -> Step:
        """An answer to the snapshot request that is an error or does not decode."""
        return Step() if self._assembly is None else self._restart_snapshot()

    def on_snapshot(
        self, service_id: str, version: int, entries: Iterable[Entry], now: float
    ) -> Step:
        """A complete snapshot (:meth:`on_snapshot_end` checked its counts)."""
        return self._report_if_due(self._install(service_id, version, entries, now), now)

    def _install(
        self, service_id: str, version: int, entries: Iterable[Entry], now: float, packed: Runs = ()
    ) -> Step:
        step = Step(installed=True)
        self._assembly = None
        self._offer = None
        same_service = service_id == self.cache.view.service_id
        self._announced = max(version, self._announced) if same_service else version
        self._service_id = service_id
        step.events = self.cache.install(service_id, version, entries, packed)
        self._enter(Event.SNAPSHOT_INSTALLED)
        self.stale = False
        self._requested_at = None
        return self._drain(step, now)

    def on_catch_up(self, delta: Delta, now: float) -> Step:
        """The server's answer to a catch-up request (already filtered to our databases)."""
        step = Step()
        self._requested_at = None
        rebased = delta.rebased(self.cache.view.version)
        if rebased is None:  # cannot happen with an honest server: recover the safe way
            return self._snapshot(step, now)
        step.events = self.cache.apply(rebased)
        self._enter(Event.CAUGHT_UP)
        self.stale = False
        return self._report_if_due(self._drain(step, now), now)

    def on_catch_up_unavailable(self, now: float) -> Step:
        """The server's delta log no longer reaches back to our version."""
        return self._snapshot(Step(), now)

    def on_tick(self, now: float) -> Step:
        return self._report_if_due(self._tick(now), now, self._tick_slack())

    def next_tick(self, now: float) -> float:
        """Seconds from ``now`` until :meth:`on_tick` may act (0: it may now): the
        silence, request and report deadlines. Until then a tick returns an empty
        step, so an idle transport sleeps until the earliest of them."""
        due = []
        if self._last_heard is not None:
            due.append(self._last_heard + self._stale_after * self._interval)
        if self._requested_at is not None:
            due.append(self._requested_at + self._request_timeout)
        if self.synced:
            due.append(self._reports.due_at(self.cache.view.version, now, self._tick_slack()))
        return max(0.0, min(due, default=now + 3600.0) - now)

    # -- internals ------------------------------------------------------------------

    def _part(self, part: DeltaPart, now: float) -> Step:
        step = self._heard(part.service_id, now)
        if step.actions or self._foreign(part.service_id):
            step.dropped += 1
            return step
        if not self.wants(part.database):
            step.dropped += 1  # the publisher should not have sent it
            return step
        parts = self._pending.setdefault((part.service_id, part.from_version, part.to_version), {})
        parts[part.database] = part
        if part.counts is not None and self.databases is None:
            # The last part commits inline (a filtered subscriber waits for the
            # separate commit, which counts only what it follows).
            inline = Commit(part.service_id, part.from_version, part.to_version, part.counts)
            committed = self._commit(inline, now)
            committed.dropped += step.dropped
            committed.installed |= step.installed  # the welcome's snapshot, just now
            committed.events[:0] = step.events
            return committed
        return step

    def _whole_next(self, part: DeltaPart) -> bool:
        """The common case: a whole one-database delta (commit inline) that follows the
        cache, nothing pending. :meth:`_apply_whole` does what the general path does."""
        counts = part.counts
        return (
            counts is not None
            and len(counts) == 1
            and part.from_version == self.cache.view.version < part.to_version
            and self.phase is Phase.SYNCED
            and self.databases is None
            and not self._pending
            and part.service_id == self._service_id
            and counts.get(part.database) == len(part.entries) > 0
        )

    def _apply_whole(self, part: DeltaPart, now: float) -> Step:
        """What :meth:`_part`, :meth:`_commit` and :meth:`_apply_or_catch_up` do with such
        a part (it follows the cache: no rebase; it is not empty), with its report."""
        self._last_heard = now
        to_version = part.to_version
        if to_version >= self._announced:
            self._announced = to_version
            self._current_since = now  # the cache holds every announced version
        if len(entries := part.entries) > 1:
            entries = tuple(sorted(entries, key=attrgetter("version")))
        # _whole_next checked from_version < to_version: no second check.
        step = Step(events=self.cache.advance(part.from_version, to_version, entries))
        return self._report_if_due(step, now, self._tick_slack())

    def _commit(self, commit: Commit, now: float) -> Step:
        step = self._heard(commit.service_id, now)
        if step.actions or self._foreign(commit.service_id):
            step.dropped += 1
            return step
        self._announced = max(self._announced, commit.to_version)
        if self.phase is Phase.SYNCED and commit.to_version <= self.cache.view.version:
            # Already applied (an inline commit came first, or a duplicate).
            self._pending.pop((commit.service_id, commit.from_version, commit.to_version), None)
            step.dropped += 1
            return step
        parts = self._pending.pop((commit.service_id, commit.from_version, commit.to_version), {})
        # Parts of older deltas whose commit was lost can never complete.
        for key in [k for k in self._pending if k[2] <= commit.from_version]:
            del self._pending[key]
        expected = {db: n for db, n in commit.counts.items() if n and self.wants(db)}
        got = {db: len(p.entries) for db, p in parts.items()}
        if got != expected:
            # A part was lost (HWM, reconnect): only a catch-up can fill it.
            self.gaps += 1
            if self.phase is Phase.SYNCED:
                return self._catch_up(step, now)
            return step
        entries = sorted((e for p in parts.values() for e in p.entries), key=attrgetter("version"))
        delta = Delta(commit.from_version, commit.to_version, tuple(entries))
        if self.phase is not Phase.SYNCED:
            self._buffer.append((commit.service_id, delta))
            return step
        return self._apply_or_catch_up(delta, step, now)

    def _heartbeat(self, beat: Heartbeat, now: float) -> Step:
        step = self._heard(beat.service_id, now)
        self._interval = beat.interval_s
        if step.actions or self._foreign(beat.service_id):
            return step
        if beat.report:
            self._reports.ask(beat.version)
        self._announced = max(self._announced, beat.version)
        if self.phase is Phase.SYNCED and beat.version > self.cache.view.version:
            # Publications are ordered: a heartbeat ahead of us means we lost a delta.
            self.gaps += 1
            return self._catch_up(step, now)
        if self.cache.view.version >= self._announced:
            self._current_since = now
        return step

    def _tick(self, now: float) -> Step:
        step = Step()
        silent_for = now - self._last_heard if self._last_heard is not None else 0.0
        if silent_for > self._stale_after * self._interval:
            self.stale = True
            self._last_heard = now  # one reconnect per silence period
            step.actions.append(Action(ActionKind.RECONNECT))
            return step
        if self._requested_at is not None and now - self._requested_at > self._request_timeout:
            if self.phase is Phase.CATCHING_UP:
                return self._catch_up(step, now)
            return self._snapshot(step, now)
        return step

    def _heard(self, service_id: str, now: float) -> Step:
        step = Step()
        self._last_heard = now
        if self.phase is Phase.JOINING:
            # The first message proves the subscription is live. The welcome's
            # snapshot needs no request; after a reconnect to the same service a
            # catch-up is enough.
            offer = self._offer
            if offer is not None and offer.snapshot is not None and offer.service_id == service_id:
                return self._install(service_id, offer.version, offer.snapshot, now)
            if service_id == self._service_id == self.cache.view.service_id:
                return self._catch_up(step, now)
            return self._snapshot(step, now)
        if self._service_id is not None and service_id != self._service_id:
            return self._snapshot(step, now)  # catalogd restarted
        return step

    def _foreign(self, service_id: str) -> bool:
        return self._service_id is not None and service_id != self._service_id

    def _enter(self, event: Event) -> None:
        """The one place the phase changes (by :data:`~subscriber.phases.TRANSITIONS`)."""
        self.phase = next_phase(self.phase, event)

    def _snapshot(self, step: Step, now: float) -> Step:
        self._enter(Event.SNAPSHOT_NEEDED)
        self._pending.clear()
        self._buffer.clear()
        self._requested_at = now
        self._service_id = None  # accept whichever service answers
        self._assembly = _Assembly()
        step.actions.append(Action(ActionKind.REQUEST_SNAPSHOT))
        return step

    def _restart_snapshot(self) -> Step:
        """Ask for the snapshot again (keeping the deltas buffered meanwhile)."""
        self._assembly = _Assembly()
        return Step([Action(ActionKind.REQUEST_SNAPSHOT)], garbage=1)

    def _report_if_due(self, step: Step, now: float, slack: float = 0.0) -> Step:
        """While synced, a report when :class:`ReportClock` says one is due."""
        version = self.cache.view.version
        if self._reports.due(version, now, slack) and self.synced:
            self._reports.sent(version, now)
            step.report = Report(self.cache.view.service_id, version)
        return step

    def _tick_slack(self) -> float:
        """A tick's or a delta's report waits one heartbeat interval more (a heartbeat
        carries it, so a change's path sends none)."""
        return min(self._interval, self._reports.interval)

    def _catch_up(self, step: Step, now: float) -> Step:
        self._enter(Event.CATCH_UP_NEEDED)
        self._requested_at = now
        step.actions.append(Action(ActionKind.REQUEST_CATCH_UP, self.cache.view.version))
        return step

    def _apply_or_catch_up(self, delta: Delta, step: Step, now: float) -> Step:
        rebased = delta.rebased(self.cache.view.version)
        if rebased is None:
            self.gaps += 1
            self._buffer.append((self.cache.view.service_id, delta))
            return self._catch_up(step, now)
        if rebased.empty:
            step.dropped += 1  # duplicate or already covered
        else:
            step.events.extend(self.cache.apply(rebased))
        if self.cache.view.version >= self._announced:
            self._current_since = now
        return step

    def _drain(self, step: Step, now: float) -> Step:
        service_id = self.cache.view.service_id
        # Deltas of another service (in flight across a restart) mean nothing here.
        buffered = sorted(
            (d for sid, d in self._buffer if sid == service_id), key=lambda d: d.from_version
        )
        self._buffer = []
        for index, delta in enumerate(buffered):
            self._apply_or_catch_up(delta, step, now)
            if self.phase is not Phase.SYNCED:  # a gap: the rest waits for the catch-up
                self._buffer.extend((service_id, d) for d in buffered[index + 1 :])
                break
        if self.phase is Phase.SYNCED and self.cache.view.version >= self._announced:
            self._current_since = now
        return step
