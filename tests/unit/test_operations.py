"""Operations over an in-memory metastore and an unstarted server (submissions run
in the calling thread): one submission per load, the versions it answers, and a
table loader made before the Operations it loads through."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import idl
from catalogd.core.catalog import Catalog
from catalogd.freshness.operations import Operations
from catalogd.freshness.polling import fingerprints
from catalogd.freshness.table_loader import TableLoader
from catalogd.metastore.source import InMemorySource
from catalogd.server.thread import CatalogServer, ServerConfig

hms = idl.hive_metastore


class CountingServer(CatalogServer):
    """Counts the round trips to the (here: unstarted) server thread."""

    submissions = 0

    def submit(self, fn: Callable[[Catalog], Any]) -> Future[Any]:
        self.submissions += 1
        return super().submit(fn)


def world() -> tuple[InMemorySource, CountingServer, Operations]:
    source = InMemorySource()
    source.databases["db"] = hms.Database(
        name="db", description="", locationUri="file:/w/db", parameters={}
    )
    for name in ("a", "b"):
        source.tables[("db", name)] = hms.Table(
            tableName=name,
            dbName="db",
            owner="me",
            sd=hms.StorageDescriptor(cols=[], location=f"file:/w/db/{name}", parameters={}),
            partitionKeys=[],
            parameters={"transient_lastDdlTime": "1"},
            tableType="MANAGED_TABLE",
        )
    server = CountingServer(ServerConfig(bind="tcp://127.0.0.1:*"))
    ops = Operations(server, lambda: source)
    ops.load_names()
    return source, server, ops


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


def test_reads_answer_from_the_catalog() -> None:
    _, _, ops = world()
    assert ops.databases() == {"db"}
    assert ops.table_names("db") == {"a", "b"}
    assert ops.has_table("db", "a") and not ops.has_table("db", "zzz")
    assert ops.contains("TABLE:db.a") and not ops.contains("TABLE:db.zzz")
    assert ops.table_state("db", ["a", "b"]) == {}  # placeholders have no state
    assert ops.unloaded() == [("db", "a"), ("db", "b")]


def test_a_loader_made_before_its_operations_keeps_early_requests() -> None:
    loader = TableLoader(pool_size=1)
    early = loader.request("db", "a", urgent=True)  # as a subscriber's load request
    _, _, ops = world()
    loader.start(ops)
    try:
        assert early.result(timeout=30) == ops.version()
        assert ops.is_loaded("db", "a")
    finally:
        loader.close()
