// Scalar and function types used by CatalogObjects.thrift.
//
// A wire-compatible subset of Apache Impala's common/thrift/Types.thrift (plus
// TColumnValue, which upstream keeps in Data.thrift): every enum value and
// field id below equals upstream, so Impala peers decode what we encode. Types
// that only query planning and execution need are left out.

namespace java org.apache.impala.thrift

include "hive_metastore.thrift"

enum TPrimitiveType {
  INVALID_TYPE = 0
  NULL_TYPE = 1
  BOOLEAN = 2
  TINYINT = 3
  SMALLINT = 4
  INT = 5
  BIGINT = 6
  FLOAT = 7
  DOUBLE = 8
  DATE = 9
  DATETIME = 10
  TIMESTAMP = 11
  STRING = 12
  BINARY = 13
  DECIMAL = 14
  CHAR = 15
  VARCHAR = 16
  FIXED_UDA_INTERMEDIATE = 17
}

enum TTypeNodeType {
  SCALAR = 0
  ARRAY = 1
  MAP = 2
  STRUCT = 3
}

struct TScalarType {
  1: required TPrimitiveType type
  // CHAR and VARCHAR only.
  2: optional i32 len
  // DECIMAL only.
  3: optional i32 precision
  4: optional i32 scale
}

struct TStructField {
  1: required string name
  2: optional string comment
  3: optional i32 field_id
}

struct TTypeNode {
  1: required TTypeNodeType type
  2: optional TScalarType scalar_type
  // STRUCT only: one entry per child node that follows in TColumnType.types.
  3: optional list<TStructField> struct_fields
}

// A type tree flattened depth-first: a scalar is one node; ARRAY is followed by
// its item type, MAP by key then value, STRUCT by each field's type.
struct TColumnType {
  1: list<TTypeNode> types
}

struct TNetworkAddress {
  1: required string hostname
  2: required i32 port
  3: optional string uds_address
}

struct TUniqueId {
  1: required i64 hi
  2: required i64 lo
}

enum TFunctionCategory {
  SCALAR = 0
  AGGREGATE = 1
  ANALYTIC = 2
}

enum TFunctionBinaryType {
  BUILTIN = 0
  // A Hive/Java UDF from a jar: the kind every HMS function is.
  JAVA = 1
  NATIVE = 2
  IR = 3
}

struct TFunctionName {
  // Unset for builtins.
  1: optional string db_name
  2: required string function_name
}

struct TScalarFunction {
  // For JAVA functions: the implementing class name.
  1: required string symbol
  2: optional string prepare_fn_symbol
  3: optional string close_fn_symbol
}

struct TAggregateFunction {
  1: required TColumnType intermediate_type
  2: required bool is_analytic_only_fn
  3: required string update_fn_symbol
  4: required string init_fn_symbol
  5: optional string serialize_fn_symbol
  6: optional string merge_fn_symbol
  7: optional string finalize_fn_symbol
  8: optional string get_value_fn_symbol
  9: optional string remove_fn_symbol
  10: optional bool ignores_distinct
}

// Upstream makes everything but the name optional, so a name-only TFunction
// can stand for a function (e.g. as the payload of a removal).
struct TFunction {
  1: required TFunctionName name
  2: optional TFunctionBinaryType binary_type
  3: optional list<TColumnType> arg_types
  4: optional TColumnType ret_type
  5: optional bool has_var_args
  6: optional string comment
  7: optional string signature
  // Location of the jar (or library) that holds the function.
  8: optional string hdfs_location
  9: optional TScalarFunction scalar_fn
  10: optional TAggregateFunction aggregate_fn
  11: optional bool is_persistent
  12: optional i64 last_modified_time
  // catalogd: the HMS Function as HMS returned it (for HMS endpoints).
  100: optional hive_metastore.Function hms_function
}

// One value of any scalar type; at most one field is set (none for NULL).
// Upstream: Data.thrift.
struct TColumnValue {
  1: optional bool bool_val
  6: optional byte byte_val
  7: optional i16 short_val
  2: optional i32 int_val
  3: optional i64 long_val
  4: optional double double_val
  5: optional string string_val
  8: optional binary binary_val
  9: optional binary timestamp_val
  10: optional binary decimal_val
  11: optional i32 date_val
}
