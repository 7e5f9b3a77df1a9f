"""The benchmark catalog: realistic HMS structs, and the catalog objects made from them.

Tables look like what Spark makes for ``CREATE TABLE ... PARTITIONED BY (dt, region)
STORED AS PARQUET``: five data columns, two string partition columns, a Hive
Parquet storage descriptor per partition, and partition statistics in the
parameters. The same structs are written into a real HMS (:mod:`support.hms`) and,
for benchmarks that must not be limited by HMS speed, converted in memory with
:mod:`catalogd.conversion.objects` exactly as the loader converts what HMS returns.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Sequence
from typing import Any

import idl
from catalogd.conversion import objects as convert
from catalogd.hms.builders import thrift_partitions, thrift_table

hms = idl.hive_metastore

DB = "bench"
COLUMNS = (
    ("id", "bigint"),
    ("customer", "string"),
    ("amount", "decimal(12,2)"),
    ("ts", "timestamp"),
    ("payload", "string"),
)
PARTITION_KEYS = (("dt", "string"), ("region", "string"))
FIRST_DAY = datetime.date(2024, 1, 1)
# A fixed time keeps conversions deterministic across runs (cached payloads stay valid).
EPOCH = 1_735_689_600


def dt_value(i: int) -> str:
    return (FIRST_DAY + datetime.timedelta(days=i)).isoformat()


def region_value(j: int) -> str:
    return f"region-{j:03d}"


def partition_values(dts: int, regions: int) -> list[tuple[str, str]]:
    """``dts * regions`` value pairs, dt-major (the order a daily job adds them)."""
    return [(dt_value(i), region_value(j)) for i in range(dts) for j in range(regions)]


def database(warehouse: str) -> Any:
    """The ``Database`` struct of the benchmark database."""
    return hms.Database(
        name=DB,
        description="catalogd benchmark data",
        locationUri=f"{warehouse}/{DB}.db",
        parameters={},
    )


def table(name: str, warehouse: str) -> Any:
    """A partitioned Parquet ``Table`` struct ``bench.<name>`` located under ``warehouse``."""
    t = thrift_table(
        DB,
        name,
        f"{warehouse}/{DB}.db/{name}",
        columns=COLUMNS,
        partition_keys=PARTITION_KEYS,
        fmt="parquet",
        owner="bench",
        parameters={"transient_lastDdlTime": str(EPOCH), "spark.sql.create.version": "4.3.0"},
    )
    t.createTime = EPOCH
    return t


def partitions(tbl: Any, values: Sequence[tuple[str, ...]], *, start: int = 0) -> list[Any]:
    """``Partition`` structs of ``tbl`` for ``values``, with Spark-like statistics."""
    parts = thrift_partitions(tbl, values)
    for i, part in enumerate(parts, start):
        part.createTime = EPOCH
        part.parameters = {
            "numFiles": "1",
            "numRows": str(10_000 + i * 7 % 5_000),
            "totalSize": str(1_048_576 + i * 13 % 65_536),
            "transient_lastDdlTime": str(EPOCH + i),
        }
    return parts


def table_payloads(name: str, warehouse: str, dts: int, regions: int) -> dict[str, bytes]:
    """Encoded catalog objects (header and partitions, by key) of one benchmark table."""
    tbl = table(name, warehouse)
    objects = convert.table_objects(tbl, partitions(tbl, partition_values(dts, regions)))
    return convert.encode_all(objects)


def catalog_payloads(
    tables: int, dts: int, regions: int, *, warehouse: str = "file:/warehouse"
) -> Iterator[dict[str, bytes]]:
    """The database object, then each table's payloads (``t0000``, ``t0001``, ...)."""
    yield convert.encode_all(convert.database_objects(database(warehouse)))
    for i in range(tables):
        yield table_payloads(table_name(i), warehouse, dts, regions)


def table_name(i: int) -> str:
    return f"t{i:04d}"
