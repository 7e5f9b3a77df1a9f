"""The IDL matches upstream Apache Impala on the wire, and its structs pickle.

The tables below were read from apache/impala ``common/thrift``:
CatalogObjects.thrift at 5d32919f (the newest stored; it has
TCatalogObject.hdfs_partition), Types.thrift at 45995e68, Exprs.thrift at
763acffb, Data.thrift (TColumnValue) and generate_error_codes.py (TErrorCode).
They are facts to compare against, not generated from our files.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from thriftpy2.thrift import TType

import idl

ROOT = Path(__file__).resolve().parents[2]
CO = idl.catalog_objects
CS = idl.catalog_service
TY = sys.modules["idl.Types_thrift"]
EX = sys.modules["idl.Exprs_thrift"]
ST = sys.modules["idl.Status_thrift"]

UPSTREAM_ENUMS: dict[tuple[object, str], dict[str, int]] = {
    (CO, "TCatalogObjectType"): {
        "UNKNOWN": 0, "CATALOG": 1, "DATABASE": 2, "TABLE": 3, "VIEW": 4, "FUNCTION": 5,
        "DATA_SOURCE": 6, "PRINCIPAL": 7, "PRIVILEGE": 8, "HDFS_CACHE_POOL": 9,
        "AUTHZ_CACHE_INVALIDATION": 10, "HDFS_PARTITION": 11,
    },
    (CO, "TTableType"): {
        "HDFS_TABLE": 0, "HBASE_TABLE": 1, "VIEW": 2, "DATA_SOURCE_TABLE": 3, "KUDU_TABLE": 4,
        "ICEBERG_TABLE": 5, "UNLOADED_TABLE": 6, "MATERIALIZED_VIEW": 7, "SYSTEM_TABLE": 8,
    },
    (CO, "THdfsFileFormat"): {
        "TEXT": 0, "RC_FILE": 1, "SEQUENCE_FILE": 2, "AVRO": 3, "PARQUET": 4, "KUDU": 5,
        "ORC": 6, "HUDI_PARQUET": 7, "ICEBERG": 8, "JSON": 9, "JDBC": 10,
    },
    (CO, "THdfsCompression"): {
        "NONE": 0, "DEFAULT": 1, "GZIP": 2, "DEFLATE": 3, "BZIP2": 4, "SNAPPY": 5,
        "SNAPPY_BLOCKED": 6, "LZO": 7, "LZ4": 8, "ZLIB": 9, "ZSTD": 10, "BROTLI": 11,
        "LZ4_BLOCKED": 12,
    },
    (CO, "TColumnEncoding"): {
        "AUTO": 0, "PLAIN": 1, "PREFIX": 2, "GROUP_VARINT": 3, "RLE": 4, "DICTIONARY": 5,
        "BIT_SHUFFLE": 6,
    },
    (CO, "THdfsSeqCompressionMode"): {"RECORD": 0, "BLOCK": 1},
    (CO, "TTablePropertyType"): {"TBL_PROPERTY": 0, "SERDE_PROPERTY": 1},
    (CO, "TAccessLevel"): {"NONE": 0, "READ_WRITE": 1, "READ_ONLY": 2, "WRITE_ONLY": 3},
    (CO, "TBucketType"): {"NONE": 0, "HASH": 1},
    (CO, "TPrincipalType"): {"ROLE": 0, "USER": 1, "GROUP": 2},
    (CO, "TPrivilegeScope"): {
        "SERVER": 0, "URI": 1, "DATABASE": 2, "TABLE": 3, "COLUMN": 4, "STORAGE_TYPE": 5,
        "STORAGEHANDLER_URI": 6, "USER_DEFINED_FN": 7,
    },
    (CO, "TPrivilegeLevel"): {
        "ALL": 0, "INSERT": 1, "SELECT": 2, "REFRESH": 3, "CREATE": 4, "ALTER": 5, "DROP": 6,
        "OWNER": 7, "RWSTORAGE": 8,
    },
    (TY, "TPrimitiveType"): {
        "INVALID_TYPE": 0, "NULL_TYPE": 1, "BOOLEAN": 2, "TINYINT": 3, "SMALLINT": 4, "INT": 5,
        "BIGINT": 6, "FLOAT": 7, "DOUBLE": 8, "DATE": 9, "DATETIME": 10, "TIMESTAMP": 11,
        "STRING": 12, "BINARY": 13, "DECIMAL": 14, "CHAR": 15, "VARCHAR": 16,
        "FIXED_UDA_INTERMEDIATE": 17,
    },
    (TY, "TTypeNodeType"): {"SCALAR": 0, "ARRAY": 1, "MAP": 2, "STRUCT": 3},
    (TY, "TFunctionCategory"): {"SCALAR": 0, "AGGREGATE": 1, "ANALYTIC": 2},
    (TY, "TFunctionBinaryType"): {"BUILTIN": 0, "JAVA": 1, "NATIVE": 2, "IR": 3},
    (EX, "TExprNodeType"): {
        "NULL_LITERAL": 0, "BOOL_LITERAL": 1, "INT_LITERAL": 2, "FLOAT_LITERAL": 3,
        "STRING_LITERAL": 4, "DECIMAL_LITERAL": 5, "TIMESTAMP_LITERAL": 6, "CASE_EXPR": 7,
        "COMPOUND_PRED": 8, "IN_PRED": 9, "IS_NULL_PRED": 10, "LIKE_PRED": 11, "SLOT_REF": 12,
        "TUPLE_IS_NULL_PRED": 13, "FUNCTION_CALL": 14, "AGGREGATE_EXPR": 15,
        "IS_NOT_EMPTY_PRED": 16, "KUDU_PARTITION_EXPR": 17, "VALID_TUPLE_ID_EXPR": 18,
        "DATE_LITERAL": 19,
    },
}  # fmt: skip

# Upstream has a few hundred error codes; we keep the first ten, same values.
UPSTREAM_ERROR_CODES = {
    "OK": 0, "UNUSED": 1, "GENERAL": 2, "CANCELLED": 3, "ANALYSIS_ERROR": 4,
    "NOT_IMPLEMENTED_ERROR": 5, "RUNTIME_ERROR": 6, "MEM_LIMIT_EXCEEDED": 7,
    "INTERNAL_ERROR": 8, "RECOVERABLE_ERROR": 9,
}  # fmt: skip

S, I8, I16, I32, I64 = TType.STRING, TType.BYTE, TType.I16, TType.I32, TType.I64
B, D, ST_, L, M = TType.BOOL, TType.DOUBLE, TType.STRUCT, TType.LIST, TType.MAP
BIN = TType.BINARY

# struct -> {field id: (name, wire type, required)}, for every field we keep.
UPSTREAM_FIELDS: dict[tuple[object, str], dict[int, tuple[str, int, bool]]] = {
    (CO, "TCatalogObject"): {
        1: ("type", I32, True), 2: ("catalog_version", I64, True), 3: ("catalog", ST_, False),
        4: ("db", ST_, False), 5: ("table", ST_, False), 6: ("fn", ST_, False),
        7: ("data_source", ST_, False), 8: ("principal", ST_, False),
        9: ("privilege", ST_, False), 10: ("cache_pool", ST_, False),
        11: ("authz_cache_invalidation", ST_, False), 12: ("hdfs_partition", ST_, False),
    },
    (CO, "TCatalog"): {
        1: ("catalog_service_id", ST_, True), 2: ("last_reset_catalog_version", I64, True),
    },
    (CO, "TDatabase"): {1: ("db_name", S, True), 2: ("metastore_db", ST_, False)},
    (CO, "TTable"): {
        1: ("db_name", S, True), 2: ("tbl_name", S, True), 3: ("load_status", ST_, False),
        4: ("access_level", I32, False), 5: ("columns", L, False),
        6: ("clustering_columns", L, False), 7: ("virtual_columns", L, False),
        8: ("table_stats", ST_, False), 9: ("table_type", I32, False),
        10: ("hdfs_table", ST_, False), 12: ("metastore_table", ST_, False),
        16: ("storage_metadata_load_time_ns", I64, False), 18: ("tbl_comment", S, False),
    },
    (CO, "THdfsTable"): {
        1: ("hdfsBaseDir", S, True), 2: ("colNames", L, True),
        3: ("nullPartitionKeyValue", S, True), 5: ("nullColumnValue", S, True),
        6: ("avroSchema", S, False), 4: ("partitions", M, True),
        14: ("has_full_partitions", B, False), 15: ("has_partition_names", B, False),
        10: ("prototype_partition", ST_, True), 9: ("partition_prefixes", L, False),
        7: ("network_addresses", L, False), 12: ("is_full_acid", B, False),
        13: ("valid_write_ids", ST_, False), 16: ("bucket_info", ST_, False),
        17: ("dropped_partitions", L, False),
    },
    (CO, "THdfsPartition"): {
        7: ("partitionKeyExprs", L, False), 10: ("location", ST_, False), 14: ("id", I64, False),
        26: ("prev_id", I64, False), 9: ("file_desc", L, False),
        21: ("insert_file_desc", L, False), 22: ("delete_file_desc", L, False),
        11: ("access_level", I32, False), 12: ("stats", ST_, False),
        13: ("is_marked_cached", B, False), 15: ("hms_parameters", M, False),
        16: ("num_blocks", I64, False), 17: ("total_file_size_bytes", I64, False),
        18: ("partition_stats", BIN, False), 19: ("has_incremental_stats", B, False),
        20: ("write_id", I64, False), 23: ("db_name", S, False), 24: ("tbl_name", S, False),
        25: ("partition_name", S, False), 27: ("hdfs_storage_descriptor", ST_, False),
    },
    (CO, "THdfsPartitionLocation"): {1: ("prefix_index", I32, True), 2: ("suffix", S, True)},
    (CO, "THdfsStorageDescriptor"): {
        1: ("lineDelim", I8, True), 2: ("fieldDelim", I8, True), 3: ("collectionDelim", I8, True),
        4: ("mapKeyDelim", I8, True), 5: ("escapeChar", I8, True), 6: ("quoteChar", I8, True),
        7: ("fileFormat", I32, True), 8: ("blockSize", I32, True),
    },
    (CO, "THdfsFileDesc"): {1: ("file_desc_data", BIN, True), 2: ("file_metadata", BIN, False)},
    (CO, "TColumn"): {
        1: ("columnName", S, True), 2: ("columnType", ST_, True), 3: ("comment", S, False),
        4: ("col_stats", ST_, False), 5: ("position", I32, False), 7: ("is_hidden", B, False),
    },
    (CO, "TColumnStats"): {
        1: ("avg_size", D, True), 2: ("max_size", I64, True), 3: ("num_distinct_values", I64, True),
        4: ("num_nulls", I64, True), 5: ("num_trues", I64, True), 6: ("num_falses", I64, True),
        7: ("low_value", ST_, False), 8: ("high_value", ST_, False),
    },
    (CO, "TTableStats"): {1: ("num_rows", I64, True), 2: ("total_file_bytes", I64, False)},
    (CO, "TPartitionStats"): {1: ("stats", ST_, True), 2: ("intermediate_col_stats", M, False)},
    (CO, "TBucketInfo"): {
        1: ("bucket_type", I32, True), 2: ("bucket_columns", L, False),
        3: ("num_bucket", I32, True),
    },
    (CO, "TValidWriteIdList"): {
        1: ("high_watermark", I64, False), 2: ("min_open_write_id", I64, False),
        3: ("invalid_write_ids", L, False), 4: ("aborted_indexes", L, False),
    },
    (CO, "TPrincipal"): {
        1: ("principal_name", S, True), 2: ("principal_id", I32, True),
        3: ("principal_type", I32, True), 4: ("grant_groups", L, True),
    },
    (CO, "TPrivilege"): {
        2: ("privilege_level", I32, True), 3: ("scope", I32, True), 4: ("has_grant_opt", B, True),
        5: ("principal_id", I32, False), 6: ("principal_type", I32, False),
        7: ("server_name", S, False), 8: ("db_name", S, False), 9: ("table_name", S, False),
        10: ("uri", S, False), 11: ("create_time_ms", I64, False), 12: ("column_name", S, False),
        13: ("storage_type", S, False), 14: ("storage_url", S, False), 15: ("fn_name", S, False),
    },
    (CO, "THdfsCachePool"): {1: ("pool_name", S, True)},
    (CO, "TAuthzCacheInvalidation"): {1: ("marker_name", S, True)},
    (CO, "TDataSource"): {
        1: ("name", S, True), 2: ("hdfs_location", S, True), 3: ("class_name", S, True),
        4: ("api_version", S, True),
    },
    (CO, "TPartitionKeyValue"): {1: ("name", S, True), 2: ("value", S, True)},
    (CO, "TTableName"): {1: ("db_name", S, True), 2: ("table_name", S, True)},
    (TY, "TUniqueId"): {1: ("hi", I64, True), 2: ("lo", I64, True)},
    (TY, "TColumnType"): {1: ("types", L, False)},
    (TY, "TTypeNode"): {
        1: ("type", I32, True), 2: ("scalar_type", ST_, False), 3: ("struct_fields", L, False),
    },
    (TY, "TScalarType"): {
        1: ("type", I32, True), 2: ("len", I32, False), 3: ("precision", I32, False),
        4: ("scale", I32, False),
    },
    (TY, "TFunction"): {
        1: ("name", ST_, True), 2: ("binary_type", I32, False), 3: ("arg_types", L, False),
        4: ("ret_type", ST_, False), 5: ("has_var_args", B, False), 6: ("comment", S, False),
        7: ("signature", S, False), 8: ("hdfs_location", S, False), 9: ("scalar_fn", ST_, False),
        10: ("aggregate_fn", ST_, False), 11: ("is_persistent", B, False),
        12: ("last_modified_time", I64, False),
    },
    (TY, "TColumnValue"): {
        1: ("bool_val", B, False), 6: ("byte_val", I8, False), 7: ("short_val", I16, False),
        2: ("int_val", I32, False), 3: ("long_val", I64, False), 4: ("double_val", D, False),
        5: ("string_val", S, False), 8: ("binary_val", BIN, False),
        9: ("timestamp_val", BIN, False), 10: ("decimal_val", BIN, False),
        11: ("date_val", I32, False),
    },
    (EX, "TExprNode"): {
        1: ("node_type", I32, True), 2: ("type", ST_, True), 3: ("num_children", I32, True),
        4: ("is_constant", B, True), 5: ("fn", ST_, False), 6: ("vararg_start_idx", I32, False),
        7: ("bool_literal", ST_, False), 9: ("date_literal", ST_, False),
        10: ("float_literal", ST_, False), 11: ("int_literal", ST_, False),
        16: ("string_literal", ST_, False), 18: ("decimal_literal", ST_, False),
        20: ("timestamp_literal", ST_, False),
    },
    (EX, "TExpr"): {1: ("nodes", L, True)},
    (ST, "TStatus"): {1: ("status_code", I32, True), 2: ("error_msgs", L, False)},
}  # fmt: skip

# catalogd's own additions use ids from 100 up (no upstream release does) and
# are always optional, so Impala peers skip them.
FIRST_EXTENSION_ID = 100


def enum_members(module: object, name: str) -> dict[str, int]:
    enum = getattr(module, name)
    return dict(enum._NAMES_TO_VALUES)


@pytest.mark.parametrize(
    ("module", "name"), list(UPSTREAM_ENUMS), ids=[n for _, n in UPSTREAM_ENUMS]
)
def test_enum_members_and_values_equal_upstream(module: object, name: str) -> None:
    assert enum_members(module, name) == UPSTREAM_ENUMS[(module, name)]


def test_error_codes_are_an_upstream_prefix() -> None:
    assert enum_members(ST, "TErrorCode") == UPSTREAM_ERROR_CODES


@pytest.mark.parametrize(
    ("module", "name"), list(UPSTREAM_FIELDS), ids=[n for _, n in UPSTREAM_FIELDS]
)
def test_struct_fields_equal_upstream(module: object, name: str) -> None:
    spec = getattr(module, name).thrift_spec
    ours = {fid: (f[1], f[0], f[-1]) for fid, f in spec.items() if fid < FIRST_EXTENSION_ID}
    assert ours == UPSTREAM_FIELDS[(module, name)]
    extensions = {fid: f for fid, f in spec.items() if fid >= FIRST_EXTENSION_ID}
    assert all(f[-1] is False for f in extensions.values()), extensions


def test_catalogd_extensions_are_present() -> None:
    assert CO.TTable.thrift_spec[100][1] == "id"
    pool = {f[1] for fid, f in CO.THdfsCachePool.thrift_spec.items() if fid >= FIRST_EXTENSION_ID}
    assert pool >= {"owner_name", "group_name", "mode", "limit", "max_relative_expiry_ms"}


def test_catalog_objects_embed_the_metastore_structs() -> None:
    hms = idl.hive_metastore
    assert CO.TTable.thrift_spec[12][2] is hms.Table
    assert CO.TDatabase.thrift_spec[2][2] is hms.Database
    assert CO.TCatalog.thrift_spec[1][2] is TY.TUniqueId
    assert CO.TCatalogObject.thrift_spec[12][2] is CO.THdfsPartition
    assert CO.PROTOTYPE_PARTITION_ID == -1


def test_service_enums_keep_the_designed_values() -> None:
    # Members may be added; the designed ones never change value.
    status = {"OK": 0, "ERROR": 1, "NOTFOUND": 2, "CONFLICT": 3, "BUSY": 4, "INTERNAL_ERR": 5}
    commands = {
        "STATUS": 1, "INVALIDATE": 2, "REFRESH": 3, "CACHE_POOL_ADD": 4, "CACHE_POOL_ALTER": 5,
        "CACHE_POOL_REMOVE": 6, "CACHE_POOL_LIST": 7, "CACHE": 8, "UNCACHE": 9, "AUDIT": 10,
    }  # fmt: skip
    assert enum_members(CS, "TStatusCode").items() >= status.items()
    assert enum_members(CS, "TAdminCommand").items() >= commands.items()
    assert CS.PROTOCOL_VERSION >= 1


def test_modules_are_registered_under_idl_names() -> None:
    representative = {
        "CatalogService": "TDelta",
        "CatalogObjects": "TCatalogObject",
        "hive_metastore": "Table",
        "Types": "TFunction",
        "Exprs": "TExpr",
        "Status": "TStatus",
    }
    for file, struct_name in representative.items():
        module_name = f"idl.{file}_thrift"
        assert getattr(sys.modules[module_name], struct_name).__module__ == module_name


def sample_objects() -> list[object]:
    column_type = TY.TColumnType(
        types=[
            TY.TTypeNode(
                type=TY.TTypeNodeType.SCALAR,
                scalar_type=TY.TScalarType(type=TY.TPrimitiveType.DECIMAL, precision=10, scale=2),
            )
        ]
    )
    table = CO.TCatalogObject(
        type=CO.TCatalogObjectType.TABLE,
        catalog_version=7,
        table=CO.TTable(
            db_name="sales",
            tbl_name="orders",
            columns=[CO.TColumn(columnName="amount", columnType=column_type, position=0)],
            metastore_table=idl.hive_metastore.Table(
                tableName="orders", dbName="sales", parameters={"k": "v"}
            ),
        ),
    )
    delta = CS.TDelta(
        service_id="svc",
        from_version=6,
        to_version=7,
        entries=[CS.TCatalogEntry(key="TABLE:sales.orders", version=7, object=b"\x0c\x00")],
    )
    return [table, delta, idl.hive_metastore.Partition(values=["2024-01-01"])]


def test_structs_unpickle_in_a_fresh_process() -> None:
    objects = sample_objects()
    # The child imports nothing itself: unpickling must find idl.<File>_thrift.
    child = (
        "import pickle, sys\n"
        "objs = pickle.loads(sys.stdin.buffer.read())\n"
        "print(*sorted({type(o).__module__ for o in objs}), file=sys.stderr)\n"
        "sys.stdout.buffer.write(pickle.dumps(objs))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child],
        input=pickle.dumps(objects),
        capture_output=True,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    assert pickle.loads(done.stdout) == objects
    assert done.stderr.decode().split() == [
        "idl.CatalogObjects_thrift",
        "idl.CatalogService_thrift",
        "idl.hive_metastore_thrift",
    ]
