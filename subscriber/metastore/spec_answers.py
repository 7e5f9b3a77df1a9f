"""``get_partitions_pspec`` answered from a cache view, as HMS 2.3, 3.1 and 4.0 build it
(pure).

A handler group of :class:`~subscriber.metastore.answers.CacheAnswers` (shared
lookups: :class:`~subscriber.metastore.lookups.Lookups`). What HMS 2.3.10 does, read
in its ``HiveMetaStore.HMSHandler`` (``get_partitions_pspec``,
``get_partitionspecs_grouped_by_storage_descriptor``, ``getSharedSDPartSpec``,
``StorageDescriptorKey``) and checked against it
(``tests/integration/test_hms_endpoint_specs.py``):

* the database and table names are lower-cased, the table read (missing:
  ``NoSuchObjectException``), and its partitions listed as ``get_partitions`` lists
  them, with ``max_parts`` cast to a Java ``short`` first (65536 is 0: none; 100000
  is negative: all);
* unless the table parameter ``hive.hcatalog.partition.spec.grouping.enabled`` is
  ``true`` (any case), the answer is one ``PartitionSpec`` of every partition in full
  (``partitionList``), named by the lower-cased arguments, ``rootPath`` the table's
  location;
* with grouping, partitions whose location *starts with* the table's location (a
  string prefix) are grouped by (input format, output format, serde library,
  columns); each group becomes a ``PartitionSpec`` with a shared SD (the group's first
  partition's SD, its location replaced by the table's) and ``PartitionWithoutSD``
  rows (location relative to the table's); the others follow in one
  ``partitionList`` spec without ``rootPath``. Groups come in Java ``HashMap`` order:
  two or more groups are forwarded, not guessed.

HMS 3.1.3 and 4.0.1 do the same, checked against both, but name the ungrouped spec
from the database argument as parsed (``@cat#db`` or ``db``): 3.1 sets ``catName`` to
the catalog as spelt (else the default ``hive``) and ``dbName`` as given, 4.0 both
lower-cased; 4.0 also names the grouped specs' catalog. The cache sees the name after
:func:`~subscriber.metastore.catalogs.unqualify`, which forwards this call when the
catalog is not spelt ``hive``. Until the upstream's version is known (2.x, 3.x or 4.x:
:mod:`~subscriber.metastore.dialect`) the call is forwarded.
"""

from __future__ import annotations

import copy
from typing import Any

import idl
from subscriber.cache import CacheView
from subscriber.metastore.catalogs import DEFAULT_CATALOG
from subscriber.metastore.framing import success_struct
from subscriber.metastore.lookups import Handler, Lookups
from subscriber.metastore.shapes import Forward, struct_list
from subscriber.protocol import codec, hms_partition
from subscriber.protocol.binary import LIST
from subscriber.protocol.delta import Entry

__all__ = ["GROUPING_PARAMETER", "SpecAnswers", "java_short", "sd_group_key"]

hms = idl.hive_metastore

GROUPING_PARAMETER = "hive.hcatalog.partition.spec.grouping.enabled"


def java_short(value: int) -> int:
    """``(short) value`` in Java: the low 16 bits, signed."""
    return ((value + 0x8000) & 0xFFFF) - 0x8000


def sd_group_key(sd: Any) -> tuple[Any, ...]:
    """What HMS 2.3 groups partitions' SDs by (input and output format, serde library,
    columns). At least as fine as HMS's key (a string of those fields), so two SDs
    with one key here share one there too.

    Raises:
        Forward: no SD or no serde info (HMS fails on a null pointer).
    """
    if sd is None or sd.serdeInfo is None:
        raise Forward("a partition without SD or serde info: HMS's own error")
    cols = None if sd.cols is None else tuple((c.name, c.type, c.comment) for c in sd.cols)
    return (sd.inputFormat, sd.outputFormat, sd.serdeInfo.serializationLib, cols)


