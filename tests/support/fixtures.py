"""pytest plugin: a real Hive Metastore, a real Spark session, and a warehouse made by both.

Session-scoped fixtures (each started once, on first use, stopped at the end):

* ``hms`` -- an :class:`EmbeddedMetastore` on Derby in a temp dir.
* ``spark`` -- a ``SparkSession`` (``local[1]``, Hive support) whose catalog is ``hms``.
* ``warehouse`` -- a :class:`WarehouseSpec`: databases, tables, a view, partitions
  made with Spark SQL the way users make them, plus roles, grants and a function
  made over Thrift where Spark cannot. Treat it as read-only: tests that write
  to ``hms`` use their own database names and drop them.
* ``hms_postgres`` -- an :class:`EmbeddedMetastore` on a fresh PostgreSQL database
  (random name, dropped at the end).

Tests that use these fixtures are marked ``hms``/``spark``/``postgres`` here
automatically, so ``-m "not spark"`` deselects them. Start-up artefacts (class
archive, PostgreSQL DDL) are cached in pytest's cache dir (``--hms-cache-dir``).
"""

from __future__ import annotations

import getpass
import secrets
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import idl
from catalogd.metastore.client import MetastoreClient
from catalogd.metastore.embedded import EmbeddedMetastore, PostgresBackend

hms_thrift = idl.hive_metastore

PARQUET = (
    "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
    "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
)
ORC = (
    "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
    "org.apache.hadoop.hive.ql.io.orc.OrcSerde",
)
TEXT = (
    "org.apache.hadoop.mapred.TextInputFormat",
    "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
)
FORMATS = {"parquet": PARQUET, "orc": ORC, "text": TEXT}

POSTGRES_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres connect_timeout=10"

# Start-up times and latencies measured in this run; printed in the terminal summary.
MEASUREMENTS: dict[str, str] = {}


def record_measurement(name: str, value: float, unit: str) -> None:
    """Note a number for the end-of-run summary (e.g. ``("get_table", 3.1, "ms")``)."""
    MEASUREMENTS[name] = f"{value:.2f} {unit}"


# ---------------------------------------------------------------- what the warehouse holds


@dataclass(frozen=True)
class DatabaseSpec:
    name: str
    location: str
    comment: str
    owner: str


@dataclass(frozen=True)
class TableSpec:
    """One table or view. ``format`` is parquet/orc/text (None for a view);
    ``partitions`` are HMS partition names (``dt=2024-01-01/region=eu``) in order."""

    db: str
    name: str
    table_type: str  # MANAGED_TABLE, EXTERNAL_TABLE or VIRTUAL_VIEW
    columns: tuple[tuple[str, str], ...]
    location: str | None
    format: str | None
    partition_keys: tuple[tuple[str, str], ...] = ()
    partitions: tuple[str, ...] = ()
    rows: int = 0  # rows inserted (the data files exist for these)
    view_text: str | None = None
    parameters: tuple[tuple[str, str], ...] = ()  # user-set TBLPROPERTIES

    @property
    def qualified_name(self) -> str:
        return f"{self.db}.{self.name}"

    @property
    def input_format(self) -> str | None:
        return FORMATS[self.format][0] if self.format else None

    @property
    def serde(self) -> str | None:
        return FORMATS[self.format][1] if self.format else None


@dataclass(frozen=True)
class GrantSpec:
    """One explicit privilege (``object_type``: a ``HiveObjectType`` value)."""

    principal_name: str
    principal_type: int
    object_type: int
    db: str
    table: str | None
    privilege: str
    grant_option: bool = False


@dataclass(frozen=True)
class RoleSpec:
    name: str
    members: tuple[tuple[str, int], ...]  # (principal name, PrincipalType)


@dataclass(frozen=True)
class FunctionSpec:
    db: str
    name: str
    class_name: str
    resources: tuple[tuple[int, str], ...]  # (ResourceType, uri)


