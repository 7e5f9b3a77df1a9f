"""The embedded HMS 3.1.3 and 4.0.1 on PostgreSQL and MariaDB: schema by their schematool.

Each case (both versions on both databases) starts a fresh HMS on a fresh database (the Derby cases
run in ``tests/e2e/test_hms_versions.py``; 2.3 on PostgreSQL and MariaDB in
``test_sql_source.py``), writes the catalog of :mod:`support.hms_versions` over
Thrift, and checks that catalogd's Thrift source loads every object and that the
tables it reads equal the raw HMS answer; 3.1 must log notification events (the
stock listener), 4.0.1 none. Then the SQL source (``--hms-db``) reads the same
metastore from its 3.1 or 4.0 schema: every catalog object equal, byte for byte,
to the Thrift source's (a second catalog's same-named database left out, as HMS
does), and its answers to the other questions catalogd asks equal HMS's; on
PostgreSQL, ``catalogd serve --hms-db`` then serves it to a subscriber and follows a
change without an admin command. HMS start times are printed in the summary.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from polling import wait_until
from support.catalogd_process import CatalogdProcess
from support.hms_copy import add_odd_objects
from support.hms_versions import (
    RawHms,
    backend_for,
    drop,
    populate,
    populate_catalogs,
    populate_v4,
)
from support.measurements import record_measurement
from support.source_objects import everything

from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.sources import ThriftSource, load_catalog
from catalogd.sources.sql import SqlSource, fingerprints
from subscriber.api import CatalogSubscriber

pytestmark = [pytest.mark.hms, pytest.mark.postgres, pytest.mark.timeout(300)]


@pytest.mark.parametrize(
    ("version", "kind"),
    [("3.1", "postgres"), ("4.x", "postgres"), ("4.x", "mariadb"), ("3.1", "mariadb")],
)
def test_schematool_schema_serves_the_catalog(
    version: str, kind: str, tmp_path: Path, hms_cache_dir: Path
) -> None:
    backend = backend_for(kind)
    try:
        with EmbeddedMetastore(
            tmp_path / "hms",
            version=version,
            backend=backend,
            cache_dir=hms_cache_dir,
            notification_events=True,
        ) as metastore:
            record_measurement(
                f"HMS {version} start ({kind}, schematool)", metastore.startup_seconds or 0.0, "s"
            )
            dbs = populate(metastore.uri, f"file:{metastore.warehouse_dir}", "bk")
            raw = RawHms(metastore.uri, version)
            with MetastoreClient(metastore.uri) as client:
                objects, _ = load_catalog(ThriftSource(client))
                assert client.request_style == (version == "4.x")
                for db in dbs:
                    for table in raw.tables(db):
                        assert client.get_table(db, table.tableName) == table
                events = client.get_current_notification_event_id()
            raw.close()
            assert {k for k in objects if k.split(":")[1].startswith("bk_")} >= {
                "DATABASE:bk_a",
                "TABLE:bk_a.events",
                "TABLE:bk_a.ext",
                "VIEW:bk_a.v",
                "TABLE:bk_b.t",
                "HDFS_PARTITION:bk_a.events:dt=x y%2F%3D/n=7",
            }
            assert (events > 0) == (version == "3.1")
            _sql_source_equals_thrift(metastore, version, kind)
            if kind == "postgres":
                _serve_by_sql(metastore, tmp_path / "catalogd")
        # The schema stays: a second start on the same database skips schematool.
        with EmbeddedMetastore(
            tmp_path / "hms", version=version, backend=backend, cache_dir=hms_cache_dir
        ) as again:
            record_measurement(f"HMS {version} restart ({kind})", again.startup_seconds or 0.0, "s")
            with MetastoreClient(again.uri) as client:
                assert set(dbs) <= set(client.get_all_databases())
    finally:
        drop(backend)


def _sql_source_equals_thrift(metastore: EmbeddedMetastore, version: str, kind: str) -> None:
    warehouse = f"file:{metastore.warehouse_dir}"
    populate_catalogs(metastore.uri, warehouse, "bk")
    if version == "4.x":
        populate_v4(metastore.uri, warehouse, "bk", metastore.backend)
    with MetastoreClient(metastore.uri) as client:
        if kind == "postgres":  # schematool's MySQL schema keeps keys in latin1: HMS itself
            add_odd_objects(client, warehouse)  # refuses their Cyrillic parameter key there
        thrift = ThriftSource(client)
        by_thrift = everything(thrift)
        sql = SqlSource(metastore.backend.sqlalchemy_url, partition_batch=2)  # type: ignore[attr-defined]
        try:
            by_sql = everything(sql)
            assert sorted(by_sql) == sorted(by_thrift)
            assert [k for k in by_thrift if by_sql[k] != by_thrift[k]] == []
            assert {"TABLE:bk_b.described", "TABLE:bk_a.events"} <= set(by_sql)
            assert not any("in_other" in k for k in by_sql)  # the other catalog's
            tables = sorted(
                thrift.get_tables("bk_b", ["t", "described"]), key=lambda t: t.tableName
            )
            assert sql.get_tables("bk_b", ["t", "described"]) == tables
            assert tables[0].sd.serdeInfo.description == "a described SerDe"  # "described"
            if version == "4.x":
                (acid,) = thrift.get_tables("bk_b", ["acid"])
                assert acid.sd.sortCols == [] and acid.sd.bucketCols == ["x"]  # HMS strips
                assert sql.get_tables("bk_b", ["acid"]) == [acid]
            assert sql.get_database("bk_a") == thrift.get_database("bk_a")
            assert sql.table_column_statistics("bk_a", "ext", ["x"]) == (
                thrift.table_column_statistics("bk_a", "ext", ["x"])
            )
            key = lambda f: (f.dbName, f.functionName)  # noqa: E731
            assert sql.all_functions() == sorted(thrift.all_functions(), key=key)
            assert list(sql.partitions("bk_a", "events")) == list(
                thrift.partitions("bk_a", "events")
            )
            assert sql.current_notification_id() == thrift.current_notification_id()
            assert sql.next_notifications(0, 1000) == thrift.next_notifications(0, 1000)
            # SQL change detection's fingerprints run on this schema and see a write.
            passes = (fingerprints.databases, fingerprints.tables, fingerprints.grants,
                      fingerprints.functions, fingerprints.partition_buckets)  # fmt: skip
            before = [sql.run(f) for f in passes]
            assert "in_other" not in str(before[1])  # the other catalog's table
            table = client.get_table("bk_a", "ext")
            table.parameters = {**table.parameters, "moved": "1"}
            client.call("alter_table", "bk_a", "ext", table)
            after = [sql.run(f) for f in passes]
            assert [a != b for a, b in zip(before, after, strict=True)] == [
                False, True, False, False, False,
            ]  # fmt: skip
        finally:
            sql.close()


def _serve_by_sql(metastore: EmbeddedMetastore, data_dir: Path) -> None:
    """``catalogd serve --hms-db`` on this schema: every object reaches a subscriber, and
    a partition dropped over Thrift leaves it without an admin command (3.1: the stock
    listener's events read from ``NOTIFICATION_LOG``; 4.0: SQL fingerprints)."""
    url = metastore.backend.sqlalchemy_url  # type: ignore[attr-defined]
    source = SqlSource(url)
    want = set(load_catalog(source)[0])
    source.close()
    server = CatalogdProcess("", data_dir, extra=["--hms-db", url, "--poll-interval", "0.5"])
    server.start()
    try:
        server.wait_loaded()
        with CatalogSubscriber(server.endpoint) as sub:
            sub.wait_synced(30)
            wait_until(
                lambda: {e.key for e in sub._machine.cache.view.entries()} >= want,
                what="everything loaded by SQL",
            )
            assert len(sub.list_partitions("bk_a.events")) == 4
            with MetastoreClient(metastore.uri) as client:
                client.call("drop_partition", "bk_a", "events", ["2024-01-02", "1"], False)
            wait_until(lambda: len(sub.list_partitions("bk_a.events")) == 3, what="the drop")
    finally:
        assert server.stop() == 0
