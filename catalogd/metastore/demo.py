"""A small demo warehouse, created through HMS Thrift calls (no Spark needed).

``catalogd serve --demo`` uses it so one command on a fresh machine shows a
catalog with a database, a partitioned Parquet table, an unpartitioned table
and a view. Idempotent: existing objects are left alone.
"""

from __future__ import annotations

import time
from typing import Any

import idl
from catalogd.metastore.client import MetastoreClient
from subscriber.protocol.errors import NotFoundError

hms = idl.hive_metastore

DEMO_DB = "demo"
_PARQUET = (
    "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
    "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
    "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
)


def _sd(cols: list[tuple[str, str]], location: str) -> Any:
    return hms.StorageDescriptor(
        cols=[hms.FieldSchema(name=n, type=t, comment="") for n, t in cols],
        location=location,
        inputFormat=_PARQUET[0],
        outputFormat=_PARQUET[1],
        compressed=False,
        numBuckets=-1,
        serdeInfo=hms.SerDeInfo(name="", serializationLib=_PARQUET[2], parameters={}),
        bucketCols=[],
        sortCols=[],
        parameters={},
    )


def _table(
    name: str, cols: list[tuple[str, str]], keys: list[tuple[str, str]], location: str
) -> Any:
    now = int(time.time())
    return hms.Table(
        tableName=name,
        dbName=DEMO_DB,
        owner="catalogd",
        createTime=now,
        lastAccessTime=0,
        retention=0,
        sd=_sd(cols, location),
        partitionKeys=[hms.FieldSchema(name=n, type=t, comment="") for n, t in keys],
        parameters={"EXTERNAL": "TRUE"},
        tableType="EXTERNAL_TABLE",
    )


def create_demo_warehouse(client: MetastoreClient, warehouse: str) -> bool:
    """Create the demo database and its objects; False when it already existed."""
    try:
        client.get_database(DEMO_DB)
        return False
    except NotFoundError:
        pass
    raw = client.raw
    base = f"{warehouse.rstrip('/')}/{DEMO_DB}.db"
    raw.create_database(
        hms.Database(name=DEMO_DB, description="catalogd demo", locationUri=base, parameters={})
    )
    events = _table(
        "events",
        [("id", "bigint"), ("kind", "string"), ("payload", "string")],
        [("dt", "string"), ("region", "string")],
        f"{base}/events",
    )
    raw.create_table(events)
    parts = []
    for day in ("2026-11-20", "2026-11-21", "2026-11-22"):
        for region in ("eu", "us"):
            location = f"{base}/events/dt={day}/region={region}"
            parts.append(
                hms.Partition(
                    values=[day, region],
                    dbName=DEMO_DB,
                    tableName="events",
                    createTime=int(time.time()),
                    lastAccessTime=0,
                    sd=_sd([("id", "bigint"), ("kind", "string"), ("payload", "string")], location),
                    parameters={},
                )
            )
    raw.add_partitions(parts)
    raw.create_table(_table("users", [("id", "bigint"), ("name", "string")], [], f"{base}/users"))
    view = _table("recent_events", [("id", "bigint"), ("kind", "string")], [], "")
    view.tableType = "VIRTUAL_VIEW"
    view.parameters = {}
    view.viewOriginalText = "SELECT id, kind FROM demo.events WHERE dt >= '2026-11-21'"
    view.viewExpandedText = (
        "SELECT `events`.`id`, `events`.`kind` FROM `demo`.`events` "
        "WHERE `events`.`dt` >= '2026-11-21'"
    )
    view.sd.inputFormat = view.sd.outputFormat = None
    view.sd.serdeInfo = hms.SerDeInfo(name="", serializationLib=None, parameters={})
    raw.create_table(view)
    return True
