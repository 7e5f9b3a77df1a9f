"""catalogd learns HMS's row order of each database's tables, for every HMS endpoint.

What is learnt and how an endpoint uses it: :mod:`catalogd.core.table_orders`. One
thread (``catalogd-orders``) runs a cycle every ``interval_s``: one submission asks
the catalog which databases changed since the last cycle and could be ordered
(every table loaded, 2 to :data:`~catalogd.core.table_orders.MAX_TABLES` of them);
for each whose published order is not for its tables now, it asks HMS
``get_table_objects_by_name`` of all of them (sorted names; HMS's order depends on
the set asked, not on the order of the list) and commits the order of the answer
(:func:`~catalogd.core.table_orders.plan`: nothing when a table changed meanwhile).

An answer teaches nothing when its rows are not exactly the catalog's tables (the
catalog is behind HMS: learnt again once it catches up) or when HMS logged an event
on that database while it was read (read again next cycle; events on other databases,
which a busy HMS logs all the time, do not count: at most :data:`MAX_EVENTS` of them
are read to tell).

HMS's order can also change with no change to the tables (its database's plan for
the query changes with its statistics), so an order is read again once it is
``reverify_s`` (10 minutes) old, one database per cycle, when the cost bound allows and
nothing changed is waiting: an order never lags its tables' own changes by more than
about a cycle, nor HMS's plan by much more than ``reverify_s``.

Cost on HMS: one read of a changed database's tables whole (plus two cheap
``get_current_notificationEventId`` calls); after each, the next waits ``cost_factor``
(10) times as long as it took, so learning keeps at most ~1/10 of one HMS handler busy
whatever the rate of changes (databases left waiting are learnt in later cycles). The
server thread: one submission per cycle, at most
:data:`~catalogd.core.table_orders.BUDGET` catalog keys looked at.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from catalogd.core import table_orders
from catalogd.hms.client import MetastoreClient
from catalogd.writes.operations import Operations
from subscriber.protocol.errors import CatalogError, NotFoundError

log = logging.getLogger(__name__)

COST_FACTOR = 10.0
"""After an HMS read, the next waits this many times as long as it took."""
FAILED_WAIT_S = 10.0
"""After HMS failed to answer, it is asked again no sooner than this."""
MAX_EVENTS = 100
"""More events than this logged during one read: assume one was on the database."""
REVERIFY_S = 600.0
"""An order learnt this long ago is read again (HMS's plan may have changed)."""


@dataclass
class LearnerStats:
    """What the learner did (written by its thread; tests and status read them)."""

    cycles: int = 0
    hms_calls: int = 0
    learnt: int = 0
    """Orders published (or, read again, found unchanged)."""
    behind: int = 0
    """Answers whose tables were not the catalog's (the catalog was behind HMS)."""
    raced: int = 0
    """Answers read while HMS logged an event on the database, or committed after a
    table changed."""
    reverified: int = 0
    """Orders read again because they were old (HMS's plan may have changed)."""
    errors: int = 0


class TableOrderLearner:
    """See the module docstring.

    Args:
        ops: the catalog operations (reads and commits go through its server).
        client_factory: makes this thread's HMS client (a Thrift HMS: an SQL source
            does not see HMS's order).
        interval_s: seconds between cycles.
        max_tables: databases with more tables and views are not learnt.
        cost_factor: after an HMS read, the next waits this many times as long.
        reverify_s: an order learnt this long ago is read again.
    """

    def __init__(
        self,
        ops: Operations,
        client_factory: Callable[[], MetastoreClient],
        *,
        interval_s: float = 1.0,
        max_tables: int = table_orders.MAX_TABLES,
        cost_factor: float = COST_FACTOR,
        reverify_s: float = REVERIFY_S,
    ) -> None:
        self._ops = ops
        self._factory = client_factory
        self._client: MetastoreClient | None = None
        self._interval = interval_s
        self._max_tables = max_tables
        self._since = 0
        self._seen: dict[str, int] = {}  # database -> its newest change already looked at
        self._cost_factor = cost_factor
        self._next_read = 0.0  # monotonic time before which HMS is not read again
        self._reverify_s = reverify_s
        self._learnt_at: dict[str, float] = {}  # database -> when its order was last read
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.stats = LearnerStats()

    def start(self) -> TableOrderLearner:
        self._thread = threading.Thread(target=self._run, name="catalogd-orders", daemon=True)
        self._thread.start()
        return self

    def close(self, timeout: float = 2.0) -> None:
        """Stop; a cycle stuck on an unanswering HMS is left behind (a daemon thread)
        after ``timeout`` rather than holding up shutdown."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return
        if self._client is not None:
            self._client.close()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.run_once()
            except CatalogError as exc:  # HMS down, catalog closing: next cycle
                self.stats.errors += 1
                log.debug("learning table orders: %s", exc)
            except Exception:  # a bug must not end the thread silently
                self.stats.errors += 1
                log.exception("learning table orders failed")

    def run_once(self) -> None:
        """One cycle (tests call it directly)."""
        self.stats.cycles += 1
        scan = self._ops.order_candidates(self._since, self._seen, self._max_tables)
        wanted = [c for c in scan.found if table_orders.needs_learning(c)]
        # Looked at for good: what needs no learning now, and each order once learnt (an
        # error leaves the rest to be looked at again).
        names = {c.db for c in wanted}
        self._seen.update((db, v) for db, v in scan.examined.items() if db not in names)
        again = not scan.complete
        for candidate in wanted:
            if time.monotonic() < self._next_read or not self._learn(candidate):
                again = True
            else:
                self._seen[candidate.db] = scan.examined[candidate.db]
        if not again:
            self._since = scan.version
            self._reverify()

    def _reverify(self) -> None:
        """Read the oldest order again once it is ``reverify_s`` old."""
        now = time.monotonic()
        if not self._learnt_at or now < self._next_read:
            return
        db, at = min(self._learnt_at.items(), key=lambda item: item[1])
        if now - at < self._reverify_s:
            return
        del self._learnt_at[db]  # gone, or no order to learn: forgotten until it changes
        candidate = self._ops.order_candidate(db, self._max_tables)
        if candidate is not None:
            self.stats.reverified += 1
            if not self._learn(candidate):
                self._learnt_at[db] = at  # read again next cycle

    def _learn(self, candidate: table_orders.Candidate) -> bool:
        """Ask HMS and commit; False when it should be asked again."""
        if self._client is None:
            self._client = self._factory()
        client, db = self._client, candidate.db
        started = time.monotonic()
        self._next_read = started + FAILED_WAIT_S  # unless it answers
        self.stats.hms_calls += 3
        event = client.get_current_notification_event_id()
        try:
            tables = client.get_table_objects_by_name(db, sorted(candidate.tables))
        except NotFoundError:  # dropped meanwhile: its removal is a change of its own
            return True
        last = client.get_current_notification_event_id()
        moved = last != event and self._touched(client, db, event, last)
        took = time.monotonic() - started
        self._next_read = started + self._cost_factor * took
        names = [(t.tableName or "").lower() for t in tables]
        if moved:
            self.stats.raced += 1
            return False
        if len(names) != len(candidate.tables) or set(names) != set(candidate.tables):
            self.stats.behind += 1
            return True  # learnt again once the catalog's tables change
        if not self._ops.publish_table_order(db, names, candidate.tables):
            self.stats.raced += 1
            return False
        self.stats.learnt += 1
        self._learnt_at[db] = time.monotonic()
        return True

    def _touched(self, client: MetastoreClient, db: str, first: int, last: int) -> bool:
        """Whether HMS logged an event on ``db`` after id ``first`` up to ``last``."""
        if not 0 < last - first <= MAX_EVENTS:
            return True
        self.stats.hms_calls += 1
        events = client.get_next_notification(first, last - first)
        return any((e.dbName or "").lower() == db for e in events)
