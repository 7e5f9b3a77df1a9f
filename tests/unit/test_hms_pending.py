"""Pending objects of the HMS endpoint (read-your-writes without waiting): the pure rules.

An object a write touched is pending until catalogd answers its newest reload
ticket with a version and the view served is at that version; or until the bound.
Covers: which reads a pending object holds back, clearing by confirmed version,
superseded tickets (the rename race that an earlier "clear on any change" rule
lost), unconfirmed reloads, expiry, overflow, a property test over every
interleaving of writes, answers and reads, and that every read the endpoint
serves from the cache is known to :func:`read_of`.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import idl
from subscriber.cache import CacheView
from subscriber.metastore import pending
from subscriber.metastore.answers import CacheAnswers
from subscriber.metastore.counters import EndpointStats
from subscriber.metastore.pending import DATABASES, EVERYTHING, Pending, Read, read_of
from subscriber.metastore.readback import ReadBack
from subscriber.metastore.writes import ALL_DATABASES, Target
from subscriber.reads import ObjectDecoder

svc = idl.hive_metastore.ThriftHiveMetastore
BOUND = 10.0
V0 = 100  # the cache's version when the tests mark


def marked(*targets: Target, now: float = 0.0, limit: int = 1024) -> Pending:
    """Pending with ``targets`` marked at ``now``, tickets 1, 2, ... in order."""
    p = Pending(BOUND, limit)
    assert p.add(V0, {t: n for n, t in enumerate(targets, 1)}, now)
    return p


# -- which reads a pending object holds back ------------------------------------------------

TABLE_T = Read("a", ("t",))
CASES = [
    # (pending target, read, pending?)
    (Target("a", "t"), TABLE_T, True),
    (Target("a", "t"), Read("a", ("u",)), False),
    (Target("a", "t"), Read("a", ("u", "t")), True),  # get_table_objects_by_name
    (Target("a", "t"), Read("a", None), True),  # the listing of a
    (Target("a", "t"), Read("a", ()), False),  # get_database(a), functions of a
    (Target("a", "t"), Read("b", ("t",)), False),  # same name, other database
    (Target("a", "t"), Read("b", None), False),
    (Target("a", "t"), DATABASES, False),
    (Target("a", "t"), EVERYTHING, True),
    (Target("a"), TABLE_T, True),  # dropped database: its tables too
    (Target("a"), Read("a", ()), True),
    (Target("a"), Read("a", None), True),
    (Target("a"), DATABASES, True),  # database list, get_all_functions
    (Target("a"), Read("b", ("t",)), False),
    (Target("a"), Read("b", None), False),
    (Target("a"), EVERYTHING, True),
    (Target("c", "new"), Read("c", None), True),  # a table in a database not cached yet
    (Target("c"), DATABASES, True),  # a database created
]


@pytest.mark.parametrize(("target", "read", "expected"), CASES)
def test_a_pending_object_holds_back_exactly_the_reads_that_can_show_it(
    target: Target, read: Read, expected: bool
) -> None:
    p = marked(target)
    assert p.is_pending(V0, read, now=1.0) is expected
    assert len(p) == 1  # still pending either way: catalogd has not answered


def test_nothing_pending_holds_nothing_back() -> None:
    p = Pending(BOUND)
    assert not p and len(p) == 0
    assert not p.is_pending(V0, EVERYTHING, now=0.0)
    assert p.add(V0, {}, now=0.0) and not p


# -- clearing by the version catalogd confirmed -----------------------------------------------


def test_an_object_clears_once_the_view_reaches_the_confirmed_version() -> None:
    p = marked(Target("a", "t"))
    assert p.is_pending(V0 + 50, TABLE_T, now=1.0)  # cache moved, catalogd did not answer
    p.loaded(1, V0 + 3)
    assert p.is_pending(V0 + 2, TABLE_T, now=1.5)  # an older view: not yet
    assert not p.is_pending(V0 + 3, TABLE_T, now=2.0)
    assert len(p) == 0 and p.take_expired() == [] and p.take_cleared() == [2.0]


def test_a_reload_that_changed_nothing_clears_at_once() -> None:
    """catalogd answers with its current version: the view may already be there."""
    p = marked(Target("a", "t"))
    p.loaded(1, V0)
    assert not p.is_pending(V0, TABLE_T, now=0.1)


def test_a_superseded_ticket_clears_nothing() -> None:
    """The rename race: create t (ticket 1), rename t -> u (ticket 2 for t). The
    create's reload may have read HMS before the rename and be published later; its
    answer must not clear t, only the rename's reload may."""
    t = Target("a", "t")
    p = marked(t, now=0.0)
    assert p.add(V0, {t: 2}, now=1.0)
    assert len(p) == 1
    p.loaded(1, V0 + 1)  # the create's reload: t exists (stale)
    assert p.is_pending(V0 + 1, TABLE_T, now=2.0)
    assert p.is_pending(V0 + 1, Read("a", None), now=2.0)  # the listing too
    p.loaded(2, V0 + 2)  # the rename's reload: t gone
    assert not p.is_pending(V0 + 2, TABLE_T, now=3.0)
    assert p.take_cleared() == [3.0]


