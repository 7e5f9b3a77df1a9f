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

import hashlib
from collections.abc import Iterable
from typing import Any

import idl
from subscriber.protocol import codec, hms_partition
from subscriber.protocol.hive_types import column_type
from subscriber.protocol.keys import (
    database_key,
    function_key,
    make_partition_name,
    partition_key,
    table_key,
)

co = idl.catalog_objects
Exprs = co.Exprs
T = co.TCatalogObjectType

NULL_PARTITION_VALUE = "__HIVE_DEFAULT_PARTITION__"
VIEW_TYPES = frozenset({"VIRTUAL_VIEW", "MATERIALIZED_VIEW"})

# Hive input formats (and Spark datasource providers) to Impala file formats.
_INPUT_FORMATS = {
    "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat": co.THdfsFileFormat.PARQUET,
    "parquet.hive.DeprecatedParquetInputFormat": co.THdfsFileFormat.PARQUET,
    "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat": co.THdfsFileFormat.ORC,
    "org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat": co.THdfsFileFormat.AVRO,
    "org.apache.hadoop.mapred.SequenceFileInputFormat": co.THdfsFileFormat.SEQUENCE_FILE,
    "org.apache.hadoop.hive.ql.io.RCFileInputFormat": co.THdfsFileFormat.RC_FILE,
    "org.apache.hadoop.mapred.TextInputFormat": co.THdfsFileFormat.TEXT,
}
_PROVIDERS = {
    "parquet": co.THdfsFileFormat.PARQUET,
    "orc": co.THdfsFileFormat.ORC,
    "avro": co.THdfsFileFormat.AVRO,
    "json": co.THdfsFileFormat.JSON,
    "csv": co.THdfsFileFormat.TEXT,
    "text": co.THdfsFileFormat.TEXT,
}
_JSON_SERDES = ("JsonSerDe",)


