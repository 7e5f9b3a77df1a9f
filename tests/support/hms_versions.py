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


def populate_catalogs(uri: str, warehouse: str, prefix: str) -> None:
    """Write what only HMS 3.1 and 4.x hold, after :func:`populate`: a second catalog
    (``other``) with a database named as one of the default catalog's (``PREFIX_a``)
    and a table of its own; a table owned by a role whose SerDe has the 3.x fields
    (description, serializer and deserializer classes, type)."""
    from catalogd.hms.client import MetastoreClient

    with MetastoreClient(uri) as client:
        raw = client.raw
        catalog = hms.Catalog(name="other", locationUri=f"{warehouse}/other")
        raw.create_catalog(hms.CreateCatalogRequest(catalog=catalog))
        raw.create_database(
            hms.Database(
                name=f"{prefix}_a",
                locationUri=f"{warehouse}/other/{prefix}_a.db",
                parameters={"in": "other"},
                catalogName="other",
            )
        )
        elsewhere = thrift_table(
            f"{prefix}_a", "in_other", f"{warehouse}/other/in_other", columns=[("z", "int")]
        )
        elsewhere.catName = "other"
        raw.create_table(elsewhere)
        described = thrift_table(
            f"{prefix}_b", "described", f"{warehouse}/described", columns=[("x", "int")],
            fmt="text",
        )  # fmt: skip
        serde = described.sd.serdeInfo
        serde.description, serde.serdeType = "a described SerDe", hms.SerdeType.HIVE
        serde.serializerClass, serde.deserializerClass = "com.example.Ser", "com.example.De"
        described.owner, described.ownerType = ROLE, hms.PrincipalType.ROLE
        raw.create_table(described)


def populate_v4(uri: str, warehouse: str, prefix: str, backend: Backend) -> None:
    """What HMS 4.x answers differently, after :func:`populate`: column statistics of
    another engine (``impala``) beside Hive's on ``PREFIX_a.ext`` (HMS answers a request
    naming no engine with Hive's), and a full-ACID table ``PREFIX_b.acid`` with sort and
    bucket columns, descriptor and SerDe parameters and skew (HMS 4 sends its descriptor
    stripped of them).

    A standalone HMS refuses to create an ACID table (it checks the formats against
    classes of ``hive-exec``, which it lacks), so the table is created plain and its two
    transactional parameters are then written into ``TABLE_PARAMS`` as HMS would have
    stored them: what is tested is how HMS reads such a table back.
    """
    from catalogd.hms.client import MetastoreClient

    desc = hms.ColumnStatisticsDesc(isTblLevel=True, dbName=f"{prefix}_a", tableName="ext")
    data = hms.LongColumnStatsData(lowValue=-100, highValue=100, numNulls=5, numDVs=9)
    stats = hms.ColumnStatistics(
        statsDesc=desc,
        engine="impala",
        statsObj=[
            hms.ColumnStatisticsObj(
                colName="x", colType="int", statsData=hms.ColumnStatisticsData(longStats=data)
            )
        ],
    )
    acid = thrift_table(
        f"{prefix}_b", "acid", f"{warehouse}/acid", columns=[("x", "int"), ("y", "string")],
        fmt="orc", partition_keys=[("p", "string")], serde_parameters={"sp": "1"},
    )  # fmt: skip
    acid.sd.parameters = {"sdp": "1"}
    acid.sd.sortCols = [hms.Order(col="x", order=1)]
    acid.sd.bucketCols, acid.sd.numBuckets = ["x"], 2
    acid.sd.skewedInfo = hms.SkewedInfo(
        skewedColNames=["y"], skewedColValues=[["a"]], skewedColValueLocationMaps={}
    )
    with MetastoreClient(uri) as client:
        request = hms.SetPartitionsStatsRequest(colStats=[stats], engine="impala")
        client.raw.update_table_column_statistics_req(request)
        client.raw.create_table(acid)
        client.raw.add_partitions(thrift_partitions(acid, [["a"], ["b"]]))
    find = 'SELECT "TBL_ID" FROM "TBLS" WHERE "TBL_NAME" = %s'
    insert = 'INSERT INTO "TABLE_PARAMS" VALUES (%s, %s, %s), (%s, %s, %s)'
    rows = ("transactional", "TRUE", "transactional_properties", "Default")
    if isinstance(backend, PostgresBackend):
        import psycopg

        with psycopg.connect(backend.conninfo, autocommit=True) as conn:
            row = conn.execute(find.encode(), ("acid",)).fetchone()
            assert row is not None
            conn.execute(insert.encode(), (row[0], *rows[:2], row[0], *rows[2:]))
    elif isinstance(backend, MariaDbBackend):
        import pymysql

        conn = pymysql.connect(
            host=backend.host, port=backend.port, user=backend.user,
            password=backend.password, database=backend.database, autocommit=True,
        )  # fmt: skip
        with conn, conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')")
            cur.execute(find, ("acid",))
            (tbl_id,) = cur.fetchone()
            cur.execute(insert, (tbl_id, *rows[:2], tbl_id, *rows[2:]))