def test_marking_again_after_an_answer_waits_for_the_new_one() -> None:
    t = Target("a", "t")
    p = marked(t)
    p.loaded(1, V0 + 1)
    assert p.add(V0, {t: 2}, now=1.0)  # before any read saw it cleared
    assert p.is_pending(V0 + 1, TABLE_T, now=1.0)
    p.loaded(2, V0 + 4)
    assert p.is_pending(V0 + 3, TABLE_T, now=1.0)
    assert not p.is_pending(V0 + 4, TABLE_T, now=1.0)


def test_an_unconfirmed_reload_waits_for_the_bound() -> None:
    p = marked(Target("a", "t"), now=0.0)
    p.loaded(1, None)  # failed, or the session ended
    assert p.is_pending(V0 + 1000, TABLE_T, now=BOUND - 0.001)
    assert not p.is_pending(V0 + 1000, TABLE_T, now=BOUND)
    assert p.take_expired() == [Target("a", "t")]


def test_answers_to_unknown_or_cleared_tickets_are_ignored() -> None:
    p = marked(Target("a", "t"))
    p.loaded(99, V0)
    p.loaded(1, V0)
    assert not p.is_pending(V0, TABLE_T, now=0.0)
    p.loaded(1, V0 + 1)  # again, after it cleared
    assert len(p) == 0


# -- expiry ---------------------------------------------------------------------------------------


def test_after_the_bound_it_is_served_again_and_reported_once() -> None:
    p = marked(Target("a", "t"), now=100.0)
    assert p.is_pending(V0, TABLE_T, now=100.0 + BOUND - 0.001)
    assert not p.is_pending(V0, TABLE_T, now=100.0 + BOUND)
    assert p.take_expired() == [Target("a", "t")]
    assert not p.is_pending(V0, TABLE_T, now=200.0)
    assert p.take_expired() == [] and len(p) == 0


def test_marking_again_restarts_the_bound() -> None:
    t = Target("a", "t")
    p = marked(t, now=0.0)
    assert p.add(V0, {t: 2}, now=8.0)
    assert p.is_pending(V0, TABLE_T, now=12.0)  # past the first bound
    assert not p.is_pending(V0, TABLE_T, now=18.0)


def test_adding_drops_what_cleared_or_expired_meanwhile() -> None:
    p = marked(Target("a", "t"), Target("a", "u"), Target("b"), now=0.0)
    p.loaded(1, V0 + 1)
    assert p.add(V0 + 1, {Target("b", "t"): 4}, now=5.0)
    assert len(p) == 3 and p.take_cleared() == [5.0]
    assert p.add(V0 + 1, {}, now=5.0) and len(p) == 3  # nothing marked: nothing pruned
    assert p.add(V0 + 1, {Target("b", "t"): 5}, now=11.0)
    assert len(p) == 1  # a.u and b expired, b.t marked again
    assert sorted(p.take_expired(), key=str) == [Target("a", "u"), Target("b")]


# -- overflow -------------------------------------------------------------------------------------


def test_past_the_limit_every_read_is_pending_until_the_bound() -> None:
    p = marked(Target("a", "t"), Target("a", "u"), limit=3)
    assert p.add(V0, {Target("b", "t"): 3}, now=1.0)  # 3: fits
    assert p.add(V0, {Target("b", "t"): 4}, now=1.0)  # the same again: still 3
    assert not p.add(V0, {Target("c", "x"): 5}, now=2.0)
    assert p.overflowed
    for read in (DATABASES, Read("z", ()), Read("z", None), Read("b", ("zz",)), EVERYTHING):
        assert p.is_pending(V0, read, now=2.0 + BOUND - 0.001)
    # Whatever is confirmed meanwhile, the dropped object cannot be watched.
    for ticket in (1, 2, 4, 5):
        p.loaded(ticket, V0)
    assert p.is_pending(V0, Read("z", None), now=3.0)
    assert not p.is_pending(V0, Read("z", None), now=2.0 + BOUND)
    assert not p.overflowed and p.take_expired() == [ALL_DATABASES]
    assert not p.is_pending(V0, EVERYTHING, now=2.0 + BOUND)


