"""subscriber.protocol.codec: round trips, framing, and hostile input (pure tier, no servers)."""

from __future__ import annotations

import contextlib
import struct
import sys
import time
import tracemalloc
import zlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import idl
from subscriber.protocol import codec, wire
from subscriber.protocol.delta import Entry
from subscriber.protocol.errors import InvalidRequestError, ProtocolError

CO = idl.catalog_objects
CS = idl.catalog_service
HMS = idl.hive_metastore
TY = sys.modules["idl.Types_thrift"]
EX = sys.modules["idl.Exprs_thrift"]
ST = sys.modules["idl.Status_thrift"]

I64 = st.integers(-(2**63), 2**63 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
TEXT = st.text(max_size=40)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- realistic objects


def scalar(kind: int, **extra: int) -> Any:
    node = TY.TTypeNode(
        type=TY.TTypeNodeType.SCALAR, scalar_type=TY.TScalarType(type=kind, **extra)
    )
    return TY.TColumnType(types=[node])


def literal(value: str | int | None) -> Any:
    """A partition key value the way Impala carries it: one literal node."""
    node = EX.TExprNode(num_children=0, is_constant=True)
    if value is None:
        node.node_type, node.type = (
            EX.TExprNodeType.NULL_LITERAL,
            scalar(TY.TPrimitiveType.NULL_TYPE),
        )
    elif isinstance(value, int):
        node.node_type, node.type = EX.TExprNodeType.INT_LITERAL, scalar(TY.TPrimitiveType.INT)
        node.int_literal = EX.TIntLiteral(value=value)
    else:
        node.node_type, node.type = (
            EX.TExprNodeType.STRING_LITERAL,
            scalar(TY.TPrimitiveType.STRING),
        )
        node.string_literal = EX.TStringLiteral(value=value)
    return EX.TExpr(nodes=[node])


def storage(fmt: int = CO.THdfsFileFormat.PARQUET) -> Any:
    return CO.THdfsStorageDescriptor(
        lineDelim=10,
        fieldDelim=1,
        collectionDelim=2,
        mapKeyDelim=3,
        escapeChar=0,
        quoteChar=0,
        fileFormat=fmt,
        blockSize=0,
    )


def hms_sd(location: str, cols: list[Any]) -> Any:
    return HMS.StorageDescriptor(
        cols=cols,
        location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        compressed=False,
        numBuckets=-1,
        serdeInfo=HMS.SerDeInfo(
            serializationLib="org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
            parameters={"serialization.format": "1"},
        ),
        bucketCols=[],
        sortCols=[],
        parameters={},
        storedAsSubDirectories=False,
    )


def hdfs_partition(ds: str, hr: int | None, version: int = 42) -> Any:
    name = f"ds={ds}/hr={'__HIVE_DEFAULT_PARTITION__' if hr is None else hr}"
    return CO.THdfsPartition(
        partitionKeyExprs=[literal(ds), literal(hr)],
        location=CO.THdfsPartitionLocation(prefix_index=0, suffix=name),
        id=version * 1000 + (hr or 0),
        access_level=CO.TAccessLevel.READ_WRITE,
        stats=CO.TTableStats(num_rows=1234, total_file_bytes=567_890),
        is_marked_cached=True,
        hms_parameters={
            "transient_lastDdlTime": "1700000000",
            "numFiles": "2",
            "totalSize": "567890",
        },
        num_blocks=2,
        total_file_size_bytes=567_890,
        db_name="sales",
        tbl_name="events",
        partition_name=name,
        hdfs_storage_descriptor=storage(),
    )


def database_object() -> Any:
    db = HMS.Database(
        name="sales",
        description="Sales data",
        locationUri="hdfs://nn:8020/warehouse/sales.db",
        parameters={"owner.team": "analytics", "created.by": "spark"},
        ownerName="alice",
        ownerType=HMS.PrincipalType.USER,
    )
    return CO.TCatalogObject(
        type=CO.TCatalogObjectType.DATABASE,
        catalog_version=11,
        db=CO.TDatabase(db_name="sales", metastore_db=db),
    )


def table_object() -> Any:
    columns = [
        CO.TColumn(
            columnName="user_id",
            columnType=scalar(TY.TPrimitiveType.BIGINT),
            position=0,
            col_stats=CO.TColumnStats(
                avg_size=8.0,
                max_size=8,
                num_distinct_values=9_876,
                num_nulls=0,
                num_trues=-1,
                num_falses=-1,
                low_value=TY.TColumnValue(long_val=1),
                high_value=TY.TColumnValue(long_val=99_999),
            ),
        ),
        CO.TColumn(
            columnName="amount",
            comment="in cents",
            position=1,
            columnType=scalar(TY.TPrimitiveType.DECIMAL, precision=12, scale=2),
        ),
        CO.TColumn(
            columnName="tags",
            position=2,
            columnType=TY.TColumnType(
                types=[
                    TY.TTypeNode(type=TY.TTypeNodeType.MAP),
                    TY.TTypeNode(
                        type=TY.TTypeNodeType.SCALAR,
                        scalar_type=TY.TScalarType(type=TY.TPrimitiveType.STRING),
                    ),
                    TY.TTypeNode(
                        type=TY.TTypeNodeType.SCALAR,
                        scalar_type=TY.TScalarType(type=TY.TPrimitiveType.VARCHAR, len=20),
                    ),
                ]
            ),
        ),
    ]
    keys = [
        CO.TColumn(columnName="ds", columnType=scalar(TY.TPrimitiveType.STRING), position=3),
        CO.TColumn(columnName="hr", columnType=scalar(TY.TPrimitiveType.INT), position=4),
    ]
    schema = [
        HMS.FieldSchema(name="user_id", type="bigint"),
        HMS.FieldSchema(name="amount", type="decimal(12,2)", comment="in cents"),
        HMS.FieldSchema(name="tags", type="map<string,varchar(20)>"),
    ]
    grants = HMS.PrincipalPrivilegeSet(
        userPrivileges={
            "alice": [
                HMS.PrivilegeGrantInfo(
                    privilege=p,
                    createTime=1_700_000_000,
                    grantor="alice",
                    grantorType=HMS.PrincipalType.USER,
                    grantOption=True,
                )
                for p in ("SELECT", "INSERT", "UPDATE", "DELETE")
            ]
        }
    )
    location = "hdfs://nn:8020/warehouse/sales.db/events"
    metastore = HMS.Table(
        tableName="events",
        dbName="sales",
        owner="alice",
        createTime=1_700_000_000,
        lastAccessTime=0,
        retention=0,
        sd=hms_sd(location, schema),
        partitionKeys=[
            HMS.FieldSchema(name="ds", type="string"),
            HMS.FieldSchema(name="hr", type="int"),
        ],
        parameters={"spark.sql.statistics.numRows": "2468", "transient_lastDdlTime": "1700000000"},
        tableType="MANAGED_TABLE",
        privileges=grants,
        temporary=False,
    )
    parts = [hdfs_partition("2024-01-01", 0), hdfs_partition("2024-01-01", None)]
    hdfs = CO.THdfsTable(
        hdfsBaseDir=location,
        colNames=["ds", "hr", "user_id", "amount", "tags"],
        nullPartitionKeyValue="__HIVE_DEFAULT_PARTITION__",
        nullColumnValue="\\N",
        partitions={p.id: p for p in parts},
        has_full_partitions=True,
        prototype_partition=CO.THdfsPartition(id=CO.PROTOTYPE_PARTITION_ID),
        partition_prefixes=[location + "/"],
        bucket_info=CO.TBucketInfo(bucket_type=CO.TBucketType.NONE, num_bucket=0),
    )
    table = CO.TTable(
        db_name="sales",
        tbl_name="events",
        access_level=CO.TAccessLevel.READ_WRITE,
        columns=columns,
        clustering_columns=keys,
        table_stats=CO.TTableStats(num_rows=2468),
        table_type=CO.TTableType.HDFS_TABLE,
        hdfs_table=hdfs,
        metastore_table=metastore,
        id=17,
    )
    return CO.TCatalogObject(type=CO.TCatalogObjectType.TABLE, catalog_version=12, table=table)


def view_object() -> Any:
    text = "SELECT user_id, SUM(amount) AS total FROM sales.events GROUP BY user_id"
    metastore = HMS.Table(
        tableName="totals",
        dbName="sales",
        owner="bob",
        tableType="VIRTUAL_VIEW",
        viewOriginalText=text,
        viewExpandedText=text.replace("user_id", "`user_id`"),
        sd=hms_sd(
            "",
            [
                HMS.FieldSchema(name="user_id", type="bigint"),
                HMS.FieldSchema(name="total", type="decimal(22,2)"),
            ],
        ),
        partitionKeys=[],
        parameters={},
    )
    table = CO.TTable(
        db_name="sales",
        tbl_name="totals",
        table_type=CO.TTableType.VIEW,
        metastore_table=metastore,
        load_status=ST.TStatus(status_code=0),
    )
    return CO.TCatalogObject(type=CO.TCatalogObjectType.VIEW, catalog_version=13, table=table)


def partition_object() -> Any:
    return CO.TCatalogObject(
        type=CO.TCatalogObjectType.HDFS_PARTITION,
        catalog_version=14,
        hdfs_partition=hdfs_partition("2024-02-29", 23),
    )


def function_object() -> Any:
    string = scalar(TY.TPrimitiveType.STRING)
    fn = TY.TFunction(
        name=TY.TFunctionName(db_name="sales", function_name="mask_email"),
        binary_type=TY.TFunctionBinaryType.JAVA,
        arg_types=[string],
        ret_type=string,
        has_var_args=False,
        signature="mask_email(STRING)",
        hdfs_location="hdfs://nn:8020/udfs/masking.jar",
        scalar_fn=TY.TScalarFunction(symbol="com.example.udf.MaskEmail"),
        is_persistent=True,
    )
    return CO.TCatalogObject(type=CO.TCatalogObjectType.FUNCTION, catalog_version=15, fn=fn)


def principal_object() -> Any:
    principal = CO.TPrincipal(
        principal_name="analysts",
        principal_id=3,
        principal_type=CO.TPrincipalType.ROLE,
        grant_groups=["bi", "ds"],
    )
    return CO.TCatalogObject(
        type=CO.TCatalogObjectType.PRINCIPAL, catalog_version=16, principal=principal
    )


def privilege_object() -> Any:
    privilege = CO.TPrivilege(
        privilege_level=CO.TPrivilegeLevel.SELECT,
        scope=CO.TPrivilegeScope.TABLE,
        has_grant_opt=False,
        principal_id=3,
        principal_type=CO.TPrincipalType.ROLE,
        server_name="server1",
        db_name="sales",
        table_name="events",
        create_time_ms=1_700_000_000_000,
    )
    return CO.TCatalogObject(
        type=CO.TCatalogObjectType.PRIVILEGE, catalog_version=17, privilege=privilege
    )


def cache_pool_object() -> Any:
    pool = CO.THdfsCachePool(
        pool_name="hot",
        owner_name="catalogd",
        group_name="hadoop",
        mode=0o755,
        limit=10 * 2**30,
        max_relative_expiry_ms=86_400_000,
        default_replication=1,
    )
    return CO.TCatalogObject(
        type=CO.TCatalogObjectType.HDFS_CACHE_POOL, catalog_version=18, cache_pool=pool
    )


def other_objects() -> list[Any]:
    catalog = CO.TCatalog(
        catalog_service_id=TY.TUniqueId(hi=-5, lo=2**62), last_reset_catalog_version=1
    )
    source = CO.TDataSource(
        name="jdbc", hdfs_location="hdfs://nn/ds.jar", class_name="x.Y", api_version="V1"
    )
    marker = CO.TAuthzCacheInvalidation(marker_name="ranger")
    kinds = CO.TCatalogObjectType
    return [
        CO.TCatalogObject(type=kinds.CATALOG, catalog_version=1, catalog=catalog),
        CO.TCatalogObject(type=kinds.DATA_SOURCE, catalog_version=2, data_source=source),
        CO.TCatalogObject(
            type=kinds.AUTHZ_CACHE_INVALIDATION, catalog_version=3, authz_cache_invalidation=marker
        ),
    ]


CATALOG_OBJECTS = {
    "database": database_object,
    "table": table_object,
    "view": view_object,
    "partition": partition_object,
    "function": function_object,
    "principal": principal_object,
    "privilege": privilege_object,
    "cache_pool": cache_pool_object,
}


def entry(obj: Any) -> Any:
    return CS.TCatalogEntry(
        key=f"KEY:{obj.catalog_version}",
        version=obj.catalog_version,
        object=codec.encode_object(obj),
    )


def service_messages() -> dict[str, Any]:
    """One realistic instance of every struct CatalogService.thrift defines."""
    entries = [entry(make()) for make in CATALOG_OBJECTS.values()]
    tomb = CS.TCatalogEntry(key="TABLE:sales.old", version=20, removed=True)
    delta = CS.TDelta(
        service_id="svc-1",
        from_version=10,
        to_version=20,
        entries=[*entries, tomb],
        database="sales",
    )
    welcome = CS.TWelcome(
        service_id="svc-1",
        pub_endpoint="tcp://127.0.0.1:40123",
        version=20,
        heartbeat_interval_ms=1000,
        oldest_catch_up_version=3,
        protocol_version=CS.PROTOCOL_VERSION,
    )
    hello = CS.THello(client_id="driver-7", databases=["sales", ""], protocol_version=1)
    chunk = CS.TSnapshotChunk(service_id="svc-1", seq=0, entries=entries)
    end = CS.TSnapshotEnd(service_id="svc-1", version=20, count=8, chunks=1)
    ok = CS.TStatus(code=CS.TStatusCode.OK)
    return {
        "TStatus": CS.TStatus(code=CS.TStatusCode.NOTFOUND, message="no table sales.nope"),
        "TCatalogEntry": entries[1],
        "TDelta": delta,
        "TPartitionGroup": CS.TPartitionGroup(
            table="sales.orders", names=["dt=1", "dt=2"], versions=[11, 12], removed=[1]
        ),
        "TDeltaCommit": CS.TDeltaCommit(
            service_id="svc-1", from_version=10, to_version=20, counts={"sales": 9, "": 0}
        ),
        "THeartbeat": CS.THeartbeat(
            service_id="svc-1", version=20, sent_at_ms=1_700_000_000_123, interval_ms=1000
        ),
        "THello": hello,
        "TWelcome": welcome,
        "TSnapshotRequest": CS.TSnapshotRequest(databases=["sales"]),
        "TSnapshotChunk": chunk,
        "TSnapshotEnd": end,
        "TCatchUpRequest": CS.TCatchUpRequest(from_version=10, databases=["sales"]),
        "TLoadTableRequest": CS.TLoadTableRequest(db_name="sales", tbl_name="events"),
        "TFetchRequest": CS.TFetchRequest(list_db="sales", list_table="events", offset=0, limit=9),
        "TFetchResponse": CS.TFetchResponse(
            service_id="svc", version=7, entries=[CS.TCatalogEntry(key="k", version=3)], total=1
        ),
        "TSubscriberReport": CS.TSubscriberReport(
            client_id="driver-7", service_id="svc-1", applied_version=20
        ),
        "TRequest": CS.TRequest(request_id=5, hello=hello),
        "TResponse": CS.TResponse(
            request_id=5, status=ok, welcome=welcome, chunk=chunk, snapshot_end=end, delta=delta
        ),
        "TAdminRequest": CS.TAdminRequest(
            command=CS.TAdminCommand.CACHE,
            db_name="sales",
            tbl_name="events",
            partitions=["ds=2024-01-01/hr=0"],
            sync=True,
            sync_timeout_ms=5000,
            requester="ops",
            options={"pool": "hot"},
        ),
        "TAdminResponse": CS.TAdminResponse(
            status=ok, version=21, detail_json='{"cached": 1}', unconfirmed_subscribers=["driver-9"]
        ),
    }


# ---------------------------------------------------------------- round trips


def test_every_service_struct_has_a_sample() -> None:
    defined = {
        name
        for name, value in vars(CS).items()
        if isinstance(value, type)
        and getattr(value, "__module__", "") == CS.__name__
        and hasattr(value, "thrift_spec")
    }
    assert defined == set(service_messages())


@pytest.mark.parametrize("name", sorted(service_messages()))
def test_service_messages_round_trip(name: str) -> None:
    message = service_messages()[name]
    assert codec.decode(type(message), codec.encode(message)) == message
    assert codec.unpack(type(message), codec.pack(message)) == message


@pytest.mark.parametrize("kind", sorted(CATALOG_OBJECTS))
def test_catalog_objects_round_trip(kind: str) -> None:
    obj = CATALOG_OBJECTS[kind]()
    blob = codec.encode_object(obj)
    assert codec.decode_object(blob) == obj
    assert codec.decode_object(codec.encode_object(codec.decode_object(blob))) == obj


def test_remaining_object_types_round_trip() -> None:
    for obj in other_objects():
        assert codec.decode_object(codec.encode_object(obj)) == obj


def test_entry_blobs_decode_on_demand() -> None:
    chunk = service_messages()["TSnapshotChunk"]
    received = codec.unpack(CS.TSnapshotChunk, codec.pack(chunk))
    assert [codec.decode_object(e.object) for e in received.entries] == [
        make() for make in CATALOG_OBJECTS.values()
    ]


@FAST
@given(key=TEXT, version=I64, removed=st.booleans(), blob=st.binary(max_size=64))
def test_entries_round_trip(key: str, version: int, removed: bool, blob: bytes) -> None:
    message = CS.TCatalogEntry(key=key, version=version, removed=removed, object=blob)
    assert codec.decode(CS.TCatalogEntry, codec.encode(message)) == message


@FAST
@given(
    service=TEXT,
    versions=st.tuples(I64, I64),
    keys=st.lists(TEXT, max_size=20),
    counts=st.dictionaries(TEXT, I32, max_size=5),
    threshold=st.integers(0, 4096),
)
def test_deltas_round_trip(
    service: str, versions: tuple[int, int], keys: list[str], counts: dict, threshold: int
) -> None:
    entries = [CS.TCatalogEntry(key=k, version=versions[1], removed=True) for k in keys]
    delta = CS.TDelta(
        service_id=service, from_version=versions[0], to_version=versions[1], entries=entries
    )
    commit = CS.TDeltaCommit(
        service_id=service, from_version=versions[0], to_version=versions[1], counts=counts
    )
    for message in (delta, commit):
        framed = codec.pack(message, compress_threshold=threshold)
        assert codec.unpack(type(message), framed) == message


@FAST
@given(
    service=TEXT,
    versions=st.tuples(I64, I64),
    entries=st.lists(
        st.tuples(TEXT, I64, st.one_of(st.none(), st.binary(max_size=64))), max_size=12
    ),
    database=st.one_of(st.none(), TEXT),
    counts=st.one_of(st.none(), st.dictionaries(TEXT, I32, max_size=5)),
)
def test_hand_encoded_deltas_are_what_thrift_writes(
    service: str,
    versions: tuple[int, int],
    entries: list[tuple[str, int, bytes | None]],
    database: str | None,
    counts: dict | None,
) -> None:
    # wire.encode_delta writes TDelta by hand (the server thread's hot path): it must be
    # byte for byte thriftpy2's encoding of the same struct, and decode to it.
    items = [Entry(key, version, payload) for key, version, payload in entries]
    message = CS.TDelta(
        service_id=service,
        from_version=versions[0],
        to_version=versions[1],
        entries=[wire.entry_to_thrift(e) for e in items],
        database=database,
        counts=counts,
    )
    encoded = wire.encode_delta(
        service, versions[0], versions[1], items, database=database, counts=counts
    )
    assert encoded == codec.encode(message)
    assert codec.decode(CS.TDelta, encoded) == message


@FAST
@given(
    ds=TEXT,
    hr=st.one_of(st.none(), I64),
    params=st.dictionaries(TEXT, TEXT, max_size=6),
    version=I64,
)
def test_partitions_round_trip(ds: str, hr: int | None, params: dict, version: int) -> None:
    part = hdfs_partition("x", 1)
    part.partitionKeyExprs = [literal(ds), literal(hr)]
    part.hms_parameters = params
    obj = CO.TCatalogObject(
        type=CO.TCatalogObjectType.HDFS_PARTITION, catalog_version=version, hdfs_partition=part
    )
    assert codec.decode_object(codec.encode_object(obj)) == obj


# ---------------------------------------------------------------- encoding errors


def test_encode_refuses_wrong_types_and_missing_required_fields() -> None:
    with pytest.raises(InvalidRequestError):
        codec.encode(CS.THeartbeat(service_id="s", version="seven", sent_at_ms=1, interval_ms=1))
    with pytest.raises(InvalidRequestError, match="lacks required"):
        codec.encode(CS.TDelta(service_id="s", from_version=1, to_version=2))
    nested = table_object()
    nested.table.hdfs_table.prototype_partition = None
    with pytest.raises(InvalidRequestError, match="THdfsTable lacks required prototype_partition"):
        codec.encode_object(nested)
    # Unchecked, it encodes, and every receiver refuses it.
    blob = codec.encode_object(nested, check=False)
    with pytest.raises(ProtocolError, match="prototype_partition"):
        codec.decode_object(blob)
    with pytest.raises(InvalidRequestError):
        codec.encode_object(CS.TStatus(code=0))


# ---------------------------------------------------------------- framing


def test_small_frames_stay_raw_and_large_ones_are_compressed() -> None:
    small = service_messages()["THeartbeat"]
    assert codec.pack(small)[0] == codec.FLAG_RAW
    assert codec.pack(small)[1:] == codec.encode(small)
    large = service_messages()["TSnapshotChunk"]
    raw = codec.encode(large)
    assert len(raw) > codec.COMPRESS_THRESHOLD
    framed = codec.pack(large)
    assert framed[0] == codec.FLAG_ZLIB
    assert len(framed) < len(raw) / 2
    assert codec.unpack(CS.TSnapshotChunk, framed) == large


def test_threshold_is_exclusive() -> None:
    message = service_messages()["TWelcome"]
    size = len(codec.encode(message))
    assert codec.pack(message, compress_threshold=size)[0] == codec.FLAG_RAW
    assert codec.pack(message, compress_threshold=size - 1)[0] == codec.FLAG_ZLIB


def test_one_partition_delta_fits_the_wire_budget() -> None:
    # DESIGN.md: a one-partition change in a big table costs <= 2 KB on the wire.
    obj = partition_object()
    key = "HDFS_PARTITION:sales.events:" + obj.hdfs_partition.partition_name
    change = CS.TCatalogEntry(key=key, version=2, object=codec.encode_object(obj))
    delta = CS.TDelta(service_id="0123456789abcdef", from_version=1, to_version=2, entries=[change])
    assert len(codec.pack(delta)) <= 2048


def zlib_frame(payload: bytes) -> bytes:
    return bytes((codec.FLAG_ZLIB,)) + zlib.compress(payload, 1)


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (b"", "empty frame"),
        (b"\x07" + b"\x00", "unknown frame flag"),
        (b"\x01not zlib at all", "corrupt zlib"),
        (zlib_frame(b"\x00" * 100)[:-3], "truncated"),
        (zlib_frame(b"\x00") + b"junk", "after its end"),
    ],
)
def test_bad_frames_raise_protocol_error(frame: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        codec.unpack(CS.THeartbeat, frame)


def test_zip_bomb_is_refused_before_it_expands() -> None:
    deflater = zlib.compressobj(9)
    bomb = b"".join(deflater.compress(b"\x00" * 2**20) for _ in range(64)) + deflater.flush()
    assert len(bomb) < 2**18  # 64 MiB of zeros in ~64 KiB
    with pytest.raises(ProtocolError, match="expands beyond"):
        codec.unpack(CS.TDelta, bytes((codec.FLAG_ZLIB,)) + bomb, max_size=2**20)


# ---------------------------------------------------------------- hostile input


def frame_of(wire: int, fid: int, body: bytes) -> bytes:
    return bytes((wire,)) + struct.pack("!h", fid) + body


def refused(fn: Any, *args: Any) -> tuple[float, int]:
    """Seconds and peak bytes allocated while ``fn(*args)`` raises ProtocolError."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(ProtocolError):
            fn(*args)
        return time.perf_counter() - start, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        # A list of a type that occupies no bytes, claiming 2**31-1 items:
        # thriftpy2 alone spends seconds "skipping" it.
        (CO.TCatalogObject, frame_of(15, 1, b"\x01" + struct.pack("!i", 2**31 - 1)) + b"\x00"),
        (CO.TCatalogObject, frame_of(13, 1, b"\x01\x01" + struct.pack("!i", 2**31 - 1)) + b"\x00"),
        (CO.TCatalogObject, frame_of(15, 99, b"\x00" + struct.pack("!i", 3)) + b"\x00"),
        # A huge declared list or string with no data behind it: thriftpy2's
        # memory transport reads zeros past the end (a 2 GB list).
        (CS.TDelta, frame_of(15, 4, b"\x0c" + struct.pack("!i", 50_000_000)) + b"\x00"),
        (CS.TDelta, frame_of(15, 4, b"\x0a" + struct.pack("!i", 50_000_000)) + b"\x00"),
        (CS.TStatus, frame_of(11, 2, struct.pack("!i", 2**31 - 1)) + b"abc\x00"),
        (CS.TStatus, frame_of(11, 2, struct.pack("!i", -1)) + b"\x00"),
        # A million empty structs: 1 MB in, ~300 MB of objects out.
        (CO.THdfsTable, frame_of(15, 17, b"\x0c" + struct.pack("!i", 10**6)) + bytes(10**6 + 1)),
        # Nesting beyond 64 levels.
        (CO.TCatalogObject, frame_of(12, 99, b"") + frame_of(12, 1, b"") * 200 + bytes(202)),
        # A map whose keys are declared string on the wire but i64 in the spec.
        (CO.THdfsTable, frame_of(13, 4, b"\x0b\x0c" + struct.pack("!i", 1)) + bytes(12)),
        # Invalid UTF-8 in a string field.
        (CS.TStatus, frame_of(8, 1, bytes(4)) + frame_of(11, 2, b"\0\0\0\2\xff\xfe") + b"\0"),
        # Required fields missing, at the top and nested.
        (CS.TStatus, b"\x00"),
        (CS.TResponse, frame_of(12, 2, b"\x00") + b"\x00"),
        # Trailing bytes, truncation.
        (CS.TStatus, codec.encode(CS.TStatus(code=0)) + b"\x00"),
        (CS.TStatus, codec.encode(CS.TStatus(code=0, message="hi"))[:-1]),
    ],
)
def test_hostile_bytes_raise_protocol_error_fast(cls: type, data: bytes) -> None:
    for fn, arg in ((codec.decode, data), (codec.unpack, zlib_frame(data))):
        seconds, peak = refused(fn, cls, arg)
        assert seconds < 0.5
        assert peak < 2 * len(data) + 2**20


def test_unknown_fields_of_every_type_are_skipped() -> None:
    # A newer peer may add fields; they must not break an older reader.
    known = codec.encode(CS.TStatus(code=2, message="gone"))
    extra = b"".join(
        [
            frame_of(2, 50, b"\x01"),
            frame_of(3, 51, b"\x7f"),
            frame_of(4, 52, bytes(8)),
            frame_of(6, 53, bytes(2)),
            frame_of(8, 54, bytes(4)),
            frame_of(10, 55, bytes(8)),
            frame_of(11, 56, struct.pack("!i", 3) + b"abc"),
            frame_of(12, 57, frame_of(8, 1, bytes(4)) + b"\x00"),
            frame_of(15, 58, b"\x0c\0\0\0\2" + b"\0" + frame_of(2, 1, b"\x01") + b"\0"),
            frame_of(14, 59, b"\x08" + struct.pack("!i", 2) + bytes(8)),
            frame_of(
                13,
                60,
                b"\x0b\x0f"
                + struct.pack("!i", 1)
                + struct.pack("!i", 1)
                + b"k"
                + b"\x08"
                + struct.pack("!i", 1)
                + bytes(4),
            ),
            # A known field with the wrong wire type is skipped too.
            frame_of(11, 1, struct.pack("!i", 1) + b"x"),
        ]
    )
    assert codec.decode(CS.TStatus, known[:-1] + extra + b"\x00") == CS.TStatus(
        code=2, message="gone"
    )


def test_every_truncation_of_every_object_is_refused() -> None:
    for make in CATALOG_OBJECTS.values():
        blob = codec.encode_object(make())
        for end in range(len(blob)):
            with pytest.raises(ProtocolError):
                codec.decode_object(blob[:end])
    framed = codec.pack(service_messages()["TSnapshotChunk"])
    for end in range(0, len(framed), 7):
        with pytest.raises(ProtocolError):
            codec.unpack(CS.TSnapshotChunk, framed[:end])


TARGETS = [CO.TCatalogObject, CS.TDelta, CS.TRequest, CS.TResponse, CS.TAdminRequest]


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=200), target=st.sampled_from(TARGETS))
def test_random_bytes_decode_or_raise_protocol_error(data: bytes, target: type) -> None:
    for fn in (codec.decode, codec.unpack):
        with contextlib.suppress(ProtocolError):
            assert isinstance(fn(target, data), target)


def wire_value(wire: int) -> st.SearchStrategy[bytes]:
    """Bytes of one well-formed value of wire type ``wire`` (any content)."""
    fixed = {2: 1, 3: 1, 4: 8, 6: 2, 8: 4, 10: 8}
    if wire in fixed:
        return st.binary(min_size=fixed[wire], max_size=fixed[wire])
    if wire == 11:
        return st.binary(max_size=12).map(lambda b: struct.pack("!i", len(b)) + b)
    if wire == 12:
        return st.lists(wire_field(), max_size=4).map(lambda fs: b"".join(fs) + b"\x00")
    inner = st.sampled_from([2, 8, 11, 12, 15])
    if wire == 15:
        return inner.flatmap(lambda t: st.lists(wire_value(t), max_size=3).map(list_of(t)))
    return st.tuples(inner, inner).flatmap(
        lambda kv: st.lists(st.tuples(wire_value(kv[0]), wire_value(kv[1])), max_size=3).map(
            map_of(*kv)
        )
    )


def list_of(item: int) -> Any:
    return lambda items: bytes((item,)) + struct.pack("!i", len(items)) + b"".join(items)


def map_of(key: int, value: int) -> Any:
    def join(pairs: list[tuple[bytes, bytes]]) -> bytes:
        body = b"".join(k + v for k, v in pairs)
        return bytes((key, value)) + struct.pack("!i", len(pairs)) + body

    return join


def wire_field() -> st.SearchStrategy[bytes]:
    types = st.sampled_from([2, 3, 4, 6, 8, 10, 11, 12, 13, 15])
    return st.tuples(types, st.integers(0, 30)).flatmap(
        lambda tf: wire_value(tf[0]).map(lambda v: frame_of(tf[0], tf[1], v))
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=wire_value(12), target=st.sampled_from(TARGETS + [CO.THdfsPartition, HMS.Table]))
def test_well_formed_but_foreign_structs_never_escape_protocol_error(
    data: bytes, target: type
) -> None:
    # Valid Thrift of random shape: field ids and types collide with the spec
    # in every way, exercising each skip and mismatch path of the decoder.
    with contextlib.suppress(ProtocolError):
        assert isinstance(codec.decode(target, data), target)


@settings(max_examples=200, deadline=None)
@given(
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=4)
)
def test_corrupted_objects_never_escape_protocol_error(flips: list[tuple[int, int]]) -> None:
    blob = bytearray(codec.encode_object(table_object()))
    for where, mask in flips:
        blob[where % len(blob)] ^= mask
    with contextlib.suppress(ProtocolError):
        codec.decode_object(bytes(blob))


# ---- the validator's generated walkers accept exactly what its generic loop accepts


def generic_walkers() -> Any:
    """Walkers made of the generic loop alone (``validator._rest``), as a mapping the
    validator's dispatch reads in place of its generated ones."""
    from subscriber.protocol import validator as v

    class Generic(dict):  # type: ignore[type-arg]
        def get(self, cls: Any, default: Any = None) -> Any:
            def walk(data: bytes, pos: int, depth: int, budget: list[int]) -> int:
                if depth <= 0:
                    raise v._Malformed("nested too deep")
                _, required, cost = v._table(cls)
                pos, seen, cost = v._rest(data, pos, cls, depth, budget, 0, cost)
                v._charge(budget, cost)
                if seen & required != required:
                    raise v._Malformed(v._missing(cls, seen))
                return pos + 1

            return walk

    return Generic()


def verdict(target: type, data: bytes) -> str:
    """What the validator says of ``data``; a small memory budget, so that path is judged."""
    from subscriber.protocol.validator import validate

    try:
        validate(target, data, max_decoded_size=4096)
    except ProtocolError as exc:
        return str(exc)
    return "ok"


def verdicts(target: type, data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    from subscriber.protocol import validator as v

    generated = verdict(target, data)
    with monkeypatch.context() as patch:
        patch.setattr(v, "_WALKERS", generic_walkers())
        return generated, verdict(target, data)


def test_generated_walkers_judge_every_object_and_truncation_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    blobs = [codec.encode_object(make()) for make in CATALOG_OBJECTS.values()]
    for blob in blobs:
        for end in [*range(0, len(blob), 3), len(blob)]:
            generated, generic = verdicts(CO.TCatalogObject, blob[:end], monkeypatch)
            assert generated == generic
    assert "ok" in {verdicts(CO.TCatalogObject, b, monkeypatch)[0] for b in blobs}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=4),
    kind=st.sampled_from(sorted(CATALOG_OBJECTS)),
)
def test_generated_walkers_judge_corrupted_objects_alike(
    flips: list[tuple[int, int]], kind: str
) -> None:
    blob = bytearray(codec.encode_object(CATALOG_OBJECTS[kind]()))
    for where, mask in flips:
        blob[where % len(blob)] ^= mask
    with pytest.MonkeyPatch.context() as monkeypatch:
        generated, generic = verdicts(CO.TCatalogObject, bytes(blob), monkeypatch)
    assert generated == generic


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=wire_value(12), target=st.sampled_from(TARGETS + [CO.THdfsPartition, HMS.Table]))
def test_generated_walkers_judge_foreign_structs_alike(data: bytes, target: type) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        generated, generic = verdicts(target, data, monkeypatch)
    assert generated == generic


