"""Automatic change detection: HMS notification events, or cheap polling.

One thread (``catalogd-detector``) runs a cycle every ``interval_s``:

* **events** (when the HMS logs them, i.e. a notification listener is
  configured): read ``get_next_notification`` after the last id seen and
  reload exactly what the events name. An event is known by its content as
  well as its id: HMS 2.x takes ids unlocked, so racing writers can log two
  different events under one id, or commit one under an id already read. So
  each cycle also re-reads the ids first read in the last ``event_late_s``
  (one more HMS call, none when HMS was quiet that long) for late commits,
  and replays of an event already handled are skipped. A jump in ids (events
  expired before we read them) triggers one polling cycle over everything,
  never a wedge.
* **polling** (otherwise): compare HMS with the catalog by fingerprint —
  database names, table names per database, each loaded table's
  ``transient_lastDdlTime`` (tables fetched 100 per call) and partition names
  per partitioned table — and reload only what differs.

Cost on HMS: every cycle lists names, ``1 + D`` calls for ``D`` databases, so
creates and drops are seen within one interval. Then it fingerprints tables
(``ceil(T/100)`` bulk calls plus one partition-name call per partitioned table
for ``T`` tables) for at most ``max_calls_per_s * interval_s`` calls, resuming
where the previous cycle stopped: a full pass over ``T`` tables takes about
``(T/100 + P) / max_calls_per_s`` seconds, and HMS never sees more than
``max_calls_per_s`` calls per second from the detector.
What polling cannot see: data written into an existing partition without a
change to its name or to the table (events see those as ALTER_PARTITION/INSERT).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from catalogd.admin.handlers import RuntimeInfo
from catalogd.core import plans
from catalogd.core.catalog import Catalog
from catalogd.freshness.operations import Operations
from catalogd.freshness.table_loader import TableLoader
from subscriber.protocol import codec
from subscriber.protocol.errors import CatalogError, NotFoundError, UnavailableError
from subscriber.protocol.keys import table_key

log = logging.getLogger(__name__)

_TABLE_EVENTS = {
    "CREATE_TABLE",
    "ALTER_TABLE",
    "DROP_TABLE",
    "ADD_PARTITION",
    "DROP_PARTITION",
    "ALTER_PARTITION",
    "INSERT",
}
_DB_EVENTS = {"CREATE_DATABASE", "DROP_DATABASE", "ALTER_DATABASE"}


@dataclass
class DetectorStats:
    cycles: int = 0
    events: int = 0
    duplicate_events: int = 0
    late_events: int = 0
    event_gaps: int = 0
    hms_calls: int = 0
    reloads: int = 0
    fingerprinted: int = 0
    mode: str = "off"
    last_cycle_s: float = 0.0
    last_event_id: int = 0
    errors: int = 0
    reloaded: list[str] = field(default_factory=list)


class _Budget:
    """At most ``rate`` calls per second, by sleeping before a call when ahead."""

    def __init__(
        self, rate: float, clock: Callable[[], float], sleep: Callable[[float], None]
    ) -> None:
        self._interval = 1.0 / rate if rate > 0 else 0.0
        self._next = 0.0
        self._clock, self._sleep = clock, sleep

    def spend(self, calls: int = 1) -> None:
        now = self._clock()
        if self._next > now:
            self._sleep(self._next - now)
        self._next = max(self._next, now) + calls * self._interval


class ChangeDetector:
    """Keeps the catalog in step with HMS without anyone typing a command.

    Args:
        mode: ``"auto"`` (events when the HMS logs any, else polling),
            ``"events"``, ``"poll"`` or ``"off"``.
        start_event_id: the HMS event id read *before* the initial load, so
            nothing committed in between is missed.
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
        self._late_s = event_late_s
        # Ids read in the last event_late_s: when first read, and the events handled.
        self._first_read: dict[int, float] = {}
        self._handled: dict[int, set[int]] = {}
        self._budget = _Budget(max_calls_per_s, clock, sleep)
        self._max_calls_per_s = max_calls_per_s
        self._cursor = 0  # where the next fingerprint pass starts
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
        while not self._stop.wait(self.interval_s):
            self.run_once()
            if self.privileges_interval_s and self._clock() >= self._privileges_due:
                # HMS logs no events for grants and roles: they are always polled.
                self._privileges_due = self._clock() + self.privileges_interval_s
                try:
                    self.ops.load_privileges()
                except CatalogError as exc:
                    log.warning("reloading privileges failed: %s", exc)

    # -- one cycle --------------------------------------------------------------------

    def run_once(self) -> None:
        """One detection cycle; never raises (errors are logged and counted)."""
        started = self._clock()
        try:
            if self._use_events():
                self.stats.mode = self.info.detector = "events"
                self._events_cycle()
            else:
                self.stats.mode = self.info.detector = "poll"
                self._poll_cycle()
            if not self.info.hms_healthy:
                log.info("Hive Metastore at %s recovered", self.info.hms_address)
            self.info.hms_healthy, self.info.hms_error = True, None
        except UnavailableError as exc:
            self.stats.errors += 1
            if self.info.hms_healthy:
                log.warning("Hive Metastore unreachable; serving the last catalog: %s", exc)
            self.info.hms_healthy, self.info.hms_error = False, str(exc)
        except Exception:  # noqa: BLE001 - the detector must keep running
            self.stats.errors += 1
            log.exception("change detection cycle failed")
        self.stats.cycles += 1
        self.stats.last_cycle_s = self._clock() - started

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        self._budget.spend()
        self.stats.hms_calls += 1
        return fn(*args)

    def _use_events(self) -> bool:
        if self.mode in ("events", "poll"):
            return self.mode == "events"
        client = getattr(self.ops.source(), "client", None)
        if client is None:
            return False
        return (
            self.stats.last_event_id > 0 or self._call(client.get_current_notification_event_id) > 0
        )

    # -- events -------------------------------------------------------------------------

    def _events_cycle(self) -> None:
        client = self.ops.source().client  # type: ignore[attr-defined]
        last, now = self.stats.last_event_id, self._clock()
        events = self._call(client.get_next_notification, last, self._event_batch)
        recent = [i for i, t in self._first_read.items() if t >= now - self._late_s and i <= last]
        if recent:
            behind = self._call(client.get_next_notification, min(recent) - 1, self._event_batch)
            events = [e for e in behind if e.eventId <= last] + events
        fresh: list[tuple[Any, int]] = []
        in_batch: set[int] = set()
        for event in events:
            identity = _identity(event)
            handled = self._handled.get(event.eventId, set())
            if identity in handled or identity in in_batch:
                if event.eventId > last:  # a re-read of the window is no duplicate
                    self.stats.duplicate_events += 1
                continue
            if handled or event.eventId <= last:
                self.stats.late_events += 1  # another event under an id already read
            in_batch.add(identity)
            fresh.append((event, identity))
        if fresh:
            self._apply_events(last, [event for event, _ in fresh])
        # Only now (nothing raised): these count as handled, and reading moves on.
        for event, identity in fresh:
            self._handled.setdefault(event.eventId, set()).add(identity)
            self._first_read.setdefault(event.eventId, now)
        for event_id in [i for i, t in self._first_read.items() if t < now - self._late_s]:
            del self._first_read[event_id]
            self._handled.pop(event_id, None)
        self.stats.last_event_id = max([last, *(e.eventId for e in events)])

    def _apply_events(self, last: int, fresh: list[Any]) -> None:
        """Reload what ``fresh`` events (read after id ``last``) name; raises on HMS errors."""
        fresh.sort(key=lambda e: e.eventId)
        ahead = [e.eventId for e in fresh if e.eventId > last]
        if ahead and ahead[0] > last + 1 and last > 0:
            # Ids were skipped: those events expired (or were never readable).
            self.stats.event_gaps += 1
            log.warning(
                "HMS events %d..%d are gone; reloading by fingerprints", last + 1, ahead[0] - 1
            )
            self._poll_cycle()
        dbs: set[str] = set()
        tables: set[tuple[str, str]] = set()
        for event in fresh:
            self.stats.events += 1
            db = (event.dbName or "").lower()
            if event.eventType in _DB_EVENTS and db:
                dbs.add(db)
            elif event.eventType in _TABLE_EVENTS and db and event.tableName:
                tables.add((db, event.tableName.lower()))
                if event.eventType in ("CREATE_TABLE", "DROP_TABLE", "ALTER_TABLE"):
                    dbs.add(db)  # names may have changed (create, drop, rename)
        for db in sorted(dbs):
            self._relist(db)
        for db, table in sorted(tables):
            if db not in dbs or self._known(db, table):
                self._reload(db, table)

    # -- polling ------------------------------------------------------------------------

    def _poll_cycle(self) -> None:
        """Names of everything first (cheap: ``1 + D`` calls, so creates and drops
        show up within one interval), then fingerprints of as many tables as fit
        in one interval's call budget, resuming where the last cycle stopped."""
        source = self.ops.source()
        hms_dbs = {d.lower() for d in self._call(source.database_names)}
        ours = self.ops.server.submit(plans.databases_in).result()
        for db in sorted(ours - hms_dbs):
            self._relist(db)
        tables: list[tuple[str, str]] = []
        for db in sorted(hms_dbs):
            try:
                names = {t.lower() for t in self._call(source.table_names, db)}
            except NotFoundError:
                self._relist(db)
                continue
            known = self.ops.server.submit(functools.partial(plans.table_names_of, db=db)).result()
            if db not in ours or names != known:
                self._relist(db)
            tables.extend((db, t) for t in sorted(names & known))
        self._poll_fingerprints(tables)

    def _poll_fingerprints(self, tables: list[tuple[str, str]]) -> None:
        if not tables:
            return
        budget = max(100, int(self._max_calls_per_s * self.interval_s))
        start = self._cursor % len(tables)
        rotated = tables[start:] + tables[:start]
        spent = checked = 0
        while checked < len(rotated) and spent < budget:
            db = rotated[checked][0]
            # A contiguous run of one database (the rotation can wrap a database
            # around the end of the list, so stop at the first other one).
            batch_names = []
            for table_db, name in rotated[checked : checked + 100]:
                if table_db != db:
                    break
                batch_names.append(name)
            spent += self._poll_tables(db, batch_names)
            checked += len(batch_names)
        self._cursor = (start + checked) % len(tables)
        self.stats.fingerprinted += checked

    def _poll_tables(self, db: str, names: list[str]) -> int:
        """Compare one batch of tables with HMS; returns the HMS calls made."""
        source = self.ops.source()
        calls = 1
        tables = self._call(source.get_tables, db, names)
        state = _fingerprints(
            self.ops.server.submit(functools.partial(_catalog_state, db=db, names=names)).result()
        )
        for table in tables:
            name = table.tableName.lower()
            ours = state.get(name)
            if ours is None:  # a placeholder: the loader will read it
                continue
            ddl_time, partitions = ours
            if (table.parameters or {}).get("transient_lastDdlTime") != ddl_time:
                self._reload(db, name)
                continue
            if table.partitionKeys:
                calls += 1
                names_now = set(self._call(source.partition_names, db, name))
                if names_now != partitions:
                    self._refresh_partitions(db, name, sorted(names_now ^ partitions))
        return calls

    # -- actions --------------------------------------------------------------------------

    def _relist(self, db: str) -> None:
        try:
            self.ops.load_names(db)
        except NotFoundError:
            log.info("database %s dropped", db)
        self.loader.enqueue_unloaded(db)
        self.stats.reloaded.append(f"db {db}")

    def _reload(self, db: str, table: str) -> None:
        self.stats.reloads += 1
        self.stats.reloaded.append(f"{db}.{table}")
        try:
            self.ops.load_table(db, table)
        except NotFoundError:
            log.info("table %s.%s dropped", db, table)
        except CatalogError as exc:
            if isinstance(exc, UnavailableError):
                raise
            log.warning("reloading %s.%s failed: %s", db, table, exc)

    def _refresh_partitions(self, db: str, table: str, names: list[str]) -> None:
        self.stats.reloads += 1
        self.stats.reloaded.append(f"{db}.{table} ({len(names)} partitions)")
        try:
            self.ops.refresh_partitions(db, table, names)
        except NotFoundError:
            log.info("table %s.%s dropped", db, table)

    def _known(self, db: str, table: str) -> bool:
        return bool(self.ops.server.submit(lambda c: c.table_keys(db, table)).result())