class SpecAnswers:
    """The partition-spec handlers over shared :class:`Lookups`."""

    def __init__(self, lookups: Lookups) -> None:
        self._lookups = lookups

    def handlers(self) -> dict[str, Handler]:
        return {"get_partitions_pspec": self._get_partitions_pspec}

    def _get_partitions_pspec(self, view: CacheView, args: Any) -> bytes:
        reads_catalogs = self._lookups.upstream_reads_catalogs  # HMS 3.1+
        hms4 = self._lookups.upstream_serves_requests
        if reads_catalogs is None or (reads_catalogs and hms4 is None):
            raise Forward("the upstream HMS's version is not known yet")
        db, name = args.db_name or "", args.tbl_name or ""
        if not (db.isascii() and name.isascii()):
            raise Forward("non-ASCII names: Java's toLowerCase")  # the spec repeats them
        table, rows = self._lookups.partitioned(view, db, name)
        limit = java_short(-1 if args.max_parts is None else args.max_parts)
        selected = rows.rows if limit < 0 else rows.rows[:limit]  # as get_partitions
        partitions = [self._partition(table, entry) for entry in rows.entries(selected)]
        if _grouping_enabled(table):
            specs = _grouped(table, partitions, DEFAULT_CATALOG if hms4 else None)
        else:
            if table.sd is None:
                raise Forward("a table without SD: HMS's own error")
            specs = [
                hms.PartitionSpec(
                    dbName=db if reads_catalogs and not hms4 else db.lower(),
                    tableName=name.lower(),
                    rootPath=table.sd.location,
                    partitionList=hms.PartitionListComposingSpec(partitions=partitions),
                    catName=DEFAULT_CATALOG if reads_catalogs else None,
                )
            ]
        items = [codec.encode(spec, check=False) for spec in specs]
        return success_struct(LIST, struct_list(items))

    def _partition(self, table: Any, entry: Entry) -> Any:
        rebuilt = hms_partition.rebuild(table, self._lookups.decode(entry).hdfs_partition)
        if rebuilt is None:
            raise Forward("partition kept without its HMS struct")
        return rebuilt


def _grouping_enabled(table: Any) -> bool:
    if table.parameters is None:
        raise Forward("a table without parameters: HMS's own error")
    value = table.parameters.get(GROUPING_PARAMETER)
    return value is not None and value.isascii() and value.lower() == "true"


def _grouped(table: Any, partitions: list[Any], catalog: str | None) -> list[Any]:
    """HMS's grouped specs (see the module docstring); ``catalog``: their ``catName``
    (HMS 4 names it, 2.3 and 3.1 do not)."""
    root = table.sd.location if table.sd is not None else None
    if root is None:
        raise Forward("a table without location: HMS's own error")
    under: list[Any] = []
    others: list[Any] = []
    for part in partitions:
        location = part.sd.location if part.sd is not None else None
        if location is None:
            raise Forward("a partition without location: HMS's own error")
        (under if location.startswith(root) else others).append(part)
    specs = []
    if under:
        if len({sd_group_key(part.sd) for part in under}) > 1:
            raise Forward("two or more SD groups: HMS lists them in Java HashMap order")
        shared_sd = copy.copy(under[0].sd)
        shared_sd.location = root
        rows = [
            hms.PartitionWithoutSD(
                values=part.values,
                createTime=part.createTime or 0,
                lastAccessTime=part.lastAccessTime or 0,
                relativePath=part.sd.location[len(root) :],
                parameters=part.parameters,
            )
            for part in under
        ]
        specs.append(
            hms.PartitionSpec(
                dbName=table.dbName,
                tableName=table.tableName,
                rootPath=root,
                sharedSDPartitionSpec=hms.PartitionSpecWithSharedSD(partitions=rows, sd=shared_sd),
                catName=catalog,
            )
        )
    if others:
        specs.append(
            hms.PartitionSpec(
                dbName=table.dbName,
                tableName=table.tableName,
                partitionList=hms.PartitionListComposingSpec(partitions=others),
                catName=catalog,
            )
        )
    return specs
