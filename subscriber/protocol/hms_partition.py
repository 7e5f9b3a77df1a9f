"""The HMS ``Partition`` kept inside ``THdfsPartition.hms_partition``, slimmed and rebuilt.

An HMS endpoint answers partition calls with the struct HMS itself returned, so
catalogd keeps it in each partition object; most of it repeats what the object
or its table already hold, and a million partitions pay for every byte in each
subscriber. :func:`slim` leaves out what can be rebuilt exactly, and records
what it left out in ``hms_sd_inherited``; :func:`rebuild` puts it back:

* ``parameters``: always (they are ``THdfsPartition.hms_parameters``);
* each ``sd`` field equal to the table's ``sd``: bit ``1 << field id``;
* ``dbName`` and ``tableName`` equal to the table's: :data:`NAMES_FROM_TABLE`;
* ``values``, when parsing ``partition_name`` gives them back exactly:
  :data:`VALUES_FROM_NAME`;
* ``sd.location`` equal to ``THdfsPartition.location.suffix``: :data:`LOCATION_FROM_PARTITION`.

Pure: no I/O. Both catalogd (slimming, in conversion) and the subscriber's HMS
endpoint (rebuilding) use this module, so the two cannot disagree.
"""

from __future__ import annotations

from typing import Any

import idl
from subscriber.protocol.keys import parse_partition_name

NULL_PARTITION_VALUE = "__HIVE_DEFAULT_PARTITION__"
"""The value Hive writes into a partition name for a NULL partition key (HMS's
``hive.exec.default.partition.name`` default); HMS casts it back to NULL."""

NAMES_FROM_TABLE = 1 << 28
VALUES_FROM_NAME = 1 << 29
LOCATION_FROM_PARTITION = 1 << 30
_SD_FIELDS = (1 << 28) - 1
_SD_SPEC = tuple(
    (fid, spec[1]) for fid, spec in idl.hive_metastore.StorageDescriptor.thrift_spec.items()
)
_LOCATION_ID = next(fid for fid, name in _SD_SPEC if name == "location")
_SCALARS = frozenset({str, int, bool})


def _copy(struct: Any) -> Any:
    """A shallow copy of a thriftpy2 struct (its fields live in ``__dict__``), 5x cheaper
    than ``copy.copy``."""
    kept = object.__new__(type(struct))
    kept.__dict__.update(struct.__dict__)
    return kept


def _same(value: Any, table_value: Any, memo: dict[int, tuple[Any, bool]] | None) -> bool:
    """``value == table_value``, remembered by ``id(value)`` in ``memo`` (which keeps
    ``value`` alive, so the id cannot be reused): partitions read together share their
    column lists and SerDe structs, and comparing those costs one ``__eq__`` per item."""
    if value is table_value:
        return True
    if memo is None or isinstance(value, str | int):
        return bool(value == table_value)
    seen = memo.get(id(value))
    if seen is None or seen[0] is not value:
        seen = memo[id(value)] = (value, value == table_value)
    return seen[1]


def slim(
    table: Any,
    part: Any,
    partition_name: str,
    location: str,
    *,
    values_from_name: bool | None = None,
    memo: dict[int, tuple[Any, bool]] | None = None,
) -> tuple[Any, int]:
    """A copy of HMS ``part`` without what :func:`rebuild` restores, and the bits saying what.

    ``partition_name`` and ``location`` are the values the partition object carries
    (``THdfsPartition.partition_name`` and ``location.suffix``). Callers converting
    many partitions of one table may pass ``values_from_name`` (whether parsing
    ``partition_name`` gives back ``part.values``, which they know from memoized
    escapes) and one ``memo`` dict for all of them; the result is the same.
    """
    kept = _copy(part)
    kept.parameters = None
    bits = 0
    sd, table_sd = getattr(part, "sd", None), getattr(table, "sd", None)
    if sd is not None:
        kept.sd = kept_sd = _copy(sd)
        if table_sd is not None:
            # The struct dicts directly, and _same's common answers inline (scalars, and
            # empty lists and maps, which every partition has its own of): this loop runs
            # 12 times per partition of a load.
            fields, table_fields, kept_fields = sd.__dict__, table_sd.__dict__, kept_sd.__dict__
            for fid, name in _SD_SPEC:
                value = fields.get(name)
                if value is None:
                    continue
                table_value = table_fields.get(name)
                if value is table_value or (
                    value == table_value
                    if memo is None or not value or type(value) in _SCALARS
                    else _same(value, table_value, memo)
                ):
                    kept_fields[name] = None
                    bits |= 1 << fid
        if sd.location and sd.location == location and not bits & (1 << _LOCATION_ID):
            kept_sd.location = None
            bits |= LOCATION_FROM_PARTITION
    if part.dbName == table.dbName and part.tableName == table.tableName:
        kept.dbName = kept.tableName = None
        bits |= NAMES_FROM_TABLE
    values = part.values
    if values:
        if values_from_name is None:
            values_from_name = [v for _, v in parse_partition_name(partition_name)] == list(values)
        if values_from_name:
            kept.values = None
            bits |= VALUES_FROM_NAME
    return kept, bits


def rebuild(table: Any, hdfs_partition: Any) -> Any:
    """The HMS ``Partition`` as HMS returned it, from a ``THdfsPartition`` and its table's
    HMS ``Table``; None when the object keeps no HMS struct."""
    kept = hdfs_partition.hms_partition
    if kept is None:
        return None
    bits = hdfs_partition.hms_sd_inherited or 0
    rebuilt = _copy(kept)
    rebuilt.parameters = dict(hdfs_partition.hms_parameters or {})
    if kept.sd is not None and (bits & _SD_FIELDS or bits & LOCATION_FROM_PARTITION):
        rebuilt.sd = _copy(kept.sd)
        if bits & _SD_FIELDS and table.sd is not None:
            for fid, spec in type(kept.sd).thrift_spec.items():
                if bits >> fid & 1:
                    setattr(rebuilt.sd, spec[1], getattr(table.sd, spec[1]))
        if bits & LOCATION_FROM_PARTITION:
            rebuilt.sd.location = hdfs_partition.location.suffix
    if bits & NAMES_FROM_TABLE:
        rebuilt.dbName, rebuilt.tableName = table.dbName, table.tableName
    if bits & VALUES_FROM_NAME:
        rebuilt.values = [v for _, v in parse_partition_name(hdfs_partition.partition_name)]
    return rebuilt