@dataclass(frozen=True)
class WarehouseSpec:
    """What ``populate_warehouse`` created, for object-by-object assertions.

    Besides ``grants``, Spark grants the table owner (``owner``, a USER)
    INSERT/SELECT/UPDATE/DELETE with grant option on every table it creates.
    """

    uri: str
    warehouse_dir: Path
    owner: str
    databases: tuple[DatabaseSpec, ...]
    tables: tuple[TableSpec, ...]
    roles: tuple[RoleSpec, ...]
    grants: tuple[GrantSpec, ...]
    functions: tuple[FunctionSpec, ...]
    timings: dict[str, float] = field(default_factory=dict, compare=False, hash=False)

    def database(self, name: str) -> DatabaseSpec:
        return next(d for d in self.databases if d.name == name)

    def tables_in(self, db: str) -> tuple[TableSpec, ...]:
        return tuple(t for t in self.tables if t.db == db)

    def table(self, db: str, name: str) -> TableSpec:
        return next(t for t in self.tables if t.db == db and t.name == name)


def populate_warehouse(spark: Any, hms: EmbeddedMetastore, external_dir: Path) -> WarehouseSpec:
    """Create the test catalog in ``hms`` with Spark SQL and Thrift; return its spec.

    Blocks ~10 s. Not idempotent: run once per metastore.
    """
    wh = f"file:{hms.warehouse_dir}"
    owner = getpass.getuser()
    events = f"file:{external_dir}/raw_events"
    orders_cols = (("id", "bigint"), ("amount", "decimal(10,2)"), ("customer", "string"))
    view_sql = "SELECT id, amount, customer, dt FROM sales.orders WHERE region = 'eu'"
    tables = (
        TableSpec(
            "sales",
            "orders",
            "MANAGED_TABLE",
            orders_cols,
            f"{wh}/sales.db/orders",
            "parquet",
            partition_keys=(("dt", "string"), ("region", "string")),
            partitions=(
                "dt=2024-01-01/region=eu",
                "dt=2024-01-01/region=us",
                "dt=2024-01-02/region=eu",
                "dt=2024-01-03/region=us",
            ),
            rows=4,
        ),
        TableSpec(
            "sales",
            "customers",
            "MANAGED_TABLE",
            (("name", "string"), ("country", "string"), ("since", "date")),
            f"{wh}/sales.db/customers",
            "parquet",
            rows=2,
        ),
        TableSpec(
            "sales",
            "eu_orders",
            "VIRTUAL_VIEW",
            (
                ("id", "bigint"),
                ("amount", "decimal(10,2)"),
                ("customer", "string"),
                ("dt", "string"),
            ),
            None,
            None,
            view_text=view_sql,
        ),
        TableSpec(
            "sales",
            "raw_events",
            "EXTERNAL_TABLE",
            (("ts", "string"), ("kind", "string"), ("payload", "string")),
            events,
            "text",
        ),
        TableSpec(
            "analytics",
            "daily_revenue",
            "MANAGED_TABLE",
            (("dt", "string"), ("revenue", "double")),
            f"{wh}/analytics.db/daily_revenue",
            "orc",
            rows=1,
            parameters=(("owner_team", "finance"),),
        ),
    )
    statements = [
        "CREATE DATABASE sales COMMENT 'Orders and customers'",
        "CREATE TABLE sales.orders (id BIGINT, amount DECIMAL(10,2), customer STRING) "
        "PARTITIONED BY (dt STRING, region STRING) STORED AS PARQUET",
        "INSERT INTO sales.orders PARTITION (dt='2024-01-01', region='eu') "
        "VALUES (1, 10.50, 'ann'), (2, 20.00, 'bob')",
        "INSERT INTO sales.orders PARTITION (dt='2024-01-01', region='us') VALUES (3, 7.25, 'cy')",
        "INSERT INTO sales.orders PARTITION (dt='2024-01-02', region='eu') "
        "VALUES (4, 99.99, 'ann')",
        # One partition per statement: several in one ADD fail on HMS 2.3.
        "ALTER TABLE sales.orders ADD PARTITION (dt='2024-01-03', region='us')",
        "CREATE TABLE sales.customers (name STRING, country STRING, since DATE) USING parquet",
        "INSERT INTO sales.customers VALUES ('ann', 'DE', DATE'2020-01-01'), "
        "('bob', 'US', DATE'2021-06-30')",
        f"CREATE VIEW sales.eu_orders AS {view_sql}",
        "CREATE EXTERNAL TABLE sales.raw_events (ts STRING, kind STRING, payload STRING) "
        "ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' STORED AS TEXTFILE "
        f"LOCATION '{events}'",
        "CREATE DATABASE analytics",
        "CREATE TABLE analytics.daily_revenue (dt STRING, revenue DOUBLE) STORED AS ORC "
        "TBLPROPERTIES ('owner_team'='finance')",
        "INSERT INTO analytics.daily_revenue VALUES ('2024-01-01', 37.75)",
    ]
    started = time.monotonic()
    for statement in statements:
        spark.sql(statement)
    spark_s = time.monotonic() - started

    user, group, role = (
        hms_thrift.PrincipalType.USER,
        hms_thrift.PrincipalType.GROUP,
        hms_thrift.PrincipalType.ROLE,
    )
    db_obj, table_obj = hms_thrift.HiveObjectType.DATABASE, hms_thrift.HiveObjectType.TABLE
    roles = (
        RoleSpec("analyst", (("analysts", group), ("alice", user))),
        RoleSpec("etl", (("bob", user),)),
    )
    grants = (
        GrantSpec("analyst", role, db_obj, "sales", None, "SELECT"),
        GrantSpec("analyst", role, table_obj, "sales", "orders", "SELECT"),
        GrantSpec("etl", role, db_obj, "analytics", None, "ALL"),
        GrantSpec(
            "bob", user, table_obj, "analytics", "daily_revenue", "INSERT", grant_option=True
        ),
    )
    functions = (
        FunctionSpec(
            "sales",
            "mask_email",
            "com.example.hive.udf.MaskEmail",
            ((hms_thrift.ResourceType.JAR, "file:/opt/udfs/mask-email.jar"),),
        ),
    )
    with MetastoreClient(hms.uri) as client:
        create_roles_grants_functions(client, roles, grants, functions, grantor="admin")
    databases = (
        DatabaseSpec("default", wh, "Default Hive database", "public"),
        DatabaseSpec("sales", f"{wh}/sales.db", "Orders and customers", owner),
        DatabaseSpec("analytics", f"{wh}/analytics.db", "", owner),
    )
    return WarehouseSpec(
        hms.uri,
        hms.warehouse_dir,
        owner,
        databases,
        tables,
        roles,
        grants,
        functions,
        timings={"spark_sql_s": spark_s, "total_s": time.monotonic() - started},
    )


