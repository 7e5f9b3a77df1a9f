"""The HMS endpoint's pure parts: message framing, partition filters, cache answers."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from thriftpy2.protocol import TBinaryProtocol
from thriftpy2.transport import TMemoryBuffer

import idl
from catalogd.conversion import objects as convert
from catalogd.hms import builders
from subscriber.cache import build_view
from subscriber.metastore import filters, framing, methods
from subscriber.metastore.answers import CacheAnswers, Forward
from subscriber.metastore.endpoint import EndpointConfig, MetastoreEndpoint
from subscriber.metastore.upstream import Upstream
from subscriber.metastore.writes import ALL_DATABASES, Target, touched
from subscriber.protocol import codec
from subscriber.protocol.delta import Entry
from subscriber.protocol.errors import ProtocolError
from subscriber.reads import ObjectDecoder

pytestmark = pytest.mark.timeout(30)

hms = idl.hive_metastore
svc = hms.ThriftHiveMetastore


def _call(name: str, args: Any, seqid: int = 7) -> bytes:
    """A CALL message as thriftpy2's own client writes it."""
    buf = TMemoryBuffer()
    proto = TBinaryProtocol(buf)
    proto.write_message_begin(name, framing.CALL, seqid)
    proto.write_struct(args)
    proto.write_message_end()
    return buf.getvalue()


def _read_result(name: str, message: bytes) -> Any:
    proto = TBinaryProtocol(TMemoryBuffer(message))
    got_name, kind, seqid = proto.read_message_begin()
    assert (got_name, kind, seqid) == (name, framing.REPLY, 7)
    result = getattr(svc, f"{name}_result")()
    proto.read_struct(result)
    return result


# -- framing ---------------------------------------------------------------------------


def test_message_end_finds_whole_messages_only() -> None:
    message = _call("get_table", svc.get_table_args(dbname="db", tbl_name="t"))
    stream = message + message[:5]
    assert framing.message_end(stream) == len(message)
    for cut in range(len(message)):
        assert framing.message_end(message[:cut]) is None
    header = framing.read_header(message)
    assert header is not None and header.name == "get_table" and header.seqid == 7


def test_message_end_walks_nested_containers() -> None:
    table = builders.thrift_table(
        "db", "t", "/w/t", columns=[("a", "int")], partition_keys=[("p", "string")]
    )
    parts = builders.thrift_partitions(table, [["x"], ["y"]])
    message = _call("add_partitions", svc.add_partitions_args(new_parts=parts))
    assert framing.message_end(message + b"rest") == len(message)


@pytest.mark.parametrize(
    "garbage",
    [
        b"GET / HTTP/1.1\r\n\r\n",
        b"\x80\x02\x00\x01\x00\x00\x00\x01x",  # another protocol version
        framing.header_bytes("m", framing.CALL, 1) + b"\x01\x00\x01",  # type code 1
        framing.header_bytes("m", framing.CALL, 1) + b"\x0b\x00\x01\xff\xff\xff\xff",
        framing.header_bytes("m", 9, 1),  # no such message type
    ],
)
def test_garbage_is_refused_without_waiting(garbage: bytes) -> None:
    with pytest.raises(ProtocolError):
        framing.message_end(garbage)


def test_replies_decode_with_thrift() -> None:
    data = framing.reply("get_all_databases", 7, _strings_result(["a", "b"]))
    assert _read_result("get_all_databases", data).success == ["a", "b"]
    error = framing.application_exception("nope", 3, "unknown method nope")
    proto = TBinaryProtocol(TMemoryBuffer(error))
    assert proto.read_message_begin() == ("nope", framing.EXCEPTION, 3)


def _strings_result(values: list[str]) -> bytes:
    return codec.encode(svc.get_all_databases_result(success=values), check=False)


def test_write_classification() -> None:
    assert not methods.is_write("get_partitions_by_filter")
    assert not methods.is_write("set_ugi")
    assert methods.is_write("create_table_with_environment_context")
    assert methods.is_write("some_future_method")


# -- filters ---------------------------------------------------------------------------

