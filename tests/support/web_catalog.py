"""Catalogs built in memory for the web page's tests and benchmark: a database whose
comment, parameters, table comments, view text and partition values are hostile
HTML, a partitioned table of any size, and many small tables."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import idl
from catalogd.conversion.objects import database_objects, encode_all, table_objects
from catalogd.core.catalog import Catalog
from catalogd.state.values import AuditRecord
from catalogd.web.census import Census, Counted

hms = idl.hive_metastore

EVIL = "<script>window.__pwned=1</script>"
_MARK = "QXQXQX"


def _table(db: str, name: str, *, keys: int = 1, comment: str = "", view: str = "") -> object:
    cols = [
        hms.FieldSchema(name="id", type="bigint", comment=EVIL),
        hms.FieldSchema(name="amount", type="decimal(10,2)", comment=""),
    ]
    return hms.Table(
        tableName=name,
        dbName=db,
        owner="etl",
        sd=hms.StorageDescriptor(
            cols=cols,
            location=f"file:/w/{db}/{name}",
            inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
            serdeInfo=hms.SerDeInfo(serializationLib="parquet", parameters={}),
            parameters={},
        ),
        partitionKeys=[hms.FieldSchema(name=f"k{i}", type="string") for i in range(keys)]
        if not view
        else [],
        parameters={"comment": comment, "transient_lastDdlTime": "1", "x": EVIL},
        tableType="VIRTUAL_VIEW" if view else "MANAGED_TABLE",
        viewOriginalText=view or None,
        viewExpandedText=view or None,
    )


def _partition(db: str, name: str, value: str) -> object:
    return hms.Partition(
        values=[value],
        dbName=db,
        tableName=name,
        sd=hms.StorageDescriptor(
            cols=[], location=f"file:/w/{db}/{name}/k0={value}", parameters={}
        ),
        parameters={"numRows": "10", "totalSize": "1000", "note": EVIL},
    )


def _partitions(db: str, name: str, count: int) -> dict[str, bytes]:
    """``count`` partitions (the last one's value hostile). One is converted; the others
    are its bytes with the six-digit value replaced (same length, so still valid):
    fast enough for 100,000 in a test."""
    if count == 0:
        return {}
    evil = encode_all(table_objects(_table(db, name), [_partition(db, name, EVIL)]))
    payloads = {k: v for k, v in evil.items() if k.startswith("HDFS_PARTITION:")}
    template = encode_all(table_objects(_table(db, name), [_partition(db, name, _MARK)]))
    key, payload = next((k, v) for k, v in template.items() if k.startswith("HDFS_PARTITION:"))
    for i in range(count - 1):
        value = f"{i:06d}"
        payloads[key.replace(_MARK, value)] = payload.replace(_MARK.encode(), value.encode())
    return payloads


def build(
    *,
    partitions: int = 20,
    small_tables: int = 3,
    databases: int = 1,
    catalog: Catalog | None = None,
) -> Catalog:
    """Database ``sales`` (hostile comment) with ``orders`` (``partitions`` partitions,
    one of them with a hostile value), a view ``v`` and ``small_tables`` tables
    ``t00000``...; plus ``databases - 1`` databases ``db001``... of small tables."""
    catalog = Catalog() if catalog is None else catalog
    objects: dict[str, object] = {}
    objects.update(
        database_objects(
            hms.Database(
                name="sales", description=EVIL, locationUri="file:/w/sales", parameters={"p": EVIL}
            )
        )
    )
    header = table_objects(_table("sales", "orders", comment=EVIL))
    objects.update(header)
    catalog.commit(encode_all(objects))
    catalog.commit(_partitions("sales", "orders", partitions))
    objects = {}
    objects.update(table_objects(_table("sales", "v", view=f"select '{EVIL}'")))
    for i in range(small_tables):
        objects.update(table_objects(_table("sales", f"t{i:05d}", keys=0)))
    catalog.commit(encode_all(objects))
    for d in range(1, databases):
        more: dict[str, object] = {}
        db = f"db{d:03d}"
        more.update(database_objects(hms.Database(name=db, description="", parameters={})))
        for i in range(small_tables):
            more.update(table_objects(_table(db, f"t{i:05d}", keys=0)))
        catalog.commit(encode_all(more))
    return catalog


class FakeSources:
    """The pages' sources over an in-memory catalog (no server thread)."""

    def __init__(self, catalog: Catalog, *, started: bool = True, role: str | None = None):
        self.catalog, self._started, self._role = catalog, started, role

    def read(self, fn: Any) -> Any:
        return fn(self.catalog)

    def status(self) -> dict[str, Any]:
        return {
            "version": self.catalog.version,
            "service_id": "abc",
            "objects": self.catalog.counts_by_type(),
            "loading": {
                "done": False,
                "tables_loaded": 3,
                "tables_known": 4,
                "partitions_loaded": 50,
                "partitions_known": 200,
                "tables_per_s": 1.0,
                "partitions_per_s": 10.0,
                "elapsed_s": 5.0,
                "eta_s": 15.0,
            },
            "hms": {"address": "thrift://h:9083", "healthy": True},
            "hms_checked_s_ago": 1.5,
            "loader": {"slowest": [{"db": "sales", "table": EVIL, "seconds": 2.5}]},
            "subscribers": {
                EVIL: {
                    "applied_version": 3,
                    "last_report_age_s": 0.5,
                    "live": True,
                    "key": None,
                    "databases": "sales",
                }
            },
        }

    def ha(self) -> dict[str, Any] | None:
        return {"role": self._role, "epoch": 7, "active": {}} if self._role else None

    def census(self) -> Counted:
        return Census(self.read, chunk=100).sweep()

    def audit(self, limit: int) -> list[Any]:
        at = datetime(2026, 1, 1, tzinfo=timezone.utc)
        return [AuditRecord(1, at, "refresh", {"table": EVIL}, "alice", "ok", 12)]

    def metrics_text(self) -> bytes:
        return b"catalogd_catalog_version 1\n"

    def memory(self) -> dict[str, int | None]:
        return {"rss": 1 << 20}

    def started(self) -> bool:
        return self._started
