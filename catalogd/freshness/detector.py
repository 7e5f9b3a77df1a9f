"""Automatic change detection: HMS notification events, or cheap polling.

One thread (``catalogd-detector``) starts a cycle every ``interval_s`` in one of
two modes, chosen per cycle (``auto``: events when the HMS logs any):

* **events** (when the HMS logs them, i.e. a notification listener is
  configured): read the notification events after the last id seen and reload
  exactly what they name. Each cycle also re-reads the ids first read in the
  last ``event_late_s`` (one more HMS call, none when HMS was quiet that long)
  for late commits, and replays of an event already handled are skipped (see
  :mod:`catalogd.freshness.events`). A jump in ids (events expired before we
  read them) triggers one polling cycle over everything, never a wedge.
* **polling** (otherwise): compare HMS with the catalog by fingerprint (see
  :mod:`catalogd.freshness.polling`) and reload only what differs.

Cost on HMS: every polling cycle lists names, ``1 + D`` calls for ``D``
databases, so creates and drops are seen within one interval. Then it
fingerprints tables (``ceil(T/100)`` bulk calls plus one partition-name call
per partitioned table for ``T`` tables) for at most
``max_calls_per_s * interval_s`` calls, resuming where the previous cycle
stopped: a full pass over ``T`` tables takes about
``(T/100 + P) / max_calls_per_s`` seconds, and HMS never sees more than
``max_calls_per_s`` calls per second from the detector
(:class:`~catalogd.freshness.budget.CallBudget`).
HMS logs no events for grants and roles: with ``privileges_interval_s`` they
are reloaded that often, in either mode.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from catalogd.freshness.budget import CallBudget
from catalogd.freshness.events import EventWindow, apply_events, plan_events
from catalogd.freshness.polling import Poller
from catalogd.loading.table_loader import TableLoader
from catalogd.runtime_info import RuntimeInfo
from catalogd.writes.operations import Operations
from subscriber.protocol.errors import CatalogError, NotFoundError, UnavailableError

log = logging.getLogger(__name__)


@dataclass
class DetectorStats:
    """The detector's counters (written by its thread; tests and benchmarks read them)
    and where event reading stands (``last_event_id``)."""

    cycles: int = 0
    duplicate_events: int = 0
    event_gaps: int = 0
    hms_calls: int = 0
    reloads: int = 0
    last_event_id: int = 0
    errors: int = 0
    last_checked: float | None = None
    """Wall time the last cycle that reached HMS ended (what the cache may lag by)."""


class ChangeDetector:
    """Keeps the catalog in step with HMS without anyone typing a command.

    Args:
        mode: ``"auto"`` (events when the HMS logs any, else polling),
            ``"events"``, ``"poll"`` or ``"off"``.
        start_event_id: the HMS event id read *before* the initial load, so
            nothing committed in between is missed.
        poller: polls instead of :class:`Poller` (it gets ``attach(call, self)``).
        event_late_s: how long after first reading an id the detector still
            looks for a late event under it (remembering what it handled).
    """

    def __init__(
        self,
        ops: Operations,
        loader: TableLoader,
        info: RuntimeInfo,
        *,
        interval_s: float = 5.0,
        mode: str = "auto",
        max_calls_per_s: float = 100.0,
        event_batch: int = 1000,
        event_late_s: float = 10.0,
        start_event_id: int = 0,
        privileges_interval_s: float | None = None,
        poller: Any | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if mode not in ("auto", "events", "poll", "off"):
            raise ValueError(f"unknown change detection mode {mode!r}")
        self.ops, self.loader, self.info = ops, loader, info
        self.interval_s = interval_s
        self.privileges_interval_s = privileges_interval_s
        self._privileges_due = 0.0
        self.mode = mode
        self.stats = DetectorStats(last_event_id=start_event_id)
        self._event_batch = event_batch
        self._window = EventWindow(event_late_s)
        self._budget = CallBudget(max_calls_per_s, clock, sleep)
        self._max_calls_per_s = max_calls_per_s
        # Another poller (catalogd.freshness.sql_detection.SqlPoller) may stand in.
        self._poller = poller if poller is not None else Poller(ops, self._call, self)
        if poller is not None:
            poller.attach(self._call, self)
        self._clock = clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="catalogd-detector", daemon=True)

    def start(self) -> ChangeDetector:
        if self.mode != "off":
            self._thread.start()
        return self

    def close(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        # Cycles start every interval_s, so a change waits at most one interval for the
        # cycle that sees it, not an interval plus the previous cycle's own time (an SQL
        # pass after a write takes 0.5 s on the medium benchmark catalog). A cycle longer
        # than the interval is followed by the next after a tenth of it.
        delay = self.interval_s
        while not self._stop.wait(delay):
            started = self._clock()
            self.run_once()
            if self.privileges_interval_s and self._clock() >= self._privileges_due:
                # HMS logs no events for grants and roles: they are always polled.
                self._privileges_due = self._clock() + self.privileges_interval_s
                try:
                    self.ops.load_privileges()
                except CatalogError as exc:
                    log.warning("reloading privileges failed: %s", exc)
            delay = max(self.interval_s - (self._clock() - started), self.interval_s / 10)

    # -- one cycle --------------------------------------------------------------------

    def run_once(self) -> None:
        """One detection cycle; never raises (errors are logged and counted)."""
        health = self.info.health  # this thread is its only writer
        try:
            if self._use_events():
                health.detector = "events"
                self._events_cycle()
            else:
                health.detector = "poll"
                self._poll_cycle()
            if not health.hms_healthy:
                log.info("Hive Metastore at %s recovered", self.info.facts.hms_address)
            health.hms_healthy, health.hms_error = True, None
            self.stats.last_checked = time.time()
        except UnavailableError as exc:
            self.stats.errors += 1
            if health.hms_healthy:
                log.warning("Hive Metastore unreachable; serving the last catalog: %s", exc)
            health.hms_healthy, health.hms_error = False, str(exc)
        except Exception:  # noqa: BLE001 - the detector must keep running
            self.stats.errors += 1
            log.exception("change detection cycle failed")
        self.stats.cycles += 1

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """One HMS call, within the budget and counted."""
        self._budget.spend()
        self.stats.hms_calls += 1
        return fn(*args)

    def _use_events(self) -> bool:
        if self.mode in ("events", "poll"):
            return self.mode == "events"
        source = self.ops.source()
        return self.stats.last_event_id > 0 or self._call(source.current_notification_id) > 0

    def _events_cycle(self) -> None:
        source = self.ops.source()
        last, now = self.stats.last_event_id, self._clock()
        events = self._call(source.next_notifications, last, self._event_batch)
        after = self._window.reread_after(last, now)
        if after is not None:
            behind = self._call(source.next_notifications, after, self._event_batch)
            events = [e for e in behind if e.eventId <= last] + events
        selection = self._window.select(events, last)
        self.stats.duplicate_events += selection.duplicates
        if selection.fresh:
            plan = plan_events(selection.fresh, last)
            if plan.gap is not None:
                # Ids were skipped: those events expired (or were never readable).
                self.stats.event_gaps += 1
                log.warning("HMS events %d..%d are gone; reloading by fingerprints", *plan.gap)
                self._poll_cycle()
            apply_events(plan, self)
        # Only now (nothing raised): these count as handled, and reading moves on.
        self._window.record(selection.fresh, now)
        self.stats.last_event_id = max([last, *(e.eventId for e in events)])

    def _poll_cycle(self) -> None:
        budget = max(100, int(self._max_calls_per_s * self.interval_s))
        self._poller.cycle(budget)

    # -- actions (for events.apply_events and polling.Poller) ------------------------------

    def relist(self, db: str) -> None:
        """List ``db``'s tables again, and queue its new placeholders for loading."""
        try:
            self.ops.load_names(db)
        except NotFoundError:
            log.info("database %s dropped", db)
        self.loader.enqueue_unloaded(db)

    def reload(self, db: str, table: str) -> None:
        """Reload one table now; raises only when HMS is unreachable."""
        self.stats.reloads += 1
        try:
            self.ops.load_table(db, table)
        except NotFoundError:
            log.info("table %s.%s dropped", db, table)
        except CatalogError as exc:
            if isinstance(exc, UnavailableError):
                raise
            log.warning("reloading %s.%s failed: %s", db, table, exc)

    def refresh_partitions(self, db: str, table: str, names: list[str]) -> None:
        """Reload the named partitions of one table now."""
        self.stats.reloads += 1
        try:
            self.ops.refresh_partitions(db, table, names)
        except NotFoundError:
            log.info("table %s.%s dropped", db, table)

    def databases(self) -> list[str]:
        """The databases the catalog holds (listed again when a message is unreadable)."""
        log.warning("an ALTER_TABLE event's message was unreadable: listing every database")
        return sorted(self.ops.databases())

    def known(self, db: str, table: str) -> bool:
        """Whether the catalog holds ``db.table`` (loaded or not)."""
        return self.ops.has_table(db, table)
