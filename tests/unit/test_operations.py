"""Operations over an in-memory metastore and an unstarted server (submissions run
in the calling thread): one submission per load, the versions it answers, and a
table loader that keeps requests made before it starts."""

from __future__ import annotations

from typing import Any

from support.memory_world import CountingServer, world

import idl
from catalogd.freshness.polling import fingerprints
from catalogd.loading.table_loader import TableLoader
from catalogd.server.thread import ServerConfig
from catalogd.writes.operations import Operations
from subscriber.protocol.errors import InvalidRequestError

hms = idl.hive_metastore


def test_a_load_is_one_submission_answering_the_published_version() -> None:
    _, server, ops = world()
    before = ops.version()
    server.submissions = 0
    version = ops.load_table("db", "a")
    assert server.submissions == 1
    assert version == ops.version() > before
    assert ops.is_loaded("db", "a") and not ops.is_loaded("db", "b")


def test_only_if_unloaded_leaves_a_loaded_table_unread() -> None:
    source, server, ops = world()
    ops.load_table("db", "a")
    source.tables[("db", "a")].parameters = {"transient_lastDdlTime": "2"}
    version = ops.version()
    server.submissions = 0
    assert ops.load_table("db", "a", only_if_unloaded=True) == version
    assert server.submissions == 1  # the check only: no HMS read, no commit
    assert ops.load_table("db", "b", only_if_unloaded=True) > version
    assert fingerprints(ops.table_state("db", ["a"])) == {"a": ("1", set())}  # not re-read


def test_loading_a_placeholder_is_one_look_and_one_commit() -> None:
    _, server, ops = world()
    server.submissions = 0
    seen = ops.load_placeholder("db", "a")
    assert server.submissions == 2
    assert seen.presence == "placeholder" and seen.version == ops.version()
    assert ops.load_placeholder("DB", "zzz").presence == "absent"


def test_reads_answer_from_the_catalog() -> None:
    _, _, ops = world()
    assert ops.databases() == {"db"}
    assert ops.table_names("db") == {"a", "b"}
    assert ops.has_table("db", "a") and not ops.has_table("db", "zzz")
    assert ops.contains("TABLE:db.a") and not ops.contains("TABLE:db.zzz")
    assert ops.table_state("db", ["a", "b"]) == {}  # placeholders have no state
    assert ops.unloaded() == [("db", "a"), ("db", "b")]


def test_a_loader_keeps_requests_made_before_it_starts() -> None:
    _, _, ops = world()
    loader = TableLoader(ops, pool_size=1)
    early = loader.request("db", "a", urgent=True)  # as a subscriber's load request
    loader.start()
    try:
        assert early.result(timeout=30) == ops.version()
        assert ops.is_loaded("db", "a")
    finally:
        loader.close()


class BatchingOps(Operations):
    """Operations that load up to 3 tables together (as with load workers), tables
    named ``big*`` alone, and ``bad`` failing to load."""

    load_batch = 3  # type: ignore[assignment]

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.batches: list[list[str]] = []

    def loads_alone(self, db: str, tables: Any) -> set[str]:
        return {t for t in tables if t.startswith("big")}

    def load_tables(self, db: str, tables: Any) -> dict[str, int | Exception]:
        self.batches.append(sorted(tables))
        assert not self.loads_alone(db, tables)
        results: dict[str, int | Exception] = {}
        for t in tables:
            if t == "bad":
                results[t] = InvalidRequestError("cannot convert db.bad")
            else:
                results[t] = self.load_table(db, t, only_if_unloaded=True)
        return results


def test_the_loader_loads_small_tables_together_and_large_ones_alone() -> None:
    source, _, _ = world()
    for name in ("c", "d", "e", "big1", "big2", "bad"):
        source.tables[("db", name)] = hms.Table(
            tableName=name,
            dbName="db",
            sd=hms.StorageDescriptor(cols=[], location=f"file:/w/db/{name}", parameters={}),
            partitionKeys=[],
            parameters={},
            tableType="MANAGED_TABLE",
        )
    ops = BatchingOps(CountingServer(ServerConfig(bind="tcp://127.0.0.1:*")), lambda: source)
    ops.load_names()
    loader = TableLoader(ops, pool_size=1).start()
    try:
        futures = {t: loader.request("db", t) for _, t in ops.unloaded()}
        assert loader.wait_idle(30)
    finally:
        loader.close()
    tables = sorted(futures)
    assert tables == ["a", "b", "bad", "big1", "big2", "c", "d", "e"]
    assert all(len(b) <= 3 and not any(t.startswith("big") for t in b) for b in ops.batches)
    together = sorted(t for b in ops.batches for t in b)
    assert together == ["a", "b", "bad", "c", "d", "e"]
    for t in tables:
        if t == "bad":
            assert isinstance(futures[t].exception(), InvalidRequestError)
        else:
            assert futures[t].result() > 0 and ops.is_loaded("db", t)
    assert loader.stats.loaded == 7 and loader.stats.failed == 1


def test_the_loader_remembers_its_slowest_table_loads_bounded() -> None:
    from catalogd.loading.table_loader import SLOWEST, LoaderStats

    _, _, ops = world()
    loader = TableLoader(ops, pool_size=1).start()
    try:
        for name in ("a", "b"):
            loader.request("db", name, urgent=True).result(timeout=30)
    finally:
        loader.close()
    assert sorted(t for _, _, t in loader.stats.slowest_first()) == ["a", "b"]
    stats = LoaderStats()
    for i in range(3 * SLOWEST):
        stats.timed(float(i), "db", f"t{i}")
    assert [s for s, _, _ in stats.slowest_first()] == [float(i) for i in range(29, 19, -1)]
