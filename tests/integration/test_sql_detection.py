"""Change detection by SQL fingerprints (``--hms-db``) against a PostgreSQL-backed HMS.

Changes are made by Spark SQL (a child process on that HMS) and through HMS Thrift with
the calls Spark makes for them
(``ANALYZE ... PARTITION`` is an ``alter_partition(s)`` carrying new statistics
parameters and the *old* ``transient_lastDdlTime``, which Thrift polling cannot
see). Each must reach a subscriber after **one** detection cycle: with the
detector running every ``interval`` seconds, that is within 2 x the interval.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest
from polling import wait_until
from support.measurements import record_measurement
from support.spark_sql_server import SparkSql

import idl
from catalogd.freshness.detector import ChangeDetector
from catalogd.freshness.sql_detection import SqlPoller
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.loading.table_loader import TableLoader
from catalogd.runtime_info import RuntimeInfo
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources.sql import SqlSource
from catalogd.writes.operations import Operations
from subscriber import CatalogSubscriber
from subscriber.protocol.errors import NotFoundError

pytestmark = pytest.mark.timeout(240)

hms = idl.hive_metastore
DB = "sqldet"


@dataclass
class Running:
    ops: Operations
    loader: TableLoader
    detector: ChangeDetector
    poller: SqlPoller
    sub: CatalogSubscriber

    def cycle(self) -> None:
        """One detection cycle and the loads it queued."""
        self.detector.run_once()
        assert self.loader.wait_idle(60)


@pytest.fixture
def running(hms_postgres: EmbeddedMetastore) -> Iterator[Running]:
    backend: Any = hms_postgres.backend
    url = f"postgresql+psycopg://postgres@{backend.host}:{backend.port}/{backend.database}"
    with ExitStack() as stack:
        server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*"))
        ops = Operations(server, lambda: SqlSource(url))
        stack.callback(ops.close)
        poller = SqlPoller(ops)
        poller.baseline()  # as the daemon does: before the initial load
        ops.load_names()
        ops.load_privileges()
        server.start()
        stack.callback(server.close)
        loader = TableLoader(ops, pool_size=2).start()
        stack.callback(loader.close)
        loader.enqueue_unloaded()
        detector = ChangeDetector(
            ops, loader, RuntimeInfo(), mode="poll", interval_s=0.5, poller=poller
        )
        stack.callback(detector.close)
        assert loader.wait_idle(60)
        sub = stack.enter_context(CatalogSubscriber(server.endpoint))
        sub.wait_synced(30)
        yield Running(ops, loader, detector, poller, sub)


def seen(condition: Any, what: str) -> None:
    """Wait for the subscriber (delivery is asynchronous; detection was one cycle)."""

    def check() -> bool:
        try:
            return bool(condition())
        except NotFoundError:
            return False

    wait_until(check, timeout=30, what=what)


def test_changes_reach_a_subscriber_after_one_cycle(
    running: Running, hms_postgres: EmbeddedMetastore
) -> None:
    sub, location = running.sub, f"file:{hms_postgres.warehouse_dir}/{DB}.db"
    with MetastoreClient(hms_postgres.uri) as client:
        client.call(
            "create_database",
            hms.Database(name=DB, description="", locationUri=location, parameters={}),
        )
        table = thrift_table(
            DB, "t", f"{location}/t", columns=[("id", "int")], partition_keys=[("dt", "string")]
        )
        client.call("create_table", table)
        client.call("add_partitions", thrift_partitions(table, [["a"], ["b"]]))
        running.cycle()
        seen(lambda: len(sub.list_partitions(f"{DB}.t")) == 2, "create database/table/partitions")

        # ANALYZE TABLE t PARTITION (dt='a') COMPUTE STATISTICS, as Spark sends it.
        part = client.call("get_partition", DB, "t", ["a"])
        part.parameters = {**part.parameters, "numRows": "42", "spark.sql.statistics.numRows": "42"}
        client.call("alter_partition", DB, "t", part)  # Spark: alter_partitions, same rows
        running.cycle()
        seen(
            lambda: sub.list_partitions(f"{DB}.t", "dt=a")[0].hms_parameters.get("numRows") == "42",
            "ANALYZE of one partition",
        )

        client.call("add_partitions", thrift_partitions(table, [["c"]]))
        client.call("drop_partition", DB, "t", ["b"], False)
        running.cycle()
        seen(
            lambda: [p.partition_name for p in sub.list_partitions(f"{DB}.t")] == ["dt=a", "dt=c"],
            "add and drop partition",
        )

        altered = client.call("get_table", DB, "t")
        altered.parameters = {**altered.parameters, "comment": "altered"}
        client.call("alter_table", DB, "t", altered)
        running.cycle()
        seen(
            lambda: sub.get_table(f"{DB}.t").metastore_table.parameters.get("comment") == "altered",
            "alter table",
        )

        db = client.call("get_database", DB)
        db.parameters = {"team": "finance"}
        db.ownerName, db.ownerType = "alice", hms.PrincipalType.USER
        client.call("alter_database", DB, db)
        running.cycle()
        seen(
            lambda: sub.get_database(DB).metastore_db.parameters == {"team": "finance"},
            "alter database",
        )

        grant = hms.HiveObjectPrivilege(
            hiveObject=hms.HiveObjectRef(
                objectType=hms.HiveObjectType.TABLE, dbName=DB, objectName="t", partValues=[]
            ),
            principalName="sqldet_role",
            principalType=hms.PrincipalType.ROLE,
            grantInfo=hms.PrivilegeGrantInfo(
                privilege="SELECT",
                createTime=0,
                grantor="admin",
                grantorType=hms.PrincipalType.USER,
                grantOption=False,
            ),
        )
        client.call("create_role", hms.Role(roleName="sqldet_role", ownerName="admin"))
        client.call("grant_privileges", hms.PrivilegeBag(privileges=[grant]))
        running.cycle()
        seen(lambda: sub.privileges_of("sqldet_role", "ROLE"), "grant")

        client.call("revoke_privileges", hms.PrivilegeBag(privileges=[grant]))
        running.cycle()
        seen(lambda: not sub.privileges_of("sqldet_role", "ROLE"), "revoke")

        client.call("drop_table", DB, "t", False)
        running.cycle()
        seen(lambda: sub.list_tables(DB) == [], "drop table")
        client.call("drop_role", "sqldet_role")
        client.call("drop_database", DB, False, True)
        running.cycle()
        seen(lambda: DB not in sub.list_databases(), "drop database")
    assert running.detector.stats.errors == 0
    # A cycle is a fixed handful of queries, however large the metastore.
    assert running.poller.queries <= 10 * running.detector.stats.cycles + 10


def test_idle_cycles_cost_one_query_and_a_write_opens_them_again(
    running: Running, hms_postgres: EmbeddedMetastore
) -> None:
    """With nothing written for two cycles, a cycle reads only the server's write
    position; the next write makes the next cycle a full pass that sees it."""
    poller, sub = running.poller, running.sub
    location = f"file:{hms_postgres.warehouse_dir}/{DB}_idle.db"
    with MetastoreClient(hms_postgres.uri) as client:
        client.call(
            "create_database",
            hms.Database(name=f"{DB}_idle", description="", locationUri=location, parameters={}),
        )
        running.cycle()
        seen(lambda: f"{DB}_idle" in sub.list_databases(), "create database")
        for _ in range(20):  # other databases of the server may be written meanwhile
            before = poller.queries
            running.cycle()
            if poller.skipped:
                break
        assert poller.skipped and poller.queries == before + 1
        db = client.call("get_database", f"{DB}_idle")
        db.parameters = {"idle": "no"}
        client.call("alter_database", f"{DB}_idle", db)
        running.cycle()
        seen(lambda: sub.get_database(f"{DB}_idle").metastore_db.parameters, "alter database")
        client.call("drop_database", f"{DB}_idle", False, True)
        running.cycle()


@pytest.fixture(scope="module")
def spark_pg(
    hms_postgres: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SparkSql]:
    """Spark SQL in a child process on the PostgreSQL-backed HMS (one for the module)."""
    session = SparkSql(
        hms_postgres.uri, hms_postgres.warehouse_dir, tmp_path_factory.mktemp("spark-pg"), {}
    )
    record_measurement("Spark session start (PostgreSQL HMS)", session.startup_s, "s")
    yield session
    session.close()


def test_spark_changes_reach_a_subscriber_after_one_cycle(
    running: Running, spark_pg: SparkSql
) -> None:
    sub, db = running.sub, "sqldet_spark"
    spark_pg.sql(f"CREATE DATABASE {db}")
    spark_pg.sql(f"CREATE TABLE {db}.ev (id INT) PARTITIONED BY (dt STRING) STORED AS PARQUET")
    spark_pg.sql(f"INSERT INTO {db}.ev PARTITION (dt='a') VALUES (1), (2)")
    spark_pg.sql(f"INSERT INTO {db}.ev PARTITION (dt='b') VALUES (3)")
    running.cycle()
    seen(lambda: len(sub.list_partitions(f"{db}.ev")) == 2, "Spark CREATE TABLE and INSERTs")

    def rows(spec: str) -> str | None:
        part = sub.list_partitions(f"{db}.ev", spec)[0]
        return part.hms_parameters.get("spark.sql.statistics.numRows")

    spark_pg.sql(f"ANALYZE TABLE {db}.ev PARTITION (dt='a') COMPUTE STATISTICS")
    running.cycle()
    seen(lambda: rows("dt=a") == "2", "Spark ANALYZE of one partition")
    assert rows("dt=b") is None  # only that partition changed

    spark_pg.sql(f"ALTER TABLE {db}.ev SET TBLPROPERTIES ('team'='data')")
    spark_pg.sql(f"ALTER DATABASE {db} SET DBPROPERTIES ('tier'='gold')")
    running.cycle()
    seen(
        lambda: (
            sub.get_table(f"{db}.ev").metastore_table.parameters.get("team") == "data"
            and sub.get_database(db).metastore_db.parameters.get("tier") == "gold"
        ),
        "Spark ALTER TABLE and ALTER DATABASE",
    )

    spark_pg.sql(f"ALTER TABLE {db}.ev DROP PARTITION (dt='b')")
    spark_pg.sql(f"DROP DATABASE {db} CASCADE")
    running.cycle()
    seen(lambda: db not in sub.list_databases(), "Spark DROP PARTITION and DROP DATABASE")
    assert running.detector.stats.errors == 0
