"""Pending objects of the HMS endpoint (read-your-writes without waiting): the pure rules.

Real cache views (:class:`~subscriber.cache.CatalogCache` applying deltas), a clock
passed in. Covers: which reads a pending object holds back, clearing on a change of
the cache, expiry after the bound, re-marking, overflow, and that every read the
endpoint serves from the cache is known to :func:`read_of`.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

import idl
from subscriber.cache import CacheView, CatalogCache
from subscriber.metastore import pending
from subscriber.metastore.answers import CacheAnswers
from subscriber.metastore.counters import EndpointStats
from subscriber.metastore.pending import DATABASES, EVERYTHING, Pending, Read, mark, read_of
from subscriber.metastore.readback import ReadBack
from subscriber.metastore.writes import ALL_DATABASES, Target
from subscriber.protocol.delta import Delta, Entry
from subscriber.protocol.keys import database_key, function_key, partition_key, table_key
from subscriber.reads import ObjectDecoder

svc = idl.hive_metastore.ThriftHiveMetastore
BOUND = 10.0


class World:
    """A cache of databases ``a`` (tables ``t`` partitioned, ``u``, view ``v``) and ``b``
    (table ``t``); :meth:`change` publishes one more version touching some keys."""

    def __init__(self) -> None:
        self.cache = CatalogCache(emit_events=False)
        self.version = 1
        keys = [
            database_key("a"),
            table_key("a", "t"),
            table_key("a", "u"),
            table_key("a", "v", view=True),
            partition_key("a", "t", "p=1"),
            function_key("a", "f", "sig"),
            database_key("b"),
            table_key("b", "t"),
        ]
        self.cache.install("svc", 1, [Entry(k, 1, b"x") for k in keys])

    @property
    def view(self) -> CacheView:
        return self.cache.view

    def change(self, *keys: str, removed: bool = False) -> CacheView:
        start = self.version
        self.version += 1
        entries = tuple(Entry(k, self.version, None if removed else b"y") for k in keys)
        self.cache.apply(Delta(start, self.version, entries))
        return self.view


@pytest.fixture
def world() -> World:
    return World()


def marked(world: World, *targets: Target, now: float = 0.0, limit: int = 1024) -> Pending:
    p = Pending(BOUND, limit)
    assert p.add(world.view, {t: mark(world.view, t) for t in targets}, now)
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
    world: World, target: Target, read: Read, expected: bool
) -> None:
    p = marked(world, target)
    assert p.is_pending(world.view, read, now=1.0) is expected
    assert len(p) == 1  # still pending either way: nothing changed in the cache


def test_nothing_pending_holds_nothing_back(world: World) -> None:
    p = Pending(BOUND)
    assert not p and len(p) == 0
    assert not p.is_pending(world.view, EVERYTHING, now=0.0)
    assert p.add(world.view, {}, now=0.0) and not p


# -- clearing when the cache changes ------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "keys", "removed"),
    [
        (Target("a", "t"), [table_key("a", "t")], False),  # alter_table: reloaded
        (Target("a", "t"), [partition_key("a", "t", "p=2")], False),  # add_partition
        (Target("a", "t"), [partition_key("a", "t", "p=1")], True),  # drop_partition
        (Target("a", "t"), [table_key("a", "t")], True),  # drop_table
        (Target("a", "new"), [table_key("a", "new")], False),  # create_table
        (Target("a", "v"), [table_key("a", "v", view=True)], False),  # a view
        (Target("a"), [function_key("a", "g", "sig")], False),  # create_function
        (Target("a"), [function_key("a", "f", "sig")], False),  # alter_function
        (Target("a"), [database_key("a")], False),  # alter_database
        (Target("b"), [database_key("b"), table_key("b", "t")], True),  # drop_database
        (Target("c"), [database_key("c")], False),  # create_database
    ],
)
def test_an_object_clears_when_its_cached_state_changes(
    world: World, target: Target, keys: list[str], removed: bool
) -> None:
    p = marked(world, target)
    read = Read(target.db, None)
    assert p.is_pending(world.view, read, now=1.0)
    world.change(*keys, removed=removed)
    assert not p.is_pending(world.view, read, now=2.0)
    assert len(p) == 0 and p.take_expired() == []
    assert p.take_cleared() == [2.0]  # pending for 2 s until a read saw it cleared


def test_an_unrelated_change_does_not_clear_it(world: World) -> None:
    p = marked(world, Target("a", "t"))
    world.change(table_key("a", "u"), partition_key("b", "t", "x=1"), table_key("b", "t"))
    assert p.is_pending(world.view, TABLE_T, now=1.0)
    world.change(function_key("a", "g", "sig"))  # the database's key set: not the table
    assert p.is_pending(world.view, TABLE_T, now=1.0)


def test_an_older_view_still_shows_it_pending(world: World) -> None:
    """A read answered from a view taken before the reload must still forward."""
    old = world.view
    p = marked(world, Target("a", "t"))
    world.change(table_key("a", "t"))
    assert p.is_pending(old, TABLE_T, now=1.0)
    assert not p.is_pending(world.view, TABLE_T, now=1.0)


def test_the_mark_before_the_write_counts_even_if_the_cache_moved_meanwhile(world: World) -> None:
    """Marks come from the view taken before the write was sent: a reload that
    landed while HMS answered clears the object at once."""
    before = world.view
    world.change(table_key("a", "t"))
    p = Pending(BOUND)
    p.add(world.view, {Target("a", "t"): mark(before, Target("a", "t"))}, now=0.0)
    assert not p.is_pending(world.view, TABLE_T, now=0.0)


def test_marks_hold_what_they_compare_so_identities_are_never_reused(world: World) -> None:
    m = mark(world.view, Target("a", "t"))
    assert m.shape is world.view.partitions["a.t"]
    for n in range(50):  # many versions later, the old partition set is still held
        world.change(partition_key("a", "t", f"p={n + 2}"))
    assert not m.same(mark(world.view, Target("a", "t")))
    assert m.same(m) and not m.same(mark(world.view, Target("a")))


# -- expiry ---------------------------------------------------------------------------------------


def test_after_the_bound_it_is_served_again_and_reported_once(world: World) -> None:
    p = marked(world, Target("a", "t"), now=100.0)
    assert p.is_pending(world.view, TABLE_T, now=100.0 + BOUND - 0.001)
    assert not p.is_pending(world.view, TABLE_T, now=100.0 + BOUND)
    assert p.take_expired() == [Target("a", "t")]
    assert not p.is_pending(world.view, TABLE_T, now=200.0)
    assert p.take_expired() == [] and len(p) == 0


def test_marking_again_replaces_the_mark_and_restarts_the_bound(world: World) -> None:
    p = marked(world, Target("a", "t"), now=0.0)
    world.change(table_key("a", "t"))  # the first write shows
    second = mark(world.view, Target("a", "t"))  # a second write, sent now
    assert p.add(world.view, {Target("a", "t"): second}, now=8.0)
    assert len(p) == 1
    assert p.is_pending(world.view, TABLE_T, now=12.0)  # past the first bound
    world.change(partition_key("a", "t", "p=9"))  # the second write shows
    assert not p.is_pending(world.view, TABLE_T, now=12.0)


def test_adding_drops_what_cleared_or_expired_meanwhile(world: World) -> None:
    p = marked(world, Target("a", "t"), Target("a", "u"), Target("b"), now=0.0)
    world.change(table_key("a", "t"))
    assert p.add(world.view, {Target("b", "t"): mark(world.view, Target("b", "t"))}, now=5.0)
    assert len(p) == 3 and p.take_cleared() == [5.0]
    assert p.add(world.view, {}, now=5.0) and len(p) == 3  # nothing marked: nothing pruned
    assert p.add(world.view, {Target("b", "t"): mark(world.view, Target("b", "t"))}, now=11.0)
    assert len(p) == 1  # a.u and b expired, b.t marked again
    assert sorted(p.take_expired(), key=str) == [Target("a", "u"), Target("b")]


# -- overflow -------------------------------------------------------------------------------------


def test_past_the_limit_every_read_is_pending_until_the_bound(world: World) -> None:
    p = marked(world, Target("a", "t"), Target("a", "u"), limit=3)
    targets = {Target("b", "t"): mark(world.view, Target("b", "t"))}
    assert p.add(world.view, targets, now=1.0)  # 3: fits
    assert p.add(world.view, targets, now=1.0)  # the same again: still 3
    extra = {Target("c", "x"): mark(world.view, Target("c", "x"))}
    assert not p.add(world.view, extra, now=2.0)
    assert p.overflowed
    for read in (DATABASES, Read("z", ()), Read("z", None), Read("b", ("zz",)), EVERYTHING):
        assert p.is_pending(world.view, read, now=2.0 + BOUND - 0.001)
    # Whatever clears meanwhile, the dropped object cannot be watched: still pending.
    world.change(table_key("a", "t"), table_key("a", "u"), table_key("b", "t"))
    assert p.is_pending(world.view, Read("z", None), now=3.0)
    assert not p.is_pending(world.view, Read("z", None), now=2.0 + BOUND)
    assert not p.overflowed and p.take_expired() == [ALL_DATABASES]
    assert not p.is_pending(world.view, EVERYTHING, now=2.0 + BOUND)


def test_an_overflow_is_extended_by_the_next_one(world: World) -> None:
    p = Pending(BOUND, limit=1)
    many = {
        Target("a", "t"): mark(world.view, Target("a", "t")),
        Target("a", "u"): mark(world.view, Target("a", "u")),
    }
    assert not p.add(world.view, many, now=0.0)
    assert not p.add(world.view, many, now=5.0)
    assert p.is_pending(world.view, DATABASES, now=BOUND + 1)
    assert not p.is_pending(world.view, DATABASES, now=BOUND + 5)


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


def test_readback_reloads_marks_and_warns_once_on_expiry(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    now = [0.0]
    reloads: list[tuple[str, str | None]] = []
    stats = EndpointStats()
    rb = ReadBack(3.0, stats, ("a",), lambda db, t: reloads.append((db, t)), clock=lambda: now[0])
    args = svc.get_table_args(dbname="a", tbl_name="t")
    assert not rb.is_pending(world.view, "get_table", args)
    targets = (Target("a", "t"), Target("b", "t"), Target("a", guess=True))
    reloaded = rb.mark("alter_table", targets, world.view, world.view)
    assert reloaded == (Target("a", "t"), Target("a", guess=True))  # b not followed
    assert reloads == [("a", "t"), ("a", None)]
    assert stats.pending_marked == 1  # the guess is reloaded, never pending
    now[0] = 2.9
    assert rb.is_pending(world.view, "get_table", args)
    now[0] = 3.0
    with caplog.at_level(logging.WARNING, logger="subscriber.metastore.readback"):
        assert not rb.is_pending(world.view, "get_table", args)  # t=3: the bound passed
        assert not rb.is_pending(world.view, "get_table", args)
    assert [r.getMessage() for r in caplog.records if "did not show" in r.getMessage()] == [
        "HMS endpoint: the cache did not show a write to a.t within 3s; serving it from the "
        "cache again (a read may not show the write yet)"
    ]
    assert stats.write_waits_timed_out == 1
    # A stale read of a table already pending asks nothing more.
    rb.mark("alter_table", (Target("a", "t"),), world.view, world.view)
    assert rb.mark("get_table", (Target("a", "t"),), world.view, world.view, stale=True) == ()
    world.change(table_key("a", "t"))
    now[0] = 3.5
    assert not rb.is_pending(world.view, "get_table", args)
    assert stats.pending_cleared == 1 and stats.pending_seconds == 0.5
