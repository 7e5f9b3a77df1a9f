"""The order learner's cycle (catalogd/freshness/order_learner.py) over a real catalog.

The catalog is real (an unstarted CatalogServer runs submissions in the caller); the
HMS client is a stand-in that answers in a given order, fails, or moves its event id,
so what each outcome leaves to the next cycle is checked without timing. Against a
real HMS: tests/integration/test_table_order_learning.py.
"""

from __future__ import annotations

from typing import Any

import pytest

import idl
from catalogd.conversion import objects as convert
from catalogd.core import table_orders
from catalogd.freshness.order_learner import TableOrderLearner
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.writes.operations import Operations
from subscriber.protocol import codec
from subscriber.protocol.errors import MetastoreUnavailableError
from subscriber.protocol.keys import database_key, table_key

hms = idl.hive_metastore


class StandIn:
    """Answers ``get_table_objects_by_name`` in ``order`` (only the names asked)."""

    def __init__(self, order: list[str]) -> None:
        self.order = order
        self.event = 1
        self.reads = 0
        self.fail = False
        self.move_event = False
        self.event_db = "D"  # the database each logged event is on
        self.events: list[Any] = []

    def get_current_notification_event_id(self) -> int:
        if self.move_event:
            self.event += 1
            self.events.append(hms.NotificationEvent(eventId=self.event, dbName=self.event_db))
        return self.event

    def get_next_notification(self, last_event: int, max_events: int) -> list[Any]:
        return [e for e in self.events if e.eventId > last_event][:max_events]

    def get_table_objects_by_name(self, db: str, names: list[str]) -> list[Any]:
        self.reads += 1
        if self.fail:
            raise MetastoreUnavailableError("HMS down")
        return [hms.Table(tableName=n, dbName=db) for n in self.order if n in names]

    def close(self) -> None:
        pass


@pytest.fixture
def ops() -> Operations:
    server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*"))
    ops = Operations(server, lambda: pytest.fail("no source needed"))
    database = hms.Database(name="d", description="", locationUri="file:/w")
    changes = {database_key("d"): codec.encode_object(convert.database_object(database))}
    changes.update({table_key("d", n): f"loaded {n}".encode() for n in ("a", "b", "c")})
    server.commit(changes).result()
    return ops


def _published(ops: Operations) -> list[str] | None:
    entry = ops.server.submit(lambda c: c.get(database_key("d"))).result()
    order = table_orders.order_of(entry.payload)
    return None if order is None else [name for name, _ in order]


def _learner(ops: Operations, hms_client: StandIn) -> TableOrderLearner:
    return TableOrderLearner(ops, lambda: hms_client, cost_factor=0)  # type: ignore[arg-type,return-value]


def test_learnt_once_then_nothing_until_a_table_changes(ops: Operations) -> None:
    client = StandIn(["c", "a", "b"])
    learner = _learner(ops, client)
    learner.run_once()
    assert _published(ops) == ["c", "a", "b"] and learner.stats.learnt == 1
    for _ in range(3):
        learner.run_once()
    assert client.reads == 1
    ops.server.commit({table_key("d", "a"): b"loaded a, altered"}).result()
    client.order = ["a", "c", "b"]
    learner.run_once()
    assert _published(ops) == ["a", "c", "b"] and client.reads == 2


def test_hms_down_leaves_the_database_for_the_next_cycle(ops: Operations) -> None:
    client = StandIn(["b", "a", "c"])
    client.fail = True
    learner = _learner(ops, client)
    with pytest.raises(MetastoreUnavailableError):
        learner.run_once()
    learner._next_read = 0.0  # noqa: SLF001 (skip the 10 s wait after a failure)
    client.fail = False
    learner.run_once()
    assert _published(ops) == ["b", "a", "c"]


def test_an_answer_read_while_hms_logged_an_event_on_it_is_read_again(ops: Operations) -> None:
    client = StandIn(["b", "c", "a"])
    client.move_event = True
    learner = _learner(ops, client)
    learner.run_once()
    assert _published(ops) is None and learner.stats.raced == 1
    client.move_event = False
    learner.run_once()
    assert _published(ops) == ["b", "c", "a"]


def test_events_on_other_databases_do_not_hold_learning_up(ops: Operations) -> None:
    """A busy HMS logs events all the time; only the database's own count."""
    client = StandIn(["b", "c", "a"])
    client.move_event, client.event_db = True, "other"
    learner = _learner(ops, client)
    learner.run_once()
    assert _published(ops) == ["b", "c", "a"] and learner.stats.raced == 0


def test_an_answer_with_other_tables_waits_for_the_catalog_to_catch_up(ops: Operations) -> None:
    client = StandIn(["b", "c"])  # HMS dropped "a"; the catalog has not seen it yet
    learner = _learner(ops, client)
    learner.run_once()
    assert _published(ops) is None and learner.stats.behind == 1
    learner.run_once()
    assert client.reads == 1  # not asked again until the catalog changes
    ops.server.commit({table_key("d", "a"): None}).result()  # catalogd catches up
    learner.run_once()
    assert _published(ops) == ["b", "c"]


def test_the_cost_bound_spaces_hms_reads(ops: Operations) -> None:
    client = StandIn(["a", "b", "c"])
    learner = TableOrderLearner(ops, lambda: client, cost_factor=1e6)  # type: ignore[arg-type,return-value]
    learner.run_once()
    ops.server.commit({table_key("d", "a"): b"loaded a, altered"}).result()
    learner.run_once()  # the next read must wait ~1e6 x the first one
    assert client.reads == 1
    learner._next_read = 0.0  # noqa: SLF001 (time passed)
    learner.run_once()
    assert client.reads == 2


def test_an_old_order_is_read_again_for_a_changed_plan(ops: Operations) -> None:
    """HMS's order can change with no change to the tables (its database's plan)."""
    client = StandIn(["c", "a", "b"])
    learner = TableOrderLearner(ops, lambda: client, cost_factor=0, reverify_s=0)  # type: ignore[arg-type,return-value]
    learner.run_once()
    assert _published(ops) == ["c", "a", "b"]
    client.order = ["b", "c", "a"]  # nothing in the catalog changed
    learner.run_once()
    assert _published(ops) == ["b", "c", "a"] and learner.stats.reverified >= 1
    slow = TableOrderLearner(ops, lambda: client, cost_factor=0)  # type: ignore[arg-type,return-value]
    slow.run_once()
    reads = client.reads
    client.order = ["a", "b", "c"]
    slow.run_once()  # learnt a moment ago: not read again for 10 minutes
    assert client.reads == reads and slow.stats.reverified == 0
