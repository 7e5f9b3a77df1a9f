"""Read tables in Spark through the subscriber's cached metadata: no HMS call.

::

    df = read_table(spark, sub, "sales.orders", partitions={"dt": "2024-01-01"})

The table's format, location, schema and (pruned) partition directories come
from the cache; Spark reads the files directly. PySpark is imported lazily, so
``subscriber`` still imports where PySpark is not installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import idl
from subscriber.protocol.errors import InvalidRequestError
from subscriber.protocol.files import partition_files
from subscriber.protocol.hive_types import type_name

co = idl.catalog_objects

_FORMATS = {
    co.THdfsFileFormat.PARQUET: "parquet",
    co.THdfsFileFormat.ORC: "orc",
    co.THdfsFileFormat.AVRO: "avro",
    co.THdfsFileFormat.JSON: "json",
    co.THdfsFileFormat.TEXT: "csv",
}


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """What Spark needs to read a table: format, options, schema (DDL) and paths."""

    format: str
    options: Mapping[str, str]
    schema_ddl: str
    paths: tuple[str, ...]
    base_path: str
    partitioned: bool


def _file_paths(location: str, part: Any) -> list[str] | None:
    files = partition_files(part)
    if files is None:
        return None
    base = location.rstrip("/")
    return [f"{base}/{f.relative_path}" for f in files]


def plan_scan(
    sub: Any,
    table: str,
    partitions: Mapping[str, str] | str | None = None,
    *,
    files: bool = False,
) -> ScanPlan:
    """Work out how to read ``table`` from the cache (pure; no Spark needed).

    With ``files`` and file metadata cached for every selected partition
    (tables that opted in, see :mod:`catalogd.files`), ``paths`` are the exact
    data files instead of the partition directories.

    Raises:
        NotFoundError: unknown table.
        InvalidRequestError: a view, an unsupported format, or a bad partition spec.
    """
    ttable = sub.get_table(table)
    if ttable.table_type == co.TTableType.VIEW:
        raise InvalidRequestError(
            f"{table} is a view (a query, no files to read): run "
            f'spark.sql("SELECT * FROM {table}") in a session whose '
            "spark.hadoop.hive.metastore.uris is the HMS or this subscriber's HMS endpoint "
            "(sub.metastore_endpoint(upstream).uri)"
        )
    if ttable.hdfs_table is None:
        raise InvalidRequestError(f"{table} has no storage to read: use spark.sql on it")
    sd = ttable.hdfs_table.prototype_partition.hdfs_storage_descriptor
    fmt = _FORMATS.get(sd.fileFormat)
    if fmt is None:
        raise InvalidRequestError(f"{table}: file format {sd.fileFormat} is not readable here")
    options: dict[str, str] = {}
    if fmt == "csv":
        options = {"sep": chr(sd.fieldDelim & 0xFF), "header": "false"}
    columns = list(ttable.columns or []) + list(ttable.clustering_columns or [])
    schema = ", ".join(f"`{c.columnName}` {type_name(c.columnType)}" for c in columns)
    base = ttable.hdfs_table.hdfsBaseDir
    if not ttable.clustering_columns:
        listed = _file_paths(base, ttable.hdfs_table.prototype_partition) if files else None
        return ScanPlan(fmt, options, schema, tuple(listed or (base,)), base, False)
    parts = sub.list_partitions(table, partitions)
    paths = tuple(p.location.suffix for p in parts)
    if files:
        each = [_file_paths(p.location.suffix, p) for p in parts]
        if all(f is not None for f in each):
            paths = tuple(path for f in each for path in f or ())
    return ScanPlan(fmt, options, schema, paths, base, True)


def read_table(
    spark: Any,
    sub: Any,
    table: str,
    partitions: Mapping[str, str] | str | None = None,
    *,
    files: bool = False,
) -> Any:
    """A DataFrame over ``table``'s files, pruned to ``partitions`` (a partial spec).

    Partition columns come from the partition directories (``k=v``), as Spark
    infers them under ``basePath``. ``files=True`` hands Spark the cached
    file list instead of directories where the cache has one (see
    docs/STATS.md for when that is faster).
    """
    plan = plan_scan(sub, table, partitions, files=files)
    reader = spark.read.format(plan.format).options(**plan.options).schema(plan.schema_ddl)
    if not plan.paths:
        return spark.createDataFrame([], plan.schema_ddl)
    if plan.partitioned:
        reader = reader.option("basePath", plan.base_path)
    return reader.load(list(plan.paths))


def register_temp_view(spark: Any, sub: Any, table: str, view_name: str | None = None) -> str:
    """Register ``table`` (all partitions) as a temporary view; returns its name."""
    name = view_name or table.replace(".", "_")
    read_table(spark, sub, table).createOrReplaceTempView(name)
    return name