def test_an_overflow_is_extended_by_the_next_one() -> None:
    p = Pending(BOUND, limit=1)
    many = {Target("a", "t"): 1, Target("a", "u"): 2}
    assert not p.add(V0, many, now=0.0)
    assert not p.add(V0, many, now=5.0)
    assert p.is_pending(V0, DATABASES, now=BOUND + 1)
    assert not p.is_pending(V0, DATABASES, now=BOUND + 5)


# -- every interleaving ---------------------------------------------------------------------------

OBJECTS = [Target("a", "t"), Target("a", "u"), Target("a")]
Step = tuple[str, int]
steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, 2)),  # a write to OBJECTS[i]
        st.tuples(st.just("answer"), st.integers(0, 20)),  # catalogd answers the i-th reload
        st.tuples(st.just("apply"), st.integers(0, 20)),  # the cache applies through answer i
        st.tuples(st.just("tick"), st.integers(1, 4)),  # seconds pass
    ),
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(steps)
def test_a_read_is_never_served_before_the_reload_after_the_last_write_shows(
    script: list[Step],
) -> None:
    """A model: reload n is answered with version V0 + n (catalogd's versions grow in
    the order reloads finish; here answers may come in any order). An object may be
    served from the cache only when the view has reached the version of the reload
    asked after its last write, or the bound passed since that write."""
    p = Pending(BOUND)
    now, version, ticket = 0.0, V0, 0
    last: dict[Target, tuple[int, float]] = {}  # object -> (ticket of its last write, when)
    answered: dict[int, int] = {}
    for kind, n in script:
        if kind == "write":
            ticket += 1
            last[OBJECTS[n]] = (ticket, now)
            assert p.add(version, {OBJECTS[n]: ticket}, now)
        elif kind == "answer" and 1 <= n <= ticket and n not in answered:
            answered[n] = V0 + n
            p.loaded(n, V0 + n)
        elif kind == "apply":
            version = max(version, V0 + min(n, ticket))
        elif kind == "tick":
            now += n
        for target, (t, when) in last.items():
            read = Read(target.db, (target.table,) if target.table else ())
            shown = t in answered and version >= answered[t]
            if not shown and now < when + BOUND:
                assert p.is_pending(version, read, now), (target, t, version, answered)


# -- what each cached read names -----------------------------------------------------------------


def test_every_read_the_cache_answers_says_what_it_can_show() -> None:
    assert CacheAnswers(ObjectDecoder()).methods == pending.READ_METHODS


READS = [
    ("get_all_databases", {}, DATABASES),
    ("get_databases", {"pattern": "*"}, DATABASES),
    ("get_database", {"name": "A"}, Read("a", ())),
    ("get_database", {"name": "@hive#A"}, Read("a", ())),
    ("get_all_tables", {"db_name": "A"}, Read("a", None)),
    ("get_tables", {"db_name": "a", "pattern": "x*"}, Read("a", None)),
    ("get_table", {"dbname": "A", "tbl_name": "T"}, Read("a", ("t",))),
    ("get_table", {"dbname": None, "tbl_name": "t"}, EVERYTHING),
    ("get_table_objects_by_name", {"dbname": "a", "tbl_names": ["T", "u"]}, Read("a", ("t", "u"))),
    ("get_fields", {"db_name": "a", "table_name": "t"}, Read("a", ("t",))),
    ("get_schema_with_environment_context", {"db_name": "a", "table_name": "t"}, TABLE_T),
    ("get_partitions", {"db_name": "a", "tbl_name": "t", "max_parts": -1}, TABLE_T),
    ("get_partition_names_ps", {"db_name": "a", "tbl_name": "T", "part_vals": ["1"]}, TABLE_T),
    ("get_partition_by_name", {"db_name": "a", "tbl_name": "t", "part_name": "p=1"}, TABLE_T),
    ("get_partitions_by_filter", {"db_name": "a", "tbl_name": "t", "filter": ""}, TABLE_T),
    ("get_all_functions", {}, DATABASES),
    ("get_functions", {"dbName": "A", "pattern": "*"}, Read("a", ())),
    ("get_function", {"dbName": "a", "funcName": "f"}, Read("a", ())),
    ("get_table_req", {"req": None}, EVERYTHING),
    ("no_such_read", {}, EVERYTHING),
]


