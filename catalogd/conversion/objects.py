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

import re
from collections.abc import Iterable
from typing import Any

import idl
from catalogd.core.placeholders import stable_id
from subscriber.protocol import codec, hms_partition
from subscriber.protocol.errors import InvalidRequestError
from subscriber.protocol.hive_types import column_type
from subscriber.protocol.keys import (
    database_key,
    escape_partition_value,
    function_key,
    partition_key,
    table_key,
    unescape_partition_value,
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


def sorted_maps(struct: Any) -> Any:
    """Put the parameter maps of an HMS ``Database``/``Table``/``Partition`` (and of its
    storage descriptor and SerDe) in key order, in place; returns ``struct``.

    HMS answers in Java ``HashMap`` order, the SQL source in another: sorted, the
    same metadata encodes to the same bytes whichever source read it.
    """
    sd = getattr(struct, "sd", None)
    for holder in (struct, sd, getattr(sd, "serdeInfo", None)):
        params = getattr(holder, "parameters", None)
        if holder is not None and params and len(params) > 1:
            holder.parameters = dict(sorted(params.items()))
    return struct


def database_object(db: object) -> object:
    """A ``DATABASE`` catalog object for an HMS ``Database``."""
    sorted_maps(db)
    name = db.name.lower()  # type: ignore[attr-defined]
    return co.TCatalogObject(
        type=T.DATABASE, catalog_version=0, db=co.TDatabase(db_name=name, metastore_db=db)
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
            digits = value.lstrip("-")
            if digits.isascii() and digits.isdigit():  # ("²".isdigit(), but int() refuses it)
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


_INTEGER = re.compile(r"[+-]?[0-9]{1,19}")
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def parse_i64(text: str | None) -> int | None:
    """An integer as HMS and Spark write one (ASCII digits, an optional sign) that fits
    Thrift's ``i64``; None for anything else. Parameters and partition values are
    anyone's text: ``int()`` would take ``" 1_0"`` and ``"²"`` raises, and a value
    beyond ``i64`` would make the whole object unencodable."""
    if text is None:
        return None
    if len(text) < 19 and text.isascii() and text.isdigit():  # the usual case, fits i64
        return int(text)
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if I64_MIN <= value <= I64_MAX else None


def _count(params: dict[str, str], *names: str) -> int | None:
    # The first known (non-negative) count: HMS keeps numRows=-1 for tables
    # Spark analyzed, whose counts are only in spark.sql.statistics.*.
    for name in names:
        value = parse_i64(params.get(name))
        if value is not None and value >= 0:
            return value
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
        number = parse_i64(value)
        if number is not None:
            node.node_type = Exprs.TExprNodeType.INT_LITERAL
            node.int_literal = Exprs.TIntLiteral(value=number)
        else:
            node.node_type = Exprs.TExprNodeType.STRING_LITERAL
            node.string_literal = Exprs.TStringLiteral(value=value)
    elif scalar is not None and scalar.type == P.BOOLEAN and value.lower() in ("true", "false"):
        node.node_type = Exprs.TExprNodeType.BOOL_LITERAL
        node.bool_literal = Exprs.TBoolLiteral(value=value.lower() == "true")
    else:
        node.node_type = Exprs.TExprNodeType.STRING_LITERAL
        node.string_literal = Exprs.TStringLiteral(value=value)
    return Exprs.TExpr(nodes=[node])


class PartitionConverter:
    """Makes the ``(key, HDFS_PARTITION object)`` of each HMS ``Partition`` of one table.

    A table's partitions share most of what goes into their objects, so one
    converter per table remembers it: the escaped form of each partition value,
    the literal expression of each (column, value), the Impala storage descriptor
    of each SerDe setting, and whether a shared column list equals the table's.
    The result for a partition never depends on what was converted before
    (``tests/unit/test_convert.py`` checks it); sharing just makes a large table
    about twice as fast to convert. The shared ``TExpr`` and ``THdfsStorageDescriptor``
    structs are read-only.

    Raises (when called): InvalidRequestError, a partition whose number of values
    is not the table's number of partition columns.
    """

    def __init__(self, table: object, key_types: list[object] | None = None) -> None:
        self.table = table
        self.db = table.dbName.lower()  # type: ignore[attr-defined]
        self.name = table.tableName.lower()  # type: ignore[attr-defined]
        keys = table.partitionKeys or []  # type: ignore[attr-defined]
        self.columns = [k.name for k in keys]
        self.key_types = key_types or [column_type(k.type) for k in keys]
        self._escaped_columns = [escape_partition_value(c.lower()) for c in self.columns]
        self._escaped: dict[str, tuple[str, bool]] = {}  # value -> (escaped, round-trips)
        self._literals: dict[tuple[int, str], object] = {}
        self._descriptors: dict[tuple[Any, ...], object] = {}
        self._same_memo: dict[int, tuple[Any, bool]] = {}

    def _escape(self, value: str) -> tuple[str, bool]:
        known = self._escaped.get(value)
        if known is None:
            escaped = escape_partition_value(value)
            known = self._escaped[value] = (escaped, unescape_partition_value(escaped) == value)
        return known

    def _literal(self, index: int, value: str) -> object:
        literal = self._literals.get((index, value))
        if literal is None:
            literal = self._literals[(index, value)] = _literal(value, self.key_types[index])
        return literal

    def _descriptor(self, sd: Any) -> object:
        serde = getattr(sd, "serdeInfo", None)
        params = getattr(serde, "parameters", None) or {}
        memo = (
            sd is None,
            getattr(sd, "inputFormat", None),
            getattr(serde, "serializationLib", None),
            tuple(params.items()),
        )
        descriptor = self._descriptors.get(memo)
        if descriptor is None:
            descriptor = self._descriptors[memo] = storage_descriptor(self.table, sd)
        return descriptor

    def __call__(self, part: Any) -> tuple[str, object]:
        sorted_maps(part)
        values = part.values
        if len(values) != len(self.columns):
            raise InvalidRequestError(
                f"{len(values)} partition values for {len(self.columns)} partition columns"
            )
        escaped = [self._escape(v) for v in values]
        part_name = "/".join(
            f"{c}={e}" for c, (e, _) in zip(self._escaped_columns, escaped, strict=True)
        )
        key = partition_key(self.db, self.name, part_name)
        sd = part.sd
        location = co.THdfsPartitionLocation(
            prefix_index=-1, suffix=getattr(sd, "location", "") or ""
        )
        params = part.parameters
        obj = co.THdfsPartition(
            partitionKeyExprs=[self._literal(i, v) for i, v in enumerate(values)],
            location=location,
            id=stable_id(key),
            access_level=co.TAccessLevel.READ_WRITE,
            stats=_stats(params),
            is_marked_cached=False,
            hms_parameters=dict(params or {}),
            db_name=self.db,
            tbl_name=self.name,
            partition_name=part_name,
            hdfs_storage_descriptor=self._descriptor(sd),
        )
        obj.hms_partition, obj.hms_sd_inherited = hms_partition.slim(
            self.table,
            part,
            part_name,
            location.suffix,
            values_from_name=all(round_trips for _, round_trips in escaped),
            memo=self._same_memo,
        )
        return key, co.TCatalogObject(type=T.HDFS_PARTITION, catalog_version=0, hdfs_partition=obj)


def partition_object(
    table: object, part: object, key_types: list[object] | None = None
) -> tuple[str, object]:
    """The ``(key, HDFS_PARTITION object)`` for one HMS ``Partition`` of ``table``
    (for many, use one :class:`PartitionConverter`)."""
    return PartitionConverter(table, key_types)(part)


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