def test_walkers_made_by_racing_threads_judge_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from subscriber.protocol import validator as v

    blobs = [codec.encode_object(make()) for make in CATALOG_OBJECTS.values()]
    for _ in range(5):
        monkeypatch.setattr(v, "_WALKERS", {})  # every walker made again, by racing threads
        verdicts: list[list[str]] = []

        def judge(into: list[list[str]]) -> None:
            into.append([verdict(CO.TCatalogObject, blob) for blob in blobs])

        threads = [threading.Thread(target=judge, args=(verdicts,)) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(verdicts) == 6 and all(each == verdicts[0] for each in verdicts)


def test_a_first_validation_makes_only_the_walkers_its_bytes_need(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The walkers of the structs a table object holds, not of all 74 a TCatalogObject
    can reach (compiling those cost a first get_table 46 ms)."""
    from subscriber.protocol import validator as v

    monkeypatch.setattr(v, "_WALKERS", {})
    v.validate(CO.TCatalogObject, codec.encode_object(CATALOG_OBJECTS["table"]()))
    made = {cls.__name__ for cls in v._WALKERS}
    assert {"TCatalogObject", "TTable", "Table"} <= made and len(made) < 30, sorted(made)
    for make in CATALOG_OBJECTS.values():
        v.validate(CO.TCatalogObject, codec.encode_object(make()))  # the rest made when met
    assert len(v._WALKERS) > len(made)


def test_prepare_makes_every_walker_a_catalog_object_can_need(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from subscriber.protocol import validator as v

    monkeypatch.setattr(v, "_WALKERS", {})
    count = codec.prepare_objects()
    assert count == len(v._WALKERS) > 50  # every struct TCatalogObject can reach
    assert {HMS.Table, HMS.StorageDescriptor, CO.THdfsPartition} <= set(v._WALKERS)
    before = dict(v._WALKERS)
    for make in CATALOG_OBJECTS.values():  # nothing more to make, and the same verdicts
        v.validate(CO.TCatalogObject, codec.encode_object(make()))
    assert before == v._WALKERS
    assert codec.prepare_objects() == count  # idempotent
