// Literal expressions, the form in which Impala carries partition key values
// (THdfsPartition.partitionKeyExprs: one TExpr of one literal node per key).
//
// A wire-compatible subset of Apache Impala's common/thrift/Exprs.thrift: the
// node types and field ids equal upstream; predicate, function-call and other
// non-literal node payloads are left out (unknown field ids are skipped).

namespace java org.apache.impala.thrift

include "Types.thrift"

enum TExprNodeType {
  NULL_LITERAL = 0
  BOOL_LITERAL = 1
  INT_LITERAL = 2
  FLOAT_LITERAL = 3
  STRING_LITERAL = 4
  DECIMAL_LITERAL = 5
  TIMESTAMP_LITERAL = 6
  CASE_EXPR = 7
  COMPOUND_PRED = 8
  IN_PRED = 9
  IS_NULL_PRED = 10
  LIKE_PRED = 11
  SLOT_REF = 12
  TUPLE_IS_NULL_PRED = 13
  FUNCTION_CALL = 14
  AGGREGATE_EXPR = 15
  IS_NOT_EMPTY_PRED = 16
  KUDU_PARTITION_EXPR = 17
  VALID_TUPLE_ID_EXPR = 18
  DATE_LITERAL = 19
}

struct TBoolLiteral {
  1: required bool value
}

struct TDateLiteral {
  // Days since 1970-01-01.
  1: required i32 days_since_epoch
  2: required string date_string
}

struct TDecimalLiteral {
  // Unscaled value, two's complement, big endian.
  1: required binary value
}

struct TFloatLiteral {
  1: required double value
}

struct TIntLiteral {
  1: required i64 value
}

struct TStringLiteral {
  1: required string value
}

struct TTimestampLiteral {
  // Impala's 16-byte in-memory TimestampValue.
  1: required binary value
}

// One node of a flattened expression tree. A literal has num_children = 0,
// is_constant = true, `type` set to its column type, and exactly one of the
// *_literal fields set (none for NULL_LITERAL).
struct TExprNode {
  1: required TExprNodeType node_type
  2: required Types.TColumnType type
  3: required i32 num_children
  4: required bool is_constant
  5: optional Types.TFunction fn
  6: optional i32 vararg_start_idx
  7: optional TBoolLiteral bool_literal
  9: optional TDateLiteral date_literal
  10: optional TFloatLiteral float_literal
  11: optional TIntLiteral int_literal
  16: optional TStringLiteral string_literal
  18: optional TDecimalLiteral decimal_literal
  20: optional TTimestampLiteral timestamp_literal
}

// Nodes in depth-first order.
struct TExpr {
  1: required list<TExprNode> nodes
}