def create_roles_grants_functions(
    client: MetastoreClient,
    roles: Sequence[RoleSpec],
    grants: Sequence[GrantSpec],
    functions: Sequence[FunctionSpec],
    *,
    grantor: str,
) -> None:
    """Create roles (with members), privileges and functions over Thrift (Spark cannot)."""
    user = hms_thrift.PrincipalType.USER
    for spec in roles:
        client.call("create_role", hms_thrift.Role(roleName=spec.name, ownerName=grantor))
        for name, principal_type in spec.members:
            client.call("grant_role", spec.name, name, principal_type, grantor, user, False)
    privileges = [
        hms_thrift.HiveObjectPrivilege(
            hiveObject=hms_thrift.HiveObjectRef(
                objectType=g.object_type, dbName=g.db, objectName=g.table, partValues=[]
            ),
            principalName=g.principal_name,
            principalType=g.principal_type,
            grantInfo=hms_thrift.PrivilegeGrantInfo(
                privilege=g.privilege,
                createTime=0,
                grantor=grantor,
                grantorType=user,
                grantOption=g.grant_option,
            ),
        )
        for g in grants
    ]
    if privileges:
        client.call("grant_privileges", hms_thrift.PrivilegeBag(privileges=privileges))
    for f in functions:
        client.call(
            "create_function",
            hms_thrift.Function(
                functionName=f.name,
                dbName=f.db,
                className=f.class_name,
                ownerName=grantor,
                ownerType=user,
                createTime=int(time.time()),
                functionType=hms_thrift.FunctionType.JAVA,
                resourceUris=[
                    hms_thrift.ResourceUri(resourceType=t, uri=u) for t, u in f.resources
                ],
            ),
        )


