"""HMS 2.3 / 3.1 / 4.x side by side: a catalog written over Thrift, read back raw.

:func:`backend_for` makes a fresh PostgreSQL or MariaDB database for one embedded
HMS (``drop`` removes it); :func:`populate` writes one catalog with every kind of
object catalogd loads (databases, a partitioned table with typed keys, an external
table, a view, partitions, column statistics, functions, a role, grants) through
plain HMS Thrift calls that every version has; :class:`RawHms` reads HMS back the
way each version allows (4.0 has no ``get_table``/``get_table_objects_by_name``:
``get_table_req``), with thriftpy2 directly, never through catalogd's client: it is
the oracle the tests compare catalogd's cache with.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import idl
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.embedded import Backend, DerbyBackend, MariaDbBackend, PostgresBackend

hms = idl.hive_metastore
POSTGRES_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres connect_timeout=10"
KEYS = [("dt", "string"), ("n", "int")]
VALUES = [["2024-01-01", "1"], ["2024-01-01", "2"], ["2024-01-02", "1"], ["x y/=", "7"]]
ROLE = "vrole"
MARIADB_USER = "catalogd_hms"


def backend_for(kind: str) -> Backend:
    """A fresh, empty database of ``kind`` (derby, postgres, mariadb) for one HMS."""
    name = f"catalogd_hmsv_{secrets.token_hex(4)}"
    if kind == "postgres":
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"'.encode())
        return PostgresBackend(database=name)
    if kind == "mariadb":
        import pymysql

        # HMS (and its schematool) cannot log in without a password.
        conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", autocommit=True)
        with conn, conn.cursor() as cur:
            cur.execute(f"CREATE USER IF NOT EXISTS '{MARIADB_USER}'@'%' IDENTIFIED BY 'hms'")
            cur.execute(f"GRANT ALL ON `{name}`.* TO '{MARIADB_USER}'@'%'")
        return MariaDbBackend(database=name, user=MARIADB_USER, password="hms")  # made by HMS
    return DerbyBackend()


def drop(backend: Backend) -> None:
    """Drop the database :func:`backend_for` made (nothing for Derby)."""
    if isinstance(backend, PostgresBackend):
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{backend.database}" WITH (FORCE)'.encode())
    elif isinstance(backend, MariaDbBackend):
        import pymysql

        conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", autocommit=True)
        with conn, conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{backend.database}`")


class RawHms:
    """thriftpy2 straight to HMS, with the calls ``version`` has (the test oracle)."""

    def __init__(self, uri: str, version: str) -> None:
        from catalogd.hms.client import MetastoreClient

        self._client = MetastoreClient(uri)
        self.raw = self._client.raw
        self.version = version

    def close(self) -> None:
        self._client.close()

    def table(self, db: str, name: str) -> Any:
        if self.version == "4.x":
            return self.raw.get_table_req(hms.GetTableRequest(dbName=db, tblName=name)).table
        return self.raw.get_table(db, name)

    def tables(self, db: str) -> list[Any]:
        names = self.raw.get_all_tables(db)
        if self.version == "4.x":
            request = hms.GetTablesRequest(dbName=db, tblNames=names)
            return list(self.raw.get_table_objects_by_name_req(request).tables)
        return list(self.raw.get_table_objects_by_name(db, names))

    def partitions(self, db: str, name: str) -> list[Any]:
        return list(self.raw.get_partitions(db, name, -1))

    def column_stats(self, db: str, name: str, columns: list[str]) -> list[Any]:
        request = hms.TableStatsRequest(dbName=db, tblName=name, colNames=columns)
        return list(self.raw.get_table_statistics_req(request).tableStats)


def populate(uri: str, warehouse: str, prefix: str) -> list[str]:
    """Write the catalog (databases ``PREFIX_a``/``PREFIX_b``) over Thrift; their names."""
    from catalogd.hms.client import MetastoreClient

    user, role = hms.PrincipalType.USER, hms.PrincipalType.ROLE
    a, b = f"{prefix}_a", f"{prefix}_b"
    with MetastoreClient(uri) as client:
        raw = client.raw
        for name in (a, b):
            raw.create_database(
                hms.Database(
                    name=name,
                    description=f"db {name}",
                    locationUri=f"{warehouse}/{name}.db",
                    parameters={"k": "v", "ünï": "cödé"},
                    ownerName="alice",
                    ownerType=user,
                )
            )
        parts = thrift_table(
            a, "events", f"{warehouse}/{a}.db/events", columns=[("id", "bigint"), ("v", "string")],
            partition_keys=KEYS, parameters={"p": "1"},
        )  # fmt: skip
        external = thrift_table(
            a, "ext", f"{warehouse}/ext", columns=[("x", "int")], fmt="text",
            table_type="EXTERNAL_TABLE", parameters={"EXTERNAL": "TRUE"},
        )  # fmt: skip
        view = thrift_table(a, "v", "", columns=[("id", "bigint")], table_type="VIRTUAL_VIEW")
        view.sd.location = None
        view.viewOriginalText = view.viewExpandedText = f"select id from {a}.events"
        other = thrift_table(b, "t", f"{warehouse}/{b}.db/t", columns=[("x", "int")], fmt="orc")
        for table in (parts, external, view, other):
            raw.create_table(table)
        raw.add_partitions(thrift_partitions(parts, VALUES))
        desc = hms.ColumnStatisticsDesc(isTblLevel=True, dbName=a, tableName="ext")
        long_stats = hms.LongColumnStatsData(lowValue=-3, highValue=99, numNulls=1, numDVs=7)
        stats = hms.ColumnStatistics(
            statsDesc=desc,
            statsObj=[
                hms.ColumnStatisticsObj(
                    colName="x",
                    colType="int",
                    statsData=hms.ColumnStatisticsData(longStats=long_stats),
                )
            ],
        )
        raw.update_table_column_statistics(stats)
        for db, fn in ((a, "upper2"), (b, "lower2")):
            raw.create_function(
                hms.Function(
                    functionName=fn, dbName=db, className=f"com.example.{fn}", ownerName="o",
                    ownerType=user, createTime=1700000000, functionType=hms.FunctionType.JAVA,
                    resourceUris=[
                        hms.ResourceUri(resourceType=hms.ResourceType.JAR, uri="file:/x.jar")
                    ],
                )
            )  # fmt: skip
        raw.create_role(hms.Role(roleName=ROLE, createTime=0, ownerName="admin"))
        raw.grant_role(ROLE, "bob", user, "admin", user, False)
        refs = [
            hms.HiveObjectRef(objectType=hms.HiveObjectType.DATABASE, dbName=a),
            hms.HiveObjectRef(objectType=hms.HiveObjectType.TABLE, dbName=a, objectName="events"),
        ]
        raw.grant_privileges(
            hms.PrivilegeBag(
                privileges=[
                    hms.HiveObjectPrivilege(
                        hiveObject=ref,
                        principalName=ROLE,
                        principalType=role,
                        grantInfo=hms.PrivilegeGrantInfo(
                            privilege="SELECT",
                            createTime=int(time.time()),
                            grantor="admin",
                            grantorType=user,
                            grantOption=False,
                        ),
                    )  # fmt: skip
                    for ref in refs
                ]
            )
        )
    return [a, b]
