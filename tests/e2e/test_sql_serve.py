"""``catalogd serve --hms-db``: no HMS in the way, progress in status, outages survived."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from polling import wait_until
from support.catalogd_process import CatalogdProcess
from support.fixtures import POSTGRES_ADMIN

import idl
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.sources import load_catalog
from catalogd.sources.sql import SqlSource
from subscriber.api import CatalogSubscriber
from subscriber.protocol.keys import database_of

pytestmark = [pytest.mark.timeout(300)]

hms = idl.hive_metastore
DB = "sqlserve"


def _allow(database: str, allowed: bool) -> None:
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
        admin.execute(
            f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(allowed).lower()}'.encode()
        )
        if not allowed:
            admin.execute(
                b"SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                b"WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            )


def test_serve_from_the_metastore_database(hms_postgres: EmbeddedMetastore, tmp_path: Path) -> None:
    backend: Any = hms_postgres.backend
    url = f"postgresql+psycopg://postgres@{backend.host}:{backend.port}/{backend.database}"
    location = f"file:{hms_postgres.warehouse_dir}/{DB}.db"
    with MetastoreClient(hms_postgres.uri) as client:
        if DB not in client.get_all_databases():
            client.call(
                "create_database",
                hms.Database(name=DB, description="", locationUri=location, parameters={}),
            )
            table = thrift_table(
                DB, "t", f"{location}/t", columns=[("id", "int")], partition_keys=[("d", "string")]
            )
            client.call("create_table", table)
            client.call("add_partitions", thrift_partitions(table, [[str(i)] for i in range(30)]))
    source = SqlSource(url)
    want = set(load_catalog(source)[0])
    source.close()
    server = CatalogdProcess(
        "", tmp_path / "catalogd", extra=["--hms-db", url, "--poll-interval", "0.5"]
    )
    server.start()
    try:
        server.wait_loaded()
        with CatalogSubscriber(server.endpoint) as sub:
            sub.wait_synced(30)
            assert sub.hms_uri is None  # --hms-db alone: catalogd reads no HMS to report
            wait_until(
                lambda: (
                    {e.key for e in sub._machine.cache.view.entries() if database_of(e.key)} >= want
                ),
                what="everything loaded by SQL",
            )
            code, status, _ = server.admin("status")
            assert code == 0, status
            loading = status["detail"]["loading"]
            assert loading["done"] and loading["partitions_known"] >= 30
            assert "partitions/s" in server.log_tail(20000)

            _allow(backend.database, False)  # the database goes away
            try:
                wait_until(lambda: "unreachable" in server.log_tail(), timeout=60, what="noticed")
                assert len(sub.list_partitions(f"{DB}.t")) == 30  # still served
            finally:
                _allow(backend.database, True)
            wait_until(lambda: "recovered" in server.log_tail(), timeout=60, what="recovery")
            with MetastoreClient(hms_postgres.uri) as client:
                client.call("drop_partition", DB, "t", ["0"], False)
            wait_until(lambda: len(sub.list_partitions(f"{DB}.t")) == 29, what="change after")
    finally:
        assert server.stop() == 0