def _identity(event: Any) -> int:
    """What tells apart two events that HMS logged under one id."""
    return hash(
        (
            event.eventId,
            event.eventTime,
            event.eventType,
            event.dbName,
            event.tableName,
            event.message,
        )
    )


def _catalog_state(
    catalog: Catalog, db: str, names: list[str]
) -> dict[str, tuple[bytes, set[str]]]:
    """For loaded tables: (encoded header, partition names), read on the server thread."""
    result = {}
    for name in names:
        entry = catalog.get(table_key(db, name)) or catalog.get(table_key(db, name, view=True))
        if entry is None or entry.payload is None or plans.is_placeholder(catalog, db, name):
            continue
        prefix_len = len(f"HDFS_PARTITION:{db}.{name}:")
        result[name] = (entry.payload, {k[prefix_len:] for k in catalog.partition_keys(db, name)})
    return result


def _fingerprints(
    state: dict[str, tuple[bytes, set[str]]],
) -> dict[str, tuple[str | None, set[str]]]:
    """(transient_lastDdlTime, partition names) per table, decoded off the server thread."""
    result = {}
    for name, (payload, partitions) in state.items():
        table = codec.decode_object(payload).table
        params = (table.metastore_table.parameters or {}) if table.metastore_table else {}
        result[name] = (params.get("transient_lastDdlTime"), partitions)
    return result
