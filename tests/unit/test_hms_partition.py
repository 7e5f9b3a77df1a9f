"""The HMS Partition kept in partition objects is slimmed and rebuilt exactly."""

from __future__ import annotations

import copy

import pytest

import idl
from catalogd.conversion import partitions
from catalogd.hms.builders import thrift_partitions, thrift_table
from subscriber.protocol import codec, hms_partition

VALUES = [
    ["2024-01-01", "eu"],
    ["a b/c=d", "ünï"],  # escaped in the partition name, exact in values
    ["__HIVE_DEFAULT_PARTITION__", "x:y%z"],
]


@pytest.mark.parametrize("values", VALUES)
def test_rebuild_gives_back_what_hms_returned(values: list[str]) -> None:
    table = thrift_table(
        "sales", "orders", "file:/w/sales.db/orders",
        columns=[("id", "bigint")], partition_keys=[("dt", "string"), ("region", "string")],
    )  # fmt: skip
    (part,) = thrift_partitions(table, [values])
    part.parameters = {"numFiles": "3", "transient_lastDdlTime": "17"}
    original = copy.deepcopy(part)
    _, obj = partitions.partition_object(table, part)
    kept = obj.hdfs_partition.hms_partition
    # Names, values, location, parameters and the sd fields shared with the table are left out.
    assert kept.dbName is None and kept.values is None and kept.parameters is None
    assert kept.sd.location is None and kept.sd.cols is None
    decoded = codec.decode_object(codec.encode_object(obj)).hdfs_partition
    rebuilt = hms_partition.rebuild(table, decoded)
    assert rebuilt == original
    assert codec.encode(rebuilt) == codec.encode(original)


def test_a_partition_unlike_its_table_keeps_its_own_fields() -> None:
    table = thrift_table("s", "t", "file:/w/s.db/t", columns=[("id", "bigint")],
                         partition_keys=[("p", "string")])  # fmt: skip
    (part,) = thrift_partitions(table, [["1"]])
    part.sd.location = "file:/elsewhere/p=1"
    part.sd.cols = [idl.hive_metastore.FieldSchema(name="other", type="int", comment="")]
    original = copy.deepcopy(part)
    _, obj = partitions.partition_object(table, part)
    decoded = codec.decode_object(codec.encode_object(obj)).hdfs_partition
    assert hms_partition.rebuild(table, decoded) == original
