"""A small catalog for unit tests of the write path: database ``db`` with tables
``a`` and ``b`` in an in-memory metastore, and Operations over an unstarted server
(submissions run in the calling thread) that counts its round trips."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import idl
from catalogd.core.catalog import Catalog
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import InMemorySource
from catalogd.writes.operations import Operations

hms = idl.hive_metastore


class CountingServer(CatalogServer):
    """Counts the round trips to the (here: unstarted) server thread."""

    submissions = 0

    def submit(self, fn: Callable[[Catalog], Any]) -> Future[Any]:
        self.submissions += 1
        return super().submit(fn)


def world(
    wrap: Callable[[InMemorySource], Any] = lambda s: s,
) -> tuple[InMemorySource, CountingServer, Operations]:
    """The metastore, the server and Operations reading ``wrap(metastore)``, names loaded."""
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
    read = wrap(source)
    ops = Operations(server, lambda: read)
    ops.load_names()
    return source, server, ops
