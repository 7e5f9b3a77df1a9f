"""HMS Thrift structs built the way Hive and Spark write them (pure).

:func:`thrift_table` makes a ``Table`` in a Hive serde format (``FORMATS``:
parquet, orc, text), :func:`thrift_partitions` its ``Partition`` structs and
:func:`storage_descriptor` the ``StorageDescriptor`` of either. The demo warehouse
(:mod:`catalogd.hms.demo`), the tests and the benchmarks create their
tables in a real HMS with these.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import idl

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


def thrift_table(
    db: str,
    name: str,
    location: str,
    *,
    columns: Sequence[tuple[str, str]],
    partition_keys: Sequence[tuple[str, str]] = (),
    fmt: str = "parquet",
    owner: str = "catalogd",
    parameters: dict[str, str] | None = None,
    table_type: str = "MANAGED_TABLE",
    serde_parameters: dict[str, str] | None = None,
) -> Any:
    """Build a Hive ``Table`` struct (Hive serde format ``fmt``) for create_table."""
    return hms_thrift.Table(
        tableName=name,
        dbName=db,
        owner=owner,
        createTime=int(time.time()),
        lastAccessTime=0,
        retention=0,
        sd=storage_descriptor(location, columns, fmt, serde_parameters),
        partitionKeys=[
            hms_thrift.FieldSchema(name=n, type=t, comment="") for n, t in partition_keys
        ],
        parameters=dict(parameters or {}),
        tableType=table_type,
    )


def storage_descriptor(
    location: str,
    columns: Sequence[tuple[str, str]],
    fmt: str,
    serde_parameters: dict[str, str] | None = None,
) -> Any:
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
            name=None,
            serializationLib=serde,
            parameters=dict(serde_parameters or {"serialization.format": "1"}),
        ),
        bucketCols=[],
        sortCols=[],
        parameters={},
        # What HMS stores when none is given, so sent and read-back structs compare equal.
        skewedInfo=hms_thrift.SkewedInfo(
            skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={}
        ),
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
            dict(table.sd.serdeInfo.parameters or {}),
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