COLUMNS = [("dt", "string"), ("h", "int")]
PARTS = [
    ("dt=2024-01-01/h=1", ["2024-01-01", "1"]),
    ("dt=2024-01-01/h=12", ["2024-01-01", "12"]),
    ("dt=2024-01-02/h=2", ["2024-01-02", "2"]),
    ("dt=2024-01-03/h=__HIVE_DEFAULT_PARTITION__", ["2024-01-03", "__HIVE_DEFAULT_PARTITION__"]),
]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ('dt = "2024-01-01"', [0, 1]),
        ("dt = '2024-01-02'", [2]),
        ('"2024-01-02" <= dt', [2, 3]),
        ('dt >= "2024-01-02" and h < 3', [2]),
        ("h > 2", [1]),  # numeric, not string, order; the default partition never matches
        ("h != 1", [1, 2]),
        ('(dt = "2024-01-03" or h = 1)', [0, 3]),
        ('(dt != "x" and (h = 1 or h = 2))', [0, 2]),
        ("(h) in (1, 12)", [0, 1]),
        ("(h) not in (1)", [1, 2]),
        ('(dt) in ("2024-01-02", "nope") and h = 2', [2]),
        ("H = 2 AND DT <> '2024-01-01'", [2]),
    ],
)
def test_filters_spark_writes(text: str, names: list[int]) -> None:
    assert filters.matching(text, COLUMNS, PARTS) == [PARTS[i][0] for i in names]


@pytest.mark.parametrize(
    "text",
    [
        'dt like ".*01"',  # like: forwarded
        "dt = 2024-01-01",  # an unquoted date
        "h = '1'",  # literal type differs from the column's
        'x = "1"',  # no such partition column
        'dt > "2024-1-5"',  # ordering that depends on collation
        'dt = "a" and',
        "(h = 1",
    ],
)
def test_filters_not_exactly_evaluable_are_refused(text: str) -> None:
    with pytest.raises(filters.Unsupported):
        filters.matching(text, COLUMNS, PARTS)


def test_integral_column_with_non_integer_values_is_refused() -> None:
    with pytest.raises(filters.Unsupported):
        filters.matching("h = 1", COLUMNS, [("dt=a/h=x1", ["a", "x1"])])


# -- answers ---------------------------------------------------------------------------


@pytest.fixture
def cache() -> tuple[CacheAnswers, Any, Any, list[Any]]:
    database = hms.Database(name="sales", description="", locationUri="/w", parameters={})
    table = builders.thrift_table(
        "sales",
        "orders",
        "/w/orders",
        columns=[("id", "int")],
        partition_keys=[("dt", "string"), ("h", "int")],
    )
    parts = builders.thrift_partitions(table, [["2024-01-01", "1"], ["2024-01-02", "2"]])
    parts[1].createTime = 1234
    parts[1].parameters = {"numRows": "5"}
    fn = hms.Function(functionName="shout", dbName="sales", className="a.B", resourceUris=[])
    objects = {
        **convert.database_objects(database),
        **convert.table_objects(table, parts),
        **convert.function_objects([fn]),
    }
    entries = [Entry(k, 3, p) for k, p in convert.encode_all(objects).items()]
    view = build_view("svc", 3, entries)
    return CacheAnswers(ObjectDecoder()), view, table, parts


def _answer(cache: Any, name: str, **args: Any) -> Any:
    answers, view, _, _ = cache
    result = answers.answer(view, name, getattr(svc, f"{name}_args")(**args))
    return codec.decode(getattr(svc, f"{name}_result"), result)


def test_tables_and_partitions_are_hms_structs(cache: Any) -> None:
    _, _, table, parts = cache
    assert _answer(cache, "get_table", dbname="sales", tbl_name="orders").success == table
    got = _answer(cache, "get_partitions", db_name="sales", tbl_name="orders", max_parts=-1)
    assert got.success == parts  # field for field: values, sd, parameters, create time
    names = _answer(cache, "get_partition_names", db_name="sales", tbl_name="orders", max_parts=1)
    assert names.success == ["dt=2024-01-01/h=1"]
    found = _answer(
        cache,
        "get_partitions_by_filter",
        db_name="sales",
        tbl_name="orders",
        filter="h >= 2",
        max_parts=-1,
    )
    assert found.success == [parts[1]]
    ps = _answer(
        cache, "get_partitions_ps", db_name="sales", tbl_name="orders", part_vals=["", "1"]
    )
    assert ps.success == [parts[0]]


def test_names_and_patterns(cache: Any) -> None:
    assert _answer(cache, "get_all_databases").success == ["sales"]
    assert _answer(cache, "get_databases", pattern="SAL*|x").success == ["sales"]
    assert _answer(cache, "get_tables", db_name="sales", pattern="ord*").success == ["orders"]
    assert _answer(cache, "get_tables", db_name="sales", pattern="x*").success == []
    assert _answer(cache, "get_functions", dbName="sales", pattern="*").success == ["shout"]
    assert _answer(cache, "get_function", dbName="sales", funcName="SHOUT").success.className == (
        "a.B"
    )