def thrift_table(
    db: str,
    name: str,
    location: str,
    *,
    columns: Sequence[tuple[str, str]],
    partition_keys: Sequence[tuple[str, str]] = (),
    fmt: str = "parquet",
    owner: str = "catalogd-test",
    parameters: dict[str, str] | None = None,
) -> Any:
    """Build a Hive ``Table`` struct (managed, Hive serde format ``fmt``) for create_table."""
    return hms_thrift.Table(
        tableName=name,
        dbName=db,
        owner=owner,
        createTime=int(time.time()),
        lastAccessTime=0,
        retention=0,
        sd=storage_descriptor(location, columns, fmt),
        partitionKeys=[
            hms_thrift.FieldSchema(name=n, type=t, comment="") for n, t in partition_keys
        ],
        parameters=dict(parameters or {}),
        tableType="MANAGED_TABLE",
    )


def storage_descriptor(location: str, columns: Sequence[tuple[str, str]], fmt: str) -> Any:
    """Build a ``StorageDescriptor`` the way Hive writes one for format ``fmt``."""
    input_format, serde = FORMATS[fmt]
    output_format = {
        "parquet": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        "orc": "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
        "text": "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
    }[fmt]
    return hms_thrift.StorageDescriptor(
        cols=[hms_thrift.FieldSchema(name=n, type=t, comment="") for n, t in columns],
        location=location,
        inputFormat=input_format,
        outputFormat=output_format,
        compressed=False,
        numBuckets=-1,
        serdeInfo=hms_thrift.SerDeInfo(
            name=None, serializationLib=serde, parameters={"serialization.format": "1"}
        ),
        bucketCols=[],
        sortCols=[],
        parameters={},
        # What HMS stores when none is given, so sent and read-back structs compare equal.
        skewedInfo=hms_thrift.SkewedInfo(skewedColNames=[], skewedColValues=[]),
        storedAsSubDirectories=False,
    )


def thrift_partitions(table: Any, values: Sequence[Sequence[str]]) -> list[Any]:
    """Build ``Partition`` structs of ``table`` (as made by ``thrift_table``) for add_partitions.

    Values are used verbatim in locations: pick ones that need no path escaping.
    """
    keys = [k.name for k in table.partitionKeys]
    parts = []
    for vals in values:
        path = "/".join(f"{k}={v}" for k, v in zip(keys, vals, strict=True))
        sd = storage_descriptor(
            f"{table.sd.location}/{path}",
            [(c.name, c.type) for c in table.sd.cols],
            _format_of(table),
        )
        parts.append(
            hms_thrift.Partition(
                values=list(vals),
                dbName=table.dbName,
                tableName=table.tableName,
                createTime=int(time.time()),
                lastAccessTime=0,
                sd=sd,
                parameters={},
            )
        )
    return parts


def _format_of(table: Any) -> str:
    return next(k for k, (fmt, _) in FORMATS.items() if fmt == table.sd.inputFormat)


