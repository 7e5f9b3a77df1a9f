"""HMS partitions as Impala ``HDFS_PARTITION`` objects (pure).

:class:`PartitionConverter` makes the object of each partition of one table,
sharing what the table's partitions have in common; each partition value also
becomes a literal expression typed like its column (:func:`_literal`), with
Hive's null partition value as a ``NULL`` literal.
"""

from __future__ import annotations

from typing import Any

import idl
from catalogd.conversion.storage import parse_i64, sorted_maps, storage_descriptor, table_stats
from catalogd.core.placeholders import stable_id
from subscriber.protocol import hms_partition
from subscriber.protocol.errors import InvalidRequestError
from subscriber.protocol.hive_types import column_type
from subscriber.protocol.hms_partition import NULL_PARTITION_VALUE
from subscriber.protocol.keys import escape_partition_value, partition_key, unescape_partition_value

co = idl.catalog_objects
Exprs = co.Exprs
T = co.TCatalogObjectType


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
            stats=table_stats(params),
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
