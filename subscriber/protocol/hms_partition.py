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

import copy
from typing import Any

import idl
from subscriber.protocol.keys import parse_partition_name

NAMES_FROM_TABLE = 1 << 28
VALUES_FROM_NAME = 1 << 29
LOCATION_FROM_PARTITION = 1 << 30
_SD_FIELDS = (1 << 28) - 1
_LOCATION_ID = next(
    fid
    for fid, spec in idl.hive_metastore.StorageDescriptor.thrift_spec.items()
    if spec[1] == "location"
)


def slim(table: Any, part: Any, partition_name: str, location: str) -> tuple[Any, int]:
    """A copy of HMS ``part`` without what :func:`rebuild` restores, and the bits saying what.

    ``partition_name`` and ``location`` are the values the partition object carries
    (``THdfsPartition.partition_name`` and ``location.suffix``).
    """
    kept = copy.copy(part)
    kept.parameters = None
    bits = 0
    sd, table_sd = getattr(part, "sd", None), getattr(table, "sd", None)
    if sd is not None:
        kept.sd = copy.copy(sd)
        if table_sd is not None:
            for fid, spec in type(sd).thrift_spec.items():
                value = getattr(sd, spec[1])
                if value is not None and value == getattr(table_sd, spec[1]):
                    setattr(kept.sd, spec[1], None)
                    bits |= 1 << fid
        if sd.location and sd.location == location and not bits & (1 << _LOCATION_ID):
            kept.sd.location = None
            bits |= LOCATION_FROM_PARTITION
    if part.dbName == table.dbName and part.tableName == table.tableName:
        kept.dbName = kept.tableName = None
        bits |= NAMES_FROM_TABLE
    values = list(part.values or [])
    if values and [v for _, v in parse_partition_name(partition_name)] == values:
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
    rebuilt = copy.copy(kept)
    rebuilt.parameters = dict(hdfs_partition.hms_parameters or {})
    if kept.sd is not None and (bits & _SD_FIELDS or bits & LOCATION_FROM_PARTITION):
        rebuilt.sd = copy.copy(kept.sd)
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