# ---------------------------------------------------------------- fixtures


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & {"spark", "warehouse"}:
            item.add_marker(pytest.mark.spark)
        if names & {"hms", "hms_client", "spark", "warehouse", "hms_postgres"}:
            item.add_marker(pytest.mark.hms)
        if "hms_postgres" in names:
            item.add_marker(pytest.mark.postgres)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if MEASUREMENTS:
        terminalreporter.section("measured (real HMS / Spark)")
        for name, value in MEASUREMENTS.items():
            terminalreporter.write_line(f"{name}: {value}")


@pytest.fixture(scope="session")
def hms_cache_dir(pytestconfig: pytest.Config) -> Path:
    option = pytestconfig.getoption("hms_cache_dir", None)
    if option:
        return Path(option).resolve()
    assert pytestconfig.cache is not None
    return pytestconfig.cache.mkdir("catalogd-hms")


@pytest.fixture(scope="session")
def hms(
    tmp_path_factory: pytest.TempPathFactory, hms_cache_dir: Path
) -> Iterator[EmbeddedMetastore]:
    metastore = EmbeddedMetastore(tmp_path_factory.mktemp("hms"), cache_dir=hms_cache_dir)
    with metastore:
        record_measurement("HMS start (Derby)", metastore.startup_seconds or 0.0, "s")
        yield metastore


@pytest.fixture
def hms_client(hms: EmbeddedMetastore) -> Iterator[MetastoreClient]:
    with MetastoreClient(hms.uri, retries=1, backoff_s=0.05) as client:
        yield client


@pytest.fixture(scope="session")
def spark(hms: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    work = tmp_path_factory.mktemp("spark")
    log_conf = work / "log4j2.properties"
    log_conf.write_text(
        "rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\n"
        "appender.console.type = Console\nappender.console.name = console\n"
        "appender.console.target = SYSTEM_ERR\n"
        "appender.console.layout.type = PatternLayout\n"
        "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n\n"
    )
    # C1 only: the tests' queries are tiny, and it saves a few seconds of start-up.
    java_opts = f"-XX:TieredStopAtLevel=1 -Dlog4j.configurationFile=file:{log_conf}"
    started = time.monotonic()
    session = (
        SparkSession.builder.master("local[1]")
        .appName("catalogd-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.local.dir", str(work / "local"))
        .config("spark.pyspark.python", sys.executable)
        .config("spark.hadoop.hive.metastore.uris", hms.uri)
        .config("spark.sql.warehouse.dir", f"file:{hms.warehouse_dir}")
        .enableHiveSupport()
        .getOrCreate()
    )
    record_measurement("Spark session start", time.monotonic() - started, "s")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def warehouse(
    spark: Any, hms: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory
) -> WarehouseSpec:
    spec = populate_warehouse(spark, hms, tmp_path_factory.mktemp("external"))
    record_measurement("warehouse population", spec.timings["total_s"], "s")
    return spec


@pytest.fixture(scope="session")
def hms_postgres(
    tmp_path_factory: pytest.TempPathFactory, hms_cache_dir: Path
) -> Iterator[EmbeddedMetastore]:
    import psycopg

    database = f"catalogd_hms_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}"'.encode())
    try:
        metastore = EmbeddedMetastore(
            tmp_path_factory.mktemp("hms-pg"),
            backend=PostgresBackend(database=database),
            cache_dir=hms_cache_dir,
        )
        with metastore:
            record_measurement("HMS start (PostgreSQL)", metastore.startup_seconds or 0.0, "s")
            yield metastore
    finally:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'.encode())


def free_port() -> int:
    """A currently free loopback TCP port (for 'nothing listens here' tests)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


__all__ = [
    "DatabaseSpec",
    "FunctionSpec",
    "GrantSpec",
    "RoleSpec",
    "TableSpec",
    "WarehouseSpec",
    "create_roles_grants_functions",
    "free_port",
    "populate_warehouse",
    "thrift_partitions",
    "thrift_table",
]