def stable_id(key: str) -> int:
    """A positive 63-bit id derived from an object key (stable across reloads)."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") >> 1


def sorted_maps(struct: Any) -> Any:
    """Put the parameter maps of an HMS ``Database``/``Table``/``Partition`` (and of its
    storage descriptor and SerDe) in key order, in place; returns ``struct``.

    HMS answers in Java ``HashMap`` order, the SQL source in another: sorted, the
    same metadata encodes to the same bytes whichever source read it.
    """
    sd = getattr(struct, "sd", None)
    for holder in (struct, sd, getattr(sd, "serdeInfo", None)):
        params = getattr(holder, "parameters", None)
        if holder is not None and params:
            holder.parameters = dict(sorted(params.items()))
    return struct


def database_object(db: object) -> object:
    """A ``DATABASE`` catalog object for an HMS ``Database``."""
    sorted_maps(db)
    name = db.name.lower()  # type: ignore[attr-defined]
    return co.TCatalogObject(
        type=T.DATABASE, catalog_version=0, db=co.TDatabase(db_name=name, metastore_db=db)
    )


def unloaded_table_object(db: str, name: str) -> object:
    """A placeholder ``TABLE`` object: only the name is known (lazy loading)."""
    return co.TCatalogObject(
        type=T.TABLE,
        catalog_version=0,
        table=co.TTable(
            db_name=db.lower(),
            tbl_name=name.lower(),
            table_type=co.TTableType.UNLOADED_TABLE,
            id=stable_id(table_key(db, name)),
        ),
    )


def is_view(table: object) -> bool:
    return getattr(table, "tableType", None) in VIEW_TYPES


def file_format(table: object, sd: object | None) -> int:
    """The Impala file format of a table or partition storage descriptor."""
    provider = (
        (getattr(table, "parameters", None) or {}).get("spark.sql.sources.provider") or ""
    ).lower()
    if provider in _PROVIDERS:
        return _PROVIDERS[provider]
    if sd is None:
        return co.THdfsFileFormat.TEXT
    serde = getattr(getattr(sd, "serdeInfo", None), "serializationLib", None) or ""
    if serde.endswith(_JSON_SERDES):
        return co.THdfsFileFormat.JSON
    return _INPUT_FORMATS.get(getattr(sd, "inputFormat", None) or "", co.THdfsFileFormat.TEXT)


def _delimiter(params: dict[str, str], names: tuple[str, ...], default: int) -> int:
    for name in names:
        value = params.get(name)
        if value:
            if value.lstrip("-").isdigit():
                return int(value) if -128 <= int(value) < 128 else default
            return ord(value[0]) if ord(value[0]) < 128 else default
    return default


def storage_descriptor(table: object, sd: object | None) -> object:
    params = dict(getattr(getattr(sd, "serdeInfo", None), "parameters", None) or {})
    return co.THdfsStorageDescriptor(
        lineDelim=_delimiter(params, ("line.delim",), ord("\n")),
        fieldDelim=_delimiter(params, ("field.delim", "serialization.format"), 1),
        # Hive's own key is misspelt; accept both.
        collectionDelim=_delimiter(params, ("collection.delim", "colelction.delim"), 2),
        mapKeyDelim=_delimiter(params, ("mapkey.delim",), 3),
        escapeChar=_delimiter(params, ("escape.delim",), 0),
        quoteChar=_delimiter(params, ("quote.delim",), 0),
        fileFormat=file_format(table, sd),
        blockSize=0,
    )


def _columns(fields: Iterable[Any] | None, start: int = 0) -> list[Any]:
    return [
        co.TColumn(
            columnName=f.name.lower(),  # type: ignore[attr-defined]
            columnType=column_type(f.type),  # type: ignore[attr-defined]
            comment=getattr(f, "comment", None),
            position=start + i,
        )
        for i, f in enumerate(fields or ())
    ]


def _count(params: dict[str, str], *names: str) -> int | None:
    # The first known (non-negative) count: HMS keeps numRows=-1 for tables
    # Spark analyzed, whose counts are only in spark.sql.statistics.*.
    for name in names:
        value = params.get(name)
        if value and value.isdigit():
            return int(value)
    return None


def _stats(params: dict[str, str] | None) -> object:
    params = params or {}
    rows = _count(params, "numRows", "spark.sql.statistics.numRows")
    return co.TTableStats(
        num_rows=rows if rows is not None else -1,
        total_file_bytes=_count(params, "totalSize", "spark.sql.statistics.totalSize"),
    )


def _literal(value: str, col_type: object) -> object:
    """A one-node literal TExpr for one partition value, typed like its column."""
    node = Exprs.TExprNode(type=col_type, num_children=0, is_constant=True)
    scalar = col_type.types[0].scalar_type  # type: ignore[attr-defined]
    P = co.Types.TPrimitiveType
    if value == NULL_PARTITION_VALUE:
        node.node_type = Exprs.TExprNodeType.NULL_LITERAL
    elif scalar is not None and scalar.type in (P.TINYINT, P.SMALLINT, P.INT, P.BIGINT):
        try:
            node.node_type = Exprs.TExprNodeType.INT_LITERAL
            node.int_literal = Exprs.TIntLiteral(value=int(value))
        except ValueError:
            node.node_type = Exprs.TExprNodeType.STRING_LITERAL
            node.string_literal = Exprs.TStringLiteral(value=value)
    elif scalar is not None and scalar.type == P.BOOLEAN and value.lower() in ("true", "false"):
        node.node_type = Exprs.TExprNodeType.BOOL_LITERAL
        node.bool_literal = Exprs.TBoolLiteral(value=value.lower() == "true")
    else:
        node.node_type = Exprs.TExprNodeType.STRING_LITERAL
        node.string_literal = Exprs.TStringLiteral(value=value)
    return Exprs.TExpr(nodes=[node])


def partition_object(
    table: object, part: object, key_types: list[object] | None = None
) -> tuple[str, object]:
    """The ``(key, HDFS_PARTITION object)`` for one HMS ``Partition`` of ``table``."""
    sorted_maps(part)
    db = table.dbName.lower()  # type: ignore[attr-defined]
    name = table.tableName.lower()  # type: ignore[attr-defined]
    keys = table.partitionKeys or []  # type: ignore[attr-defined]
    types_ = key_types or [column_type(k.type) for k in keys]
    part_name = make_partition_name([k.name for k in keys], list(part.values))  # type: ignore[attr-defined]
    key = partition_key(db, name, part_name)
    sd = part.sd  # type: ignore[attr-defined]
    obj = co.THdfsPartition(
        partitionKeyExprs=[_literal(v, t) for v, t in zip(part.values, types_, strict=True)],  # type: ignore[attr-defined]
        location=co.THdfsPartitionLocation(
            prefix_index=-1, suffix=getattr(sd, "location", "") or ""
        ),
        id=stable_id(key),
        access_level=co.TAccessLevel.READ_WRITE,
        stats=_stats(part.parameters),  # type: ignore[attr-defined]
        is_marked_cached=False,
        hms_parameters=dict(part.parameters or {}),  # type: ignore[attr-defined]
        db_name=db,
        tbl_name=name,
        partition_name=part_name,
        hdfs_storage_descriptor=storage_descriptor(table, sd),
    )
    obj.hms_partition, obj.hms_sd_inherited = hms_partition.slim(
        table, part, part_name, obj.location.suffix
    )
    return key, co.TCatalogObject(type=T.HDFS_PARTITION, catalog_version=0, hdfs_partition=obj)


def table_object(table: object, col_stats: dict[str, object] | None = None) -> tuple[str, object]:
    """The ``(key, TABLE or VIEW object)`` header of an HMS ``Table`` (no partitions).

    ``col_stats`` (``TColumnStats`` by lower-case column name, from
    :func:`catalogd.metastore.column_stats.column_stats`) go into ``TColumn.col_stats``.
    """
    sorted_maps(table)
    db = table.dbName.lower()  # type: ignore[attr-defined]
    name = table.tableName.lower()  # type: ignore[attr-defined]
    view = is_view(table)
    key = table_key(db, name, view=view)
    sd = table.sd  # type: ignore[attr-defined]
    data_cols = _columns(getattr(sd, "cols", None))
    key_cols = _columns(table.partitionKeys, start=len(data_cols))  # type: ignore[attr-defined]
    for col in data_cols + key_cols:
        col.col_stats = (col_stats or {}).get(col.columnName)
    ttable = co.TTable(
        db_name=db,
        tbl_name=name,
        access_level=co.TAccessLevel.READ_WRITE,
        columns=data_cols,
        clustering_columns=key_cols,
        table_stats=_stats(table.parameters),  # type: ignore[attr-defined]
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
    key_types = [column_type(k.type) for k in (table.partitionKeys or [])]  # type: ignore[attr-defined]
    for part in partitions:
        part_key, obj = partition_object(table, part, key_types)
        objects[part_key] = obj
    return objects


def encode_all(objects: dict[str, object]) -> dict[str, bytes]:
    """Encode catalog objects into the payloads the catalog core stores."""
    return {key: codec.encode_object(obj) for key, obj in objects.items()}


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
