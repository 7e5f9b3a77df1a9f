"""A table header's columns, left off the wire and derived again (``table_columns``).

The codec's promise holds for table objects too: ``decode_object(encode_object(x))
== x``, whether the columns were left out (they are exactly what the HMS table
gives) or travel as they are (anything else); a payload whose left-out columns
cannot be derived is a ProtocolError, as garbage is.
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

import idl
from catalogd.conversion import objects as convert
from catalogd.hms.builders import thrift_table
from subscriber.protocol import codec
from subscriber.protocol.errors import ProtocolError

co = idl.catalog_objects
types = co.Types
hms = idl.hive_metastore

TYPES = ["int", "bigint", "string", "decimal(12,2)", "varchar(10)", "array<struct<a:int,b:string>>"]
NAMES = st.text("abcXYZ_", min_size=1, max_size=6)


def _stats(ndv: int) -> object:
    return co.TColumnStats(
        avg_size=4.0, max_size=4, num_distinct_values=ndv, num_nulls=0, num_trues=-1, num_falses=-1
    )


@st.composite
def _tables(draw: st.DrawFn) -> tuple[object, dict[str, object]]:
    names = draw(st.lists(NAMES, min_size=0, max_size=6, unique_by=str.lower))
    split = draw(st.integers(0, len(names)))
    fields = [(n, draw(st.sampled_from(TYPES))) for n in names]
    table = thrift_table(
        "d",
        "t",
        "file:/w/d.db/t",
        columns=fields[:split],
        partition_keys=fields[split:],
        table_type=draw(st.sampled_from(["MANAGED_TABLE", "VIRTUAL_VIEW"])),
    )
    with_stats = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    return table, {n.lower(): _stats(i) for i, n in enumerate(with_stats)}


@given(_tables())
def test_a_header_decodes_to_what_was_encoded(case: tuple[object, dict[str, object]]) -> None:
    table, stats = case
    _, obj = convert.table_object(table, stats)
    expected = copy.deepcopy(obj)
    data = codec.encode_object(obj)
    assert obj == expected  # encoding left the object alone
    decoded = codec.decode_object(data)
    decoded.catalog_version = obj.catalog_version
    assert decoded == obj
    # On the wire: no columns, their statistics by name.
    wire = codec.decode(co.TCatalogObject, data).table
    assert wire.columns is None and wire.clustering_columns is None
    assert wire.column_stats == stats


def test_columns_travel_as_they_are_when_the_hms_table_does_not_give_them() -> None:
    table = thrift_table("d", "t", "file:/w", columns=[("a", "int")], partition_keys=[("p", "int")])
    _, obj = convert.table_object(table)
    hidden = copy.deepcopy(obj)
    hidden.table.columns[0].is_hidden = True
    no_meta = copy.deepcopy(obj)
    no_meta.table.metastore_table = None
    without = copy.deepcopy(obj)
    without.table.columns = without.table.clustering_columns = None
    for other in (hidden, no_meta, without):
        data = codec.encode_object(other)
        assert codec.decode(co.TCatalogObject, data).table.column_stats is None
        assert codec.decode_object(data) == other
    plain = codec.encode_object(obj)
    assert len(plain) < len(codec.encode_object(hidden))


def test_the_benchmark_header_shrinks_by_a_quarter() -> None:
    columns = [("id", "bigint"), ("customer", "string"), ("amount", "decimal(12,2)")]
    columns += [("ts", "timestamp"), ("payload", "string")]
    table = thrift_table(
        "bench", "t", "file:/w", columns=columns, partition_keys=[("dt", "string"), ("r", "string")]
    )
    _, obj = convert.table_object(table)
    full = codec.encode(obj)  # the generic encoder keeps the columns
    assert codec.decode_object(full) == codec.decode_object(codec.encode_object(obj)) == obj
    assert len(codec.encode_object(obj)) < 0.75 * len(full)


@pytest.mark.parametrize("bad", ["no such type", "array<"])
def test_underivable_left_out_columns_are_a_protocol_error(bad: str) -> None:
    table = thrift_table("d", "t", "file:/w", columns=[("a", "int")])
    _, obj = convert.table_object(table)
    wire = copy.deepcopy(obj)
    wire.table.columns = wire.table.clustering_columns = None
    wire.table.column_stats = {}
    wire.table.metastore_table.sd.cols[0].type = bad
    with pytest.raises(ProtocolError, match="undecodable TCatalogObject"):
        codec.decode_object(codec.encode(wire))
    wire.table.metastore_table.sd.cols[0].type = None
    with pytest.raises(ProtocolError, match="without a name or a type"):
        codec.decode_object(codec.encode(wire))
    wire.table.metastore_table.sd.cols[0].type = "int"
    wire.table.metastore_table.partitionKeys = [hms.FieldSchema(type="int")]
    with pytest.raises(ProtocolError, match="without a name or a type"):
        codec.decode_object(codec.encode(wire))
    wire.table.metastore_table = None
    with pytest.raises(ProtocolError, match="column_stats without a metastore_table"):
        codec.decode_object(codec.encode(wire))
