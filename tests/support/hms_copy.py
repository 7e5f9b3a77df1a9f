"""Copy a metastore's catalog into another HMS over Thrift, the way Spark made it.

The test session has one Spark session, bound to the Derby-backed ``hms``; a
second metastore (PostgreSQL- or MariaDB-backed, whose database catalogd can
read by SQL) gets the same Spark-made databases, tables, partitions, roles,
grants and functions by :func:`copy_catalog`, which sends HMS the structs
Spark's calls left in the first one (Spark only ever reaches HMS through these
same Thrift calls). :func:`add_odd_objects` then adds what the warehouse lacks:
names and values with spaces, unicode, ``=`` and ``/``, and NULL partition values.
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from typing import Any

import idl
from catalogd.conversion.grants import fetch_grants, grant_holders
from catalogd.hms.client import MetastoreClient
from catalogd.sources import ThriftSource

hms = idl.hive_metastore

NULL_VALUE = "__HIVE_DEFAULT_PARTITION__"
ODD_VALUES = (
    ("a=b/c", "x y"),
    ("ünï cödé", "%25 #?"),
    (NULL_VALUE, "eu"),
    ("2024-01-01", NULL_VALUE),
)


def copy_catalog(
    source: MetastoreClient, target: MetastoreClient, databases: Collection[str] | None = None
) -> None:
    """Create every database, table, partition, role, grant and function of ``source``
    (except the ``default`` database itself) in ``target``; with ``databases``, only
    those databases and what is in them or granted on them (the session's HMS also holds
    every other test's databases). Blocks; not idempotent."""
    names = [n for n in source.get_all_databases() if databases is None or n in databases]
    dbs, tables = [], []
    for name in names:
        dbs.append(db := source.get_database(name))
        if name != "default":
            target.call("create_database", db)
        for table in source.get_table_objects_by_name(name, source.get_all_tables(name)):
            tables.append(table)
            target.call("create_table", table)
            if table.partitionKeys:
                parts = list(ThriftSource(source).partitions(name, table.tableName))
                if parts:
                    target.call("add_partitions", parts)
    user = hms.PrincipalType.USER
    roles = [r for r in source.get_role_names() if r not in target.get_role_names()]
    for role in roles:
        target.call("create_role", hms.Role(roleName=role, ownerName="admin"))
    for role in source.get_role_names():
        for m in source.get_principals_in_role(role):
            if role in roles:
                target.call(
                    "grant_role", role, m.principalName, m.principalType, "admin", user, False
                )
    refs: list[tuple[str, str | None]] = [(name, None) for name in names]
    refs.extend((t.dbName, t.tableName) for t in tables)
    principals = _owners(dbs, tables) | grant_holders(ThriftSource(source), refs)
    grants = fetch_grants(source, sorted(principals))
    wanted = [
        p
        for p in grants.privileges
        if p.hiveObject.objectType != hms.HiveObjectType.GLOBAL and p.hiveObject.dbName in names
    ]
    existing = {
        _grant_key(p)
        for name, kind in grants.probed
        for p in target.list_privileges(name, getattr(hms.PrincipalType, kind))
    }
    bag = [p for p in {_grant_key(p): p for p in wanted}.values() if _grant_key(p) not in existing]
    if bag:
        target.call("grant_privileges", hms.PrivilegeBag(privileges=bag))
    for func in source.get_all_functions():
        if func.dbName in names:
            target.call("create_function", func)


def _owners(dbs: list[Any], tables: list[Any]) -> set[tuple[str, str]]:
    """The (name, kind) owners of HMS databases and tables, as ``owners_of`` finds them
    in catalog objects (HMS 2.3 tables have user owners only)."""
    kinds = hms.PrincipalType._VALUES_TO_NAMES
    owners = {(d.ownerName, kinds.get(d.ownerType, "USER")) for d in dbs if d.ownerName}
    return owners | {(t.owner, "USER") for t in tables if t.owner}


def _grant_key(p: Any) -> tuple[Any, ...]:
    ref = p.hiveObject
    return (
        p.principalName,
        p.principalType,
        ref.objectType,
        ref.dbName,
        ref.objectName,
        tuple(ref.partValues or ()),
        ref.columnName,
        p.grantInfo.privilege,
    )


def add_odd_objects(target: MetastoreClient, warehouse_uri: str) -> None:
    """Add database ``odd`` with a partitioned table ``t`` whose partitions carry
    ``=``, ``/``, spaces, unicode and NULL values, a column comment in unicode,
    and a grant on a partition column (dropped by the conversion)."""
    target.call(
        "create_database",
        hms.Database(
            name="odd",
            description="ünïcödé, spaces and = / in values",
            locationUri=f"{warehouse_uri}/odd.db",
            parameters={"k=1": "v/1", "ключ": "значение"},
            ownerName="analysts",
            ownerType=hms.PrincipalType.GROUP,
        ),
    )
    serde = hms.SerDeInfo(
        name="odd serde",
        serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
        parameters={"field.delim": "|", "serialization.format": "|"},
    )
    sd = hms.StorageDescriptor(
        cols=[
            hms.FieldSchema(name="id", type="bigint", comment="ïd"),
            hms.FieldSchema(name="note", type="string", comment=None),
        ],
        location=f"{warehouse_uri}/odd.db/t",
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        compressed=False,
        numBuckets=4,
        serdeInfo=serde,
        bucketCols=["id"],
        sortCols=[hms.Order(col="id", order=1)],
        parameters={"sd param": "x"},
        skewedInfo=hms.SkewedInfo(skewedColNames=[], skewedColValues=[]),
        storedAsSubDirectories=False,
    )
    table = hms.Table(
        tableName="t",
        dbName="odd",
        owner="alice",
        createTime=1700000000,
        lastAccessTime=0,
        retention=0,
        sd=sd,
        partitionKeys=[
            hms.FieldSchema(name="k", type="string", comment="key with = and /"),
            hms.FieldSchema(name="r", type="string", comment=None),
        ],
        parameters={"comment": "odd table", "EXTERNAL": "FALSE"},
        tableType="MANAGED_TABLE",
    )
    target.call("create_table", table)
    parts = []
    for values in ODD_VALUES:
        part_sd = copy.deepcopy(sd)
        part_sd.location = None  # HMS puts it under the table's location
        parts.append(
            hms.Partition(
                values=list(values),
                dbName="odd",
                tableName="t",
                createTime=1700000001,
                lastAccessTime=0,
                sd=part_sd,
                parameters={"numFiles": "1", "totalSize": "10", "note": "ünï"},
            )
        )
    target.call("add_partitions", parts)
    # HMS's own column statistics (TAB_COL_STATS), as Hive's ANALYZE writes them.
    desc = hms.ColumnStatisticsDesc(isTblLevel=True, dbName="odd", tableName="t")
    data = hms.ColumnStatisticsData
    stats = [
        hms.ColumnStatisticsObj(
            colName="id",
            colType="bigint",
            statsData=data(
                longStats=hms.LongColumnStatsData(lowValue=-3, highValue=99, numNulls=1, numDVs=7)
            ),
        ),
        hms.ColumnStatisticsObj(
            colName="note",
            colType="string",
            statsData=data(
                stringStats=hms.StringColumnStatsData(
                    maxColLen=12, avgColLen=4.5, numNulls=0, numDVs=3
                )
            ),
        ),
    ]
    target.call(
        "update_table_column_statistics", hms.ColumnStatistics(statsDesc=desc, statsObj=stats)
    )
