// Impala's TStatus, as TTable.load_status carries it.
//
// Upstream declares TErrorCode in a generated ErrorCodes.thrift with a few
// hundred members; only the general ones are kept here, with their upstream
// values. Enums travel as i32, so a peer's other codes still decode (as plain
// integers).

namespace java org.apache.impala.thrift

enum TErrorCode {
  OK = 0
  UNUSED = 1
  GENERAL = 2
  CANCELLED = 3
  ANALYSIS_ERROR = 4
  NOT_IMPLEMENTED_ERROR = 5
  RUNTIME_ERROR = 6
  MEM_LIMIT_EXCEEDED = 7
  INTERNAL_ERROR = 8
  RECOVERABLE_ERROR = 9
}

struct TStatus {
  1: required TErrorCode status_code
  2: list<string> error_msgs
}
