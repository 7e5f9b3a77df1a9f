"""The test warehouse: what it holds (``WarehouseSpec`` and the specs of its objects)
and :func:`populate_warehouse`, which makes it in a real HMS with Spark SQL the way
users do (databases, Parquet/ORC/text tables, a view, partitions, rows) plus roles,
grants and a function over Thrift where Spark cannot; tests assert object by object
against the spec.
"""

from __future__ import annotations

import getpass
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import idl
from catalogd.hms.builders import FORMATS
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore

hms_thrift = idl.hive_metastore


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