@pytest.mark.parametrize(("name", "args", "expected"), READS)
def test_read_of_names_the_objects_a_read_can_show(
    name: str, args: dict[str, Any], expected: Read
) -> None:
    spec = getattr(svc, f"{name}_args", None)
    assert read_of(name, spec(**args) if spec else object()) == expected


def test_request_reads_name_their_tables() -> None:
    hms = idl.hive_metastore
    req = svc.get_table_req_args(req=hms.GetTableRequest(dbName="A", tblName="T"))
    assert read_of("get_table_req", req) == TABLE_T
    every = hms.GetTablesRequest(dbName="a", tblNames=None)
    assert read_of(
        "get_table_objects_by_name_req", svc.get_table_objects_by_name_req_args(req=every)
    ) == Read("a", None)


# -- the endpoint's wrapper ---------------------------------------------------------------------


def FakeView(version: int) -> CacheView:  # noqa: N802 - reads as a type
    """An empty view at ``version`` (ReadBack reads only the version)."""
    return CacheView("svc", version)


def test_readback_reloads_marks_clears_on_answer_and_warns_once_on_expiry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    reloads: list[tuple[str, str | None, Any]] = []
    stats = EndpointStats()
    rb = ReadBack(
        3.0, stats, ("a",), lambda db, t, done: reloads.append((db, t, done)), clock=lambda: now[0]
    )
    view = FakeView(V0)
    args = svc.get_table_args(dbname="a", tbl_name="t")
    assert not rb.is_pending(view, "get_table", args)
    targets = (Target("a", "t"), Target("b", "t"), Target("a", guess=True))
    reloaded = rb.mark("alter_table", targets, view)
    assert reloaded == (Target("a", "t"), Target("a", guess=True))  # b not followed
    assert [(db, t) for db, t, _ in reloads] == [("a", "t"), ("a", None)]
    assert stats.pending_marked == 1  # the guess is reloaded, never pending
    now[0] = 2.9
    assert rb.is_pending(view, "get_table", args)
    now[0] = 3.0
    with caplog.at_level(logging.WARNING, logger="subscriber.metastore.readback"):
        assert not rb.is_pending(view, "get_table", args)  # t=3: the bound passed
        assert not rb.is_pending(view, "get_table", args)
    assert [r.getMessage() for r in caplog.records if "did not confirm" in r.getMessage()] == [
        "HMS endpoint: catalogd did not confirm the reload of a.t after a write within 3s "
        "(the reload failed or is slow); serving it from the cache again"
    ]
    assert stats.write_waits_timed_out == 1
    # Marked again; a stale read of a table already pending asks nothing more.
    rb.mark("alter_table", (Target("a", "t"),), view)
    assert rb.mark("get_table", (Target("a", "t"),), view, stale=True) == ()
    reloads[0][2](V0 + 1)  # the first, superseded reload's answer: ignored
    reloads[-1][2](None)  # the guess's answer: nothing to clear
    reloads.clear()
    assert rb.is_pending(FakeView(V0 + 1), "get_table", args)
    rb.mark("alter_table", (Target("a", "t"),), view)
    reloads[-1][2](V0 + 2)
    now[0] = 3.5
    assert rb.is_pending(FakeView(V0 + 1), "get_table", args)
    assert not rb.is_pending(FakeView(V0 + 2), "get_table", args)
    assert stats.pending_cleared == 1 and stats.pending_seconds == 0.5


def test_an_unconfirmed_reload_is_counted() -> None:
    reloads: list[Any] = []
    stats = EndpointStats()
    rb = ReadBack(3.0, stats, None, lambda db, t, done: reloads.append(done))
    rb.mark("drop_table", (Target("a", "t"),), FakeView(V0))
    reloads[0](None)
    assert stats.pending_unconfirmed == 1


def test_a_grant_write_makes_privilege_reads_pending_until_its_reload_shows() -> None:
    """Grant and role writes touch the grants (``writes.PRIVILEGES``, database "")."""
    args = idl.hive_metastore.ThriftHiveMetastore.list_privileges_args(principal_name="u")
    read = read_of("list_privileges", args)
    assert read == read_of("get_privilege_set", None) == pending.PRIVILEGES
    p = marked(Target(""))
    assert p.is_pending(V0, read, now=0.1)
    assert not p.is_pending(V0, TABLE_T, now=0.1)  # a table's reads are not held
    p.loaded(1, V0 + 1)
    assert p.is_pending(V0, read, now=0.2)
    assert not p.is_pending(V0 + 1, read, now=0.3)
