"""Pure conversions: keys, partition names, Hive types, HMS structs to catalog objects."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

import idl
from catalogd.conversion import column_stats, partitions, storage
from catalogd.conversion import objects as convert
from catalogd.hms.builders import thrift_partitions, thrift_table
from subscriber.protocol import codec, hms_partition
from subscriber.protocol.errors import InvalidRequestError
from subscriber.protocol.hive_types import column_type, type_name
from subscriber.protocol.keys import (
    TableName,
    database_of,
    escape_partition_value,
    make_partition_name,
    parse_partition_name,
    partition_key,
    table_key,
    unescape_partition_value,
)

hms = idl.hive_metastore
co = idl.catalog_objects


def test_keys_follow_impala_and_name_their_database() -> None:
    assert table_key("Sales", "Orders") == "TABLE:sales.orders"
    assert table_key("s", "v", view=True) == "VIEW:s.v"
    key = partition_key("S", "T", "dt=2024-01-01/Region=EU")
    assert key == "HDFS_PARTITION:s.t:dt=2024-01-01/Region=EU"
    assert [database_of(k) for k in (key, "DATABASE:s", "PRINCIPAL:r.ROLE", "FUNCTION:s.f(i)")] == [
        "s",
        "s",
        "",
        "s",
    ]


@pytest.mark.parametrize("text", ["nodot", ".t", "db.", "a.b.c", ""])
def test_table_name_rejects_malformed(text: str) -> None:
    with pytest.raises(InvalidRequestError, match="DB.TABLE"):
        TableName.parse(text)


@given(st.text())
def test_partition_value_escaping_round_trips(value: str) -> None:
    escaped = escape_partition_value(value)
    assert "/" not in escaped and "=" not in escaped
    assert unescape_partition_value(escaped) == value


def test_partition_names_round_trip_with_hive_escaping() -> None:
    name = make_partition_name(["dt", "path"], ["2024-01-01", "a/b=c"])
    assert name == "dt=2024-01-01/path=a%2Fb%3Dc"
    assert parse_partition_name(name) == (("dt", "2024-01-01"), ("path", "a/b=c"))
    with pytest.raises(InvalidRequestError, match="k=v/k2=v2"):
        parse_partition_name("dt")
    with pytest.raises(InvalidRequestError):
        make_partition_name(["a", "b"], ["1"])


@pytest.mark.parametrize(
    "text",
    [
        "int",
        "bigint",
        "string",
        "decimal(12,3)",
        "varchar(10)",
        "char(2)",
        "array<string>",
        "map<string,array<int>>",
        "struct<a:int,b:map<string,double>>",
        "timestamp",
        "date",
        "boolean",
        "binary",
    ],
)
def test_hive_types_round_trip(text: str) -> None:
    assert type_name(column_type(text)) == text


@pytest.mark.parametrize("text", ["", "array<", "map<int>", "decimal(a)", "whatever", "int int"])
def test_bad_hive_types_are_clear_errors(text: str) -> None:
    with pytest.raises(InvalidRequestError, match="Hive type"):
        column_type(text)


def test_long_runs_of_spaces_in_a_type_cost_linear_time() -> None:
    """HMS takes any type whose first word is a type: "int", 100,000 spaces and "x" took
    the old tokenizer minutes (a lazy match with a look-ahead: quadratic); now a few ms."""
    spaces = " " * 100_000
    with pytest.raises(InvalidRequestError, match="Hive type") as refused:
        column_type(f"int{spaces}x")
    assert len(str(refused.value)) < 300 and "100,004 characters" in str(refused.value)
    assert type_name(column_type(f"array<int{spaces}>")) == "array<int>"
    with pytest.raises(InvalidRequestError, match="unknown Hive type"):
        column_type(f"double{spaces}precision")  # as before: only "double precision"


def _sd(location: str, input_format: str, serde: str = "x") -> object:
    return hms.StorageDescriptor(
        cols=[hms.FieldSchema(name="ID", type="bigint"), hms.FieldSchema(name="v", type="string")],
        location=location,
        inputFormat=input_format,
        outputFormat="o",
        compressed=False,
        numBuckets=-1,
        serdeInfo=hms.SerDeInfo(name="", serializationLib=serde, parameters={"field.delim": ","}),
        bucketCols=[],
        sortCols=[],
        parameters={},
    )


PARQUET_IN = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat"


def test_partitioned_table_becomes_header_plus_partition_objects() -> None:
    table = hms.Table(
        tableName="Orders",
        dbName="Sales",
        sd=_sd("file:/w/sales.db/orders", PARQUET_IN),
        partitionKeys=[
            hms.FieldSchema(name="dt", type="string"),
            hms.FieldSchema(name="n", type="int"),
        ],
        parameters={"numRows": "42"},
        tableType="MANAGED_TABLE",
    )
    part = hms.Partition(
        values=["2024-01-01", "7"],
        dbName="sales",
        tableName="orders",
        sd=_sd("file:/w/sales.db/orders/dt=2024-01-01/n=7", PARQUET_IN),
        parameters={"numRows": "5"},
    )
    objects = convert.table_objects(table, [part])
    assert list(objects) == ["TABLE:sales.orders", "HDFS_PARTITION:sales.orders:dt=2024-01-01/n=7"]
    header = objects["TABLE:sales.orders"].table
    assert header.table_type == co.TTableType.HDFS_TABLE
    assert [c.columnName for c in header.columns] == ["id", "v"]
    assert [(c.columnName, c.position) for c in header.clustering_columns] == [("dt", 2), ("n", 3)]
    assert header.table_stats.num_rows == 42
    assert header.hdfs_table.partitions == {} and header.hdfs_table.has_full_partitions is False
    assert header.metastore_table is table
    p = objects["HDFS_PARTITION:sales.orders:dt=2024-01-01/n=7"].hdfs_partition
    assert p.location.suffix.endswith("dt=2024-01-01/n=7")
    assert p.hdfs_storage_descriptor.fileFormat == co.THdfsFileFormat.PARQUET
    assert p.hdfs_storage_descriptor.fieldDelim == ord(",")
    exprs = [e.nodes[0] for e in p.partitionKeyExprs]
    assert exprs[0].string_literal.value == "2024-01-01" and exprs[1].int_literal.value == 7
    assert p.stats.num_rows == 5
    # Deterministic: the same input encodes to the same bytes (no version bump on reload).
    again = convert.encode_all(convert.table_objects(table, [part]))
    assert again == convert.encode_all(objects)
    assert codec.decode_object(again["TABLE:sales.orders"]).table.tbl_name == "orders"


def test_view_and_formats() -> None:
    view = hms.Table(
        tableName="v",
        dbName="d",
        sd=_sd("", ""),
        partitionKeys=[],
        parameters={},
        tableType="VIRTUAL_VIEW",
        viewOriginalText="select 1",
    )
    key, obj = convert.table_object(view)
    assert key == "VIEW:d.v" and obj.type == co.TCatalogObjectType.VIEW
    assert obj.table.table_type == co.TTableType.VIEW and obj.table.hdfs_table is None
    spark_json = hms.Table(parameters={"spark.sql.sources.provider": "json"})
    assert storage.file_format(spark_json, None) == co.THdfsFileFormat.JSON
    orc = _sd("", "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat")
    assert storage.file_format(hms.Table(parameters={}), orc) == co.THdfsFileFormat.ORC


def test_null_partition_value_is_a_null_literal() -> None:
    table = hms.Table(
        tableName="t",
        dbName="d",
        sd=_sd("l", PARQUET_IN),
        partitionKeys=[hms.FieldSchema(name="k", type="int")],
        parameters={},
        tableType="MANAGED_TABLE",
    )
    part = hms.Partition(
        values=[hms_partition.NULL_PARTITION_VALUE], sd=_sd("l/k=x", PARQUET_IN), parameters={}
    )
    _, obj = partitions.partition_object(table, part)
    node = obj.hdfs_partition.partitionKeyExprs[0].nodes[0]
    assert node.node_type == idl.catalog_objects.Exprs.TExprNodeType.NULL_LITERAL


_VALUE = st.one_of(
    st.sampled_from(
        ["2024-01-01", "eu", "a b/c=d", "x:y%z", "%41", "", hms_partition.NULL_PARTITION_VALUE]
    ),
    st.text(max_size=6),
)
_PARAMS = st.dictionaries(st.sampled_from(["numFiles", "numRows", "totalSize", "z", "a"]),
                          st.sampled_from(["0", "3", "-1", "x"]), max_size=4)  # fmt: skip


@st.composite
def _partitions(draw: st.DrawFn) -> tuple[object, list[object]]:
    """A table (int and string keys) and partitions that differ from it, or not, in
    every way the converter remembers something: values, SerDe parameters and
    library, input format, columns, location, parameters, names."""
    table = thrift_table(
        "Sales", "Orders", "file:/w/sales.db/orders",
        columns=[("id", "bigint"), ("note", "string")],
        partition_keys=[("dt", "string"), ("n", "int")],
        serde_parameters={"serialization.format": "1"},
    )  # fmt: skip
    parts = []
    for values in draw(st.lists(st.lists(_VALUE, min_size=2, max_size=2), max_size=8)):
        (part,) = thrift_partitions(table, [["v", "1"]])
        part.values = values
        part.parameters = draw(_PARAMS)
        sd = part.sd
        if draw(st.booleans()):
            sd.serdeInfo.parameters = {"field.delim": draw(st.sampled_from([",", "|", "9"]))}
        if draw(st.booleans()):
            sd.serdeInfo.serializationLib = "org.apache.hadoop.hive.serde2.JsonSerDe"
        if draw(st.booleans()):
            sd.inputFormat = "org.apache.hadoop.mapred.TextInputFormat"
        if draw(st.booleans()):
            sd.cols = list(table.sd.cols)  # equal, another list
        elif draw(st.booleans()):
            sd.cols = [hms.FieldSchema(name="other", type="int", comment=None)]
        if draw(st.booleans()):
            sd.location = None
        if draw(st.booleans()):
            part.dbName, part.tableName = "sales", "orders"  # lower-case: not the table's
        parts.append(part)
    return table, parts


@given(_partitions())
def test_a_shared_partition_converter_gives_what_a_fresh_one_gives(
    case: tuple[object, list[object]],
) -> None:
    """What PartitionConverter remembers between partitions never changes a result,
    and every partition encode_all leaves unchecked still validates."""
    table, parts = case
    shared = partitions.PartitionConverter(table)
    together = {}
    for part in parts:
        key, obj = shared(copy.deepcopy(part))
        together[key] = codec.encode_object(obj)
    alone = {}
    for part in parts:
        key, obj = partitions.PartitionConverter(table)(copy.deepcopy(part))
        alone[key] = codec.encode_object(obj)
    assert together == alone
    originals = {}
    for part in parts:
        key, _ = partitions.PartitionConverter(table)(part)  # sorts its maps
        originals[key] = part
    objects = dict(map(partitions.PartitionConverter(table), copy.deepcopy(parts)))
    for key, payload in convert.encode_all(objects).items():
        decoded = codec.decode_object(payload).hdfs_partition  # validates
        assert hms_partition.rebuild(table, decoded) == originals[key]


def test_a_partition_with_the_wrong_number_of_values_is_refused() -> None:
    table = thrift_table("s", "t", "file:/w/s.db/t", columns=[("id", "bigint")],
                         partition_keys=[("p", "string")])  # fmt: skip
    (part,) = thrift_partitions(table, [["1"]])
    part.values = ["1", "2"]
    with pytest.raises(InvalidRequestError, match="2 partition values for 1 partition columns"):
        partitions.PartitionConverter(table)(part)


@pytest.mark.parametrize(
    "odd", ["99999999999999999999", "9223372036854775808", "²", " 12", "1_0", "-", "", "0x10"]
)
def test_odd_numbers_in_parameters_and_values_never_break_conversion(odd: str) -> None:
    """Parameters and partition values are anyone's text: a count that is no i64, a
    non-ASCII digit or Python-only syntax gives "unknown" (or a string literal), never
    an object that cannot be encoded."""
    table = thrift_table(
        "s", "t", "file:/w/s.db/t", columns=[("id", "bigint")],
        partition_keys=[("n", "bigint")],
        parameters={"numRows": odd, "spark.sql.statistics.colStats.id.version": "2",
                    "spark.sql.statistics.colStats.id.min": odd,
                    "spark.sql.statistics.colStats.id.distinctCount": odd},
        serde_parameters={"field.delim": odd},
    )  # fmt: skip
    (part,) = thrift_partitions(table, [["1"]])
    part.values = [odd]
    part.parameters = {"numRows": odd, "totalSize": odd}
    key, header = convert.table_object(
        table, column_stats.column_stats(table.sd.cols, table.parameters, [])
    )
    codec.decode_object(codec.encode_object(header))
    _, obj = partitions.partition_object(table, part)
    decoded = codec.decode_object(codec.encode_object(obj)).hdfs_partition
    assert decoded.stats.num_rows == -1 and decoded.stats.total_file_bytes is None
    assert storage.parse_i64(odd) is None