def test_missing_objects_raise_hms_exceptions(cache: Any) -> None:
    answers, view, _, _ = cache
    with pytest.raises(hms.NoSuchObjectException, match="sales.nope table not found"):
        answers.answer(view, "get_table", svc.get_table_args(dbname="sales", tbl_name="nope"))
    with pytest.raises(hms.NoSuchObjectException, match="x"):
        answers.answer(view, "get_database", svc.get_database_args(name="x"))
    with pytest.raises(hms.NoSuchObjectException, match=r"partition values=\[a, 9\]"):
        args = svc.get_partition_args(db_name="sales", tbl_name="orders", part_vals=["a", "9"])
        answers.answer(view, "get_partition", args)


def test_inexact_answers_are_forwarded(cache: Any) -> None:
    answers, view, _, _ = cache
    with pytest.raises(Forward):
        args = svc.get_partitions_by_filter_args(
            db_name="sales", tbl_name="orders", filter='dt like "2024.*"', max_parts=-1
        )
        answers.answer(view, "get_partitions_by_filter", args)
    with pytest.raises(Forward):  # HMS's answer for a missing table varies by call
        args = svc.get_partitions_args(db_name="sales", tbl_name="nope", max_parts=-1)
        answers.answer(view, "get_partitions", args)
    only_other = CacheAnswers(ObjectDecoder(), frozenset({"other"}))
    with pytest.raises(Forward):  # a database this subscriber does not follow
        only_other.answer(view, "get_database", svc.get_database_args(name="sales"))


def test_writes_name_what_they_touch() -> None:
    table = builders.thrift_table("Sales", "Orders", "/w", columns=[("a", "int")])
    create = _body("create_table", svc.create_table_args(tbl=table))
    assert touched("create_table_with_environment_context", create) == (Target("sales", "orders"),)
    drop = _body("drop_table", svc.drop_table_args(dbname="s", name="t", deleteData=True))
    assert touched("drop_table_with_environment_context", drop) == (Target("s", "t"),)
    db = _body("drop_database", svc.drop_database_args(name="s", deleteData=True, cascade=True))
    assert touched("drop_database", db) == (Target("s"),)
    assert touched("unknown_method", b"\x00") == (ALL_DATABASES,)


def _body(name: str, args: Any) -> bytes:
    message = _call(name, args)
    header = framing.read_header(message)
    assert header is not None
    return message[header.body_start :]


def test_partitions_unlike_their_table_are_rebuilt_exactly() -> None:
    table = builders.thrift_table(
        "s", "t", "/w/t", columns=[("id", "int")], partition_keys=[("dt", "string")]
    )
    parts = builders.thrift_partitions(table, [["a"], ["b"]])
    odd = parts[1]
    odd.sd = copy.deepcopy(odd.sd)
    odd.sd.inputFormat = "org.apache.hadoop.mapred.TextInputFormat"
    odd.sd.cols = [hms.FieldSchema(name="id", type="bigint", comment=None)]
    odd.sd.numBuckets = None
    objects = convert.table_objects(table, parts)
    entries = [Entry(k, 1, p) for k, p in convert.encode_all(objects).items()]
    answers = CacheAnswers(ObjectDecoder())
    args = svc.get_partitions_args(db_name="s", tbl_name="t", max_parts=-1)
    result = answers.answer(build_view("svc", 1, entries), "get_partitions", args)
    assert codec.decode(svc.get_partitions_result, result).success == parts


class _Catalog:
    """A CachedCatalog without a subscriber: the endpoint needs no more than this."""

    def __init__(self, view: Any) -> None:
        self.databases: tuple[str, ...] | None = None
        self.lag_seconds = 0.0
        self.decoder = ObjectDecoder()
        self.view = view
        self.reloads: list[tuple[str, str | None]] = []

    def cache_view(self) -> Any:
        return self.view

    def request_reload(self, db: str, table: str | None = None, on_loaded: Any = None) -> None:
        self.reloads.append((db, table))


def test_the_endpoint_reads_through_the_cached_catalog_interface(cache: Any) -> None:
    _, view, table, _ = cache
    endpoint = MetastoreEndpoint(_Catalog(view), EndpointConfig(upstream="thrift://127.0.0.1:1"))
    upstream = Upstream("thrift://127.0.0.1:1")  # never opened: the read is served here
    reply = endpoint._call(_call("get_table", svc.get_table_args("sales", "orders")), upstream)
    assert reply is not None
    assert _read_result("get_table", reply).success == table
    assert endpoint.stats.snapshot()["served"] == {"get_table": 1}


def test_the_endpoint_module_does_not_import_the_subscriber_module() -> None:
    import ast
    import inspect

    from subscriber.metastore import endpoint

    tree = ast.parse(inspect.getsource(endpoint))
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "subscriber.api" not in imported
