"""Hive Metastore objects to Impala catalog objects (pure).

One HMS table becomes one ``TABLE`` (or ``VIEW``) object plus one
``HDFS_PARTITION`` object per partition, each under its own key, so a changed
partition is published alone. The table object carries the columns, the
partition columns, the HMS ``Table`` and an ``THdfsTable`` *without*
partitions (``has_full_partitions = false``): partitions are separate objects.

Conversions are deterministic (same HMS input, same bytes), which is what lets
an unchanged reload cost no version: ids are stable hashes of the object's
key, never counters.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import idl
from catalogd.conversion.partitions import PartitionConverter
from catalogd.conversion.storage import sorted_maps, storage_descriptor, table_stats
from catalogd.core.placeholders import stable_id
from subscriber.protocol import codec
from subscriber.protocol.hms_partition import NULL_PARTITION_VALUE
from subscriber.protocol.keys import (
    database_key,
    function_key,
    table_key,
)
from subscriber.protocol.table_columns import columns

co = idl.catalog_objects
T = co.TCatalogObjectType

VIEW_TYPES = frozenset({"VIRTUAL_VIEW", "MATERIALIZED_VIEW"})


def database_object(db: object) -> object:
    """A ``DATABASE`` catalog object for an HMS ``Database``."""
    sorted_maps(db)
    name = db.name.lower()  # type: ignore[attr-defined]
    return co.TCatalogObject(
        type=T.DATABASE, catalog_version=0, db=co.TDatabase(db_name=name, metastore_db=db)
    )


def is_view(table: object) -> bool:
    return getattr(table, "tableType", None) in VIEW_TYPES


def table_object(table: object, col_stats: dict[str, object] | None = None) -> tuple[str, object]:
    """The ``(key, TABLE or VIEW object)`` header of an HMS ``Table`` (no partitions).

    ``col_stats`` (``TColumnStats`` by lower-case column name, from
    :func:`catalogd.conversion.column_stats.column_stats`) go into ``TColumn.col_stats``.
    """
    sorted_maps(table)
    db = table.dbName.lower()  # type: ignore[attr-defined]
    name = table.tableName.lower()  # type: ignore[attr-defined]
    view = is_view(table)
    key = table_key(db, name, view=view)
    sd = table.sd  # type: ignore[attr-defined]
    data_cols = columns(getattr(sd, "cols", None))
    key_cols = columns(table.partitionKeys, start=len(data_cols))  # type: ignore[attr-defined]
    for col in data_cols + key_cols:
        col.col_stats = (col_stats or {}).get(col.columnName)
    ttable = co.TTable(
        db_name=db,
        tbl_name=name,
        access_level=co.TAccessLevel.READ_WRITE,
        columns=data_cols,
        clustering_columns=key_cols,
        table_stats=table_stats(table.parameters),  # type: ignore[attr-defined]
        table_type=co.TTableType.VIEW if view else co.TTableType.HDFS_TABLE,
        metastore_table=table,
        id=stable_id(table_key(db, name)),
    )
    if not view:
        ttable.hdfs_table = co.THdfsTable(
            hdfsBaseDir=getattr(sd, "location", "") or "",
            colNames=[c.columnName for c in key_cols + data_cols],
            nullPartitionKeyValue=NULL_PARTITION_VALUE,
            nullColumnValue="\\N",
            partitions={},
            has_full_partitions=False,
            has_partition_names=False,
            prototype_partition=co.THdfsPartition(
                partitionKeyExprs=[],
                id=co.PROTOTYPE_PARTITION_ID,
                hdfs_storage_descriptor=storage_descriptor(table, sd),
                location=co.THdfsPartitionLocation(prefix_index=-1, suffix=""),
            ),
        )
    kind = T.VIEW if view else T.TABLE
    return key, co.TCatalogObject(type=kind, catalog_version=0, table=ttable)


def table_objects(
    table: object,
    partitions: Iterable[object] = (),
    col_stats: dict[str, object] | None = None,
) -> dict[str, object]:
    """The header (with ``col_stats``, see :func:`table_object`) and every partition
    object of one table, by key."""
    key, header = table_object(table, col_stats)
    objects = {key: header}
    convert_partition = PartitionConverter(table)
    for part in partitions:
        part_key, obj = convert_partition(part)
        objects[part_key] = obj
    return objects


def encode_all(objects: dict[str, object]) -> dict[str, bytes]:
    """Encode catalog objects into the payloads the catalog core stores.

    Every object is checked as :func:`~subscriber.protocol.codec.encode` does,
    except partitions after the first: checking costs 2.5x the encoding itself,
    and every partition object comes from :class:`PartitionConverter`, which sets
    each required field whatever the metastore holds (the first one checked catches
    a wrong type; ``tests/unit/test_convert.py`` checks converted partitions).
    """
    payloads = {}
    checked_partition = False
    for key, obj in objects.items():
        check = not checked_partition or obj.type != T.HDFS_PARTITION  # type: ignore[attr-defined]
        payloads[key] = codec.encode_object(obj, check=check)
        checked_partition = checked_partition or obj.type == T.HDFS_PARTITION  # type: ignore[attr-defined]
    return payloads


def function_objects(functions: Iterable[Any]) -> dict[str, object]:
    """``FUNCTION`` objects (keyed ``FUNCTION:db.name()``) for HMS ``Function`` s: Java
    UDFs, whose class is the scalar symbol; the HMS struct rides in ``hms_function``."""
    objects: dict[str, object] = {}
    for fn in functions:
        db, name = fn.dbName.lower(), fn.functionName.lower()
        jars = [r.uri for r in fn.resourceUris or [] if r.uri]
        objects[function_key(db, name, "")] = co.TCatalogObject(
            type=T.FUNCTION,
            catalog_version=0,
            fn=co.Types.TFunction(
                name=co.Types.TFunctionName(db_name=db, function_name=name),
                binary_type=co.Types.TFunctionBinaryType.JAVA,
                arg_types=[],
                has_var_args=False,
                signature=f"{name}()",
                hdfs_location=jars[0] if jars else None,
                scalar_fn=co.Types.TScalarFunction(symbol=fn.className or ""),
                is_persistent=True,
                last_modified_time=fn.createTime,
                hms_function=fn,
            ),
        )
    return objects


def database_objects(db: object) -> dict[str, object]:
    return {database_key(db.name): database_object(db)}  # type: ignore[attr-defined]
