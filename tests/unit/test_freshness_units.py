"""Pure parts of change detection: the event window, the event plan, the call
budget and the fingerprint rotation, driven by a fake clock (no HMS, no threads)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from catalogd.freshness import messages
from catalogd.freshness.budget import CallBudget
from catalogd.freshness.events import EventWindow, apply_events, plan_events
from catalogd.freshness.polling import rotation

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Event:
    """The fields of an HMS ``NotificationEvent`` the window looks at."""

    eventId: int  # noqa: N815 - the Thrift field name
    eventType: str = "ALTER_TABLE"  # noqa: N815
    dbName: str | None = "db"  # noqa: N815
    tableName: str | None = "t"  # noqa: N815
    eventTime: int = 0  # noqa: N815
    message: str = '{"db": "db", "table": "t"}'
    messageFormat: str = "json-0.2"  # noqa: N815


def ids(events: list[Event]) -> list[int]:
    return [e.eventId for e in events]


# -- EventWindow -------------------------------------------------------------------------


def test_new_events_are_fresh_and_a_replay_of_them_is_a_duplicate() -> None:
    window = EventWindow(late_s=10)
    first = [Event(1), Event(2), Event(3)]
    selection = window.select(first, last=0)
    assert ids(selection.fresh) == [1, 2, 3]
    assert (selection.duplicates, selection.late) == (0, 0)
    window.record(selection.fresh, now=100.0)

    replay = window.select(first, last=0)  # read again from 0: a re-delivery
    assert replay.fresh == [] and replay.duplicates == 3 and replay.late == 0


def test_a_re_read_of_the_window_is_no_duplicate() -> None:
    window = EventWindow(late_s=10)
    window.record([Event(1), Event(2)], now=100.0)
    selection = window.select([Event(1), Event(2), Event(3)], last=2)
    assert ids(selection.fresh) == [3]
    assert (selection.duplicates, selection.late) == (0, 0)


def test_the_same_event_twice_in_one_batch_is_applied_once() -> None:
    selection = EventWindow(late_s=10).select([Event(5), Event(5)], last=4)
    assert ids(selection.fresh) == [5] and selection.duplicates == 1


def test_another_event_under_an_id_already_read_is_late() -> None:
    window = EventWindow(late_s=10)
    window.record([Event(7, tableName="a")], now=100.0)
    racing = Event(7, tableName="b")  # a racing writer logged it under the same id
    selection = window.select([Event(7, tableName="a"), racing], last=7)
    assert selection.fresh == [racing] and selection.late == 1 and selection.duplicates == 0
    # And an event committed late under an id below the last one read, never seen.
    late = window.select([Event(6)], last=7)
    assert ids(late.fresh) == [6] and late.late == 1


def test_reread_covers_ids_first_read_within_late_s_of_now() -> None:
    window = EventWindow(late_s=10)
    assert window.reread_after(last=0, now=100.0) is None  # nothing read yet
    window.record([Event(3)], now=100.0)
    window.record([Event(4), Event(5)], now=105.0)
    assert window.reread_after(last=5, now=106.0) == 2  # from just before id 3
    assert window.reread_after(last=5, now=112.0) == 3  # id 3 is older than late_s
    assert window.reread_after(last=4, now=112.0) == 3  # ids above last are not re-read
    assert window.reread_after(last=5, now=116.0) is None  # quiet for late_s: no call


def test_ids_expire_by_the_clock_passed_in() -> None:
    window = EventWindow(late_s=10)
    window.record([Event(1)], now=100.0)
    window.record([], now=110.0)  # exactly late_s later: still remembered
    assert len(window) == 1
    assert window.select([Event(1)], last=0).duplicates == 1
    window.record([], now=110.5)
    assert len(window) == 0
    # Forgotten: the same event is fresh again (the detector's last id prevents that).
    assert ids(window.select([Event(1)], last=0).fresh) == [1]


def test_the_first_read_time_of_an_id_is_kept() -> None:
    window = EventWindow(late_s=10)
    window.record([Event(1, tableName="a")], now=100.0)
    window.record([Event(1, tableName="b")], now=109.0)  # a late one under id 1
    window.record([], now=110.5)  # 10.5s after id 1 was first read
    assert len(window) == 0


@pytest.mark.parametrize("module", ["events", "messages"])
def test_events_modules_are_pure(module: str) -> None:
    tree = ast.parse((ROOT / f"catalogd/freshness/{module}.py").read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    roots = {name.split(".")[0] for name in imported - {"catalogd.freshness"}}
    assert roots & {"time", "threading", "zmq", "socket", "catalogd", "subscriber"} == set()


# -- plan_events and apply_events --------------------------------------------------------


def test_plan_relists_databases_and_reloads_tables_sorted() -> None:
    plan = plan_events(
        [
            Event(4, "ADD_PARTITION", "Sales", "Orders"),
            Event(2, "CREATE_TABLE", "hr", "people"),
            Event(3, "ALTER_DATABASE", "ops", None),
            Event(5, "CREATE_FUNCTION", "x", None),  # not ours
            Event(6, "INSERT", "", "t"),  # no database: ignored
        ],
        last=1,
    )
    assert plan.gap is None
    assert plan.dbs == ("hr", "ops")
    assert plan.tables == (("hr", "people"), ("sales", "orders"))


@pytest.mark.parametrize(
    ("last", "first_id", "gap"),
    [(10, 11, None), (10, 14, (11, 13)), (0, 14, None), (10, 9, None)],
)
def test_plan_finds_a_gap_before_the_first_new_id(
    last: int, first_id: int, gap: tuple[int, int] | None
) -> None:
    assert plan_events([Event(first_id), Event(first_id + 1)], last=last).gap == gap


class Recorder:
    def __init__(self, known: set[tuple[str, str]]) -> None:
        self.known_tables = known
        self.calls: list[str] = []

    def relist(self, db: str) -> None:
        self.calls.append(f"relist {db}")

    def databases(self) -> list[str]:
        return ["a", "b", "c"]

    def known(self, db: str, table: str) -> bool:
        return (db, table) in self.known_tables

    def reload(self, db: str, table: str) -> None:
        self.calls.append(f"reload {db}.{table}")


def test_apply_reloads_a_table_of_a_relisted_database_only_if_still_there() -> None:
    plan = plan_events(
        [
            Event(1, "CREATE_TABLE", "a", "gone"),
            Event(2, "DROP_TABLE", "a", "gone"),
            Event(3, "CREATE_TABLE", "a", "new"),
            Event(4, "ALTER_PARTITION", "b", "t"),
        ],
        last=0,
    )
    actions = Recorder(known={("a", "new")})
    apply_events(plan, actions)
    assert actions.calls == ["relist a", "reload a.new", "reload b.t"]


# An ALTER_TABLE message of a rename of a.t to b.t2, as HMS 4.0.1's
# GzipJSONMessageEncoder wrote it (run with jshell on the 4.0.1 jars), and the JSON
# HMS 2.3 logs for the same rename (shortened: the table objects left out).
GZIP_RENAME = (
    "H4sIAAAAAAAA/+WQwW7CMAyG38XnHBpGKfRWBJo2bWOH3pZpSosrZWpLlXigqcq7L2moBAOegJP/fL+t2H8PBvUe"
    "NaQAbNCqxHet2lJ1sg50W7gqnSBZ1Og0jTr/7fz7NXvLHterrzxbvqxHb1N8L7HaaXw2u9Y19QK4gNQVQ9oJASTA"
    "MgGTcyoDnQaqHrwdeRJfkNkFSQLRWAZxnKHqxoj1bB5YbdxC6cdxmkWf3lsEr5Fd8IYt2Vgj1tuhjf874iyRcBCf"
    "n37NrT0JKqsI9e2cJleDKu4oKGVy/dOWknDTuYwqWRv0+akGDcnGMZ4s4iRKZvGUwUErwqet3/sPLjDC8eACAAA="
)
JSON_RENAME = '{"server":"","servicePrincipal":"","db":"A","table":"T","tableObjBeforeJson":"{}"}'


@pytest.mark.parametrize(
    ("fmt", "message", "before"),
    [
        ("gzip(json-2.0)", GZIP_RENAME, ("a", "t")),
        ("json-0.2", JSON_RENAME, ("a", "t")),
        ("json-0.2", "{not json", messages.UNREADABLE),
        ("gzip(json-2.0)", "bm90IGd6aXA=", messages.UNREADABLE),  # base64, not gzip
        ("gzip(json-2.0)", GZIP_RENAME[:40], messages.UNREADABLE),  # truncated
        ("avro", "\x00\x01", messages.UNREADABLE),
        ("json-0.2", '{"db": "a"}', messages.UNREADABLE),
        ("json-0.2", "[1, 2]", messages.UNREADABLE),
    ],
)
def test_the_name_before_an_alter_is_read_from_json_and_gzip_json_messages(
    fmt: str, message: str, before: object
) -> None:
    event = Event(1, "ALTER_TABLE", "b", "t2", message=message, messageFormat=fmt)
    assert messages.table_before(event) == before


def test_a_rename_into_another_database_relists_both() -> None:
    event = Event(7, "ALTER_TABLE", "b", "t2", message=GZIP_RENAME, messageFormat="gzip(json-2.0)")
    plan = plan_events([event], last=6)
    assert plan.dbs == ("a", "b") and plan.tables == (("b", "t2"),)
    assert not plan.every_database
    actions = Recorder(known={("b", "t2")})
    apply_events(plan, actions)
    assert actions.calls == ["relist a", "relist b", "reload b.t2"]


def test_an_unreadable_alter_message_relists_every_database() -> None:
    plan = plan_events([Event(3, "ALTER_TABLE", "b", "t", message="?")], last=2)
    assert plan.every_database
    actions = Recorder(known=set())
    apply_events(plan, actions)
    assert actions.calls == ["relist a", "relist b", "relist c"]  # b.t gone: not reloaded


def test_a_gzip_bomb_is_unreadable_not_expanded() -> None:
    import base64
    import gzip

    bomb = base64.b64encode(gzip.compress(b"{" + b" " * (messages.MAX_MESSAGE_BYTES + 1))).decode()
    event = Event(1, "ALTER_TABLE", message=bomb, messageFormat="gzip(json-2.0)")
    assert messages.table_before(event) is messages.UNREADABLE


# -- CallBudget -----------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_budget_sleeps_only_when_ahead_of_the_rate() -> None:
    clock = FakeClock()
    budget = CallBudget(10, clock, clock.sleep)  # one call per 0.1s
    budget.spend()
    assert clock.slept == []
    budget.spend()
    assert clock.slept == [pytest.approx(0.1)]
    clock.now += 1.0  # idle for a while: no credit is saved up beyond now
    budget.spend()
    budget.spend()
    assert clock.slept == [pytest.approx(0.1), pytest.approx(0.1)]


def test_budget_counts_several_calls_at_once() -> None:
    clock = FakeClock()
    budget = CallBudget(10, clock, clock.sleep)
    budget.spend(5)
    budget.spend()
    assert clock.slept == [pytest.approx(0.5)]


def test_a_rate_of_zero_means_no_limit() -> None:
    clock = FakeClock()
    budget = CallBudget(0, clock, clock.sleep)
    for _ in range(1000):
        budget.spend()
    assert clock.slept == []


# -- rotation ---------------------------------------------------------------------------------


def test_rotation_starts_at_the_cursor_and_splits_batches_by_database() -> None:
    tables = [("a", "t1"), ("a", "t2"), ("b", "t1"), ("b", "t2"), ("b", "t3")]
    assert list(rotation(tables, cursor=3, batch=2)) == [
        ("b", ["t2", "t3"]),
        ("a", ["t1", "t2"]),
        ("b", ["t1"]),
    ]
    assert list(rotation(tables, cursor=5 + 1, batch=100)) == [
        ("a", ["t2"]),
        ("b", ["t1", "t2", "t3"]),
        ("a", ["t1"]),
    ]
    assert list(rotation([], cursor=7)) == []
