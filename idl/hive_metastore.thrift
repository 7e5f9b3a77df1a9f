// The part of the Hive Metastore Thrift API that catalogd uses.
//
// Wire compatibility: every field id, field type and argument id below matches
// Hive Metastore 2.3 (checked by reflection on hive-metastore-2.3.10.jar, see
// tests/integration/test_metastore_idl.py) and later releases, which only add
// fields. Fields and methods we never use are left out: the binary protocol
// skips unknown field ids, so a subset decodes the full server structs.
//
// Deliberately left out:
// * SkewedInfo.skewedColValueLocationMaps (id 3): a map keyed by list<string>,
//   which thriftpy2 cannot decode into a dict. Skipping the id drops it.
// * The `extends fb303.FacebookService` of the real service: none of our calls
//   is an fb303 method, and method dispatch is by name only.
//
// Requiredness mirrors upstream ("default" fields carry no keyword), so
// structs we build pass the server's validation the same way Java clients do.

namespace py hive_metastore
namespace java org.apache.hadoop.hive.metastore.api

// Table parameter holding the time of the last DDL on the object (seconds).
const string DDL_TIME = "transient_lastDdlTime"

// ---------------------------------------------------------------- enums

enum HiveObjectType {
  GLOBAL = 1,
  DATABASE = 2,
  TABLE = 3,
  PARTITION = 4,
  COLUMN = 5,
}

enum PrincipalType {
  USER = 1,
  ROLE = 2,
  GROUP = 3,
}

enum GrantRevokeType {
  GRANT = 1,
  REVOKE = 2,
}

enum FunctionType {
  JAVA = 1,
}

enum ResourceType {
  JAR = 1,
  FILE = 2,
  ARCHIVE = 3,
}

// ---------------------------------------------------------------- privileges and roles

struct PrivilegeGrantInfo {
  1: string privilege,
  2: i32 createTime,
  3: string grantor,
  4: PrincipalType grantorType,
  5: bool grantOption,
}

struct HiveObjectRef {
  1: HiveObjectType objectType,
  2: string dbName,
  3: string objectName,
  4: list<string> partValues,
  5: string columnName,
  6: optional string catName,
}

struct HiveObjectPrivilege {
  1: HiveObjectRef hiveObject,
  2: string principalName,
  3: PrincipalType principalType,
  4: PrivilegeGrantInfo grantInfo,
}

struct PrivilegeBag {
  1: list<HiveObjectPrivilege> privileges,
}

// Grants keyed by principal name, one map per principal type.
struct PrincipalPrivilegeSet {
  1: map<string, list<PrivilegeGrantInfo>> userPrivileges,
  2: map<string, list<PrivilegeGrantInfo>> groupPrivileges,
  3: map<string, list<PrivilegeGrantInfo>> rolePrivileges,
}

struct GrantRevokePrivilegeRequest {
  1: GrantRevokeType requestType,
  2: PrivilegeBag privileges,
  3: optional bool revokeGrantOption,
}

struct GrantRevokePrivilegeResponse {
  1: optional bool success,
}

struct Role {
  1: string roleName,
  2: i32 createTime,
  3: string ownerName,
}

// One membership: principalName (of principalType) holds roleName.
struct RolePrincipalGrant {
  1: string roleName,
  2: string principalName,
  3: PrincipalType principalType,
  4: bool grantOption,
  5: i32 grantTime,
  6: string grantorName,
  7: PrincipalType grantorPrincipalType,
}

struct GetRoleGrantsForPrincipalRequest {
  1: required string principal_name,
  2: required PrincipalType principal_type,
}

struct GetRoleGrantsForPrincipalResponse {
  1: required list<RolePrincipalGrant> principalGrants,
}

struct GetPrincipalsInRoleRequest {
  1: required string roleName,
}

struct GetPrincipalsInRoleResponse {
  1: required list<RolePrincipalGrant> principalGrants,
}

struct GrantRevokeRoleRequest {
  1: GrantRevokeType requestType,
  2: string roleName,
  3: string principalName,
  4: PrincipalType principalType,
  5: optional string grantor,
  6: optional PrincipalType grantorType,
  7: optional bool grantOption,
}

struct GrantRevokeRoleResponse {
  1: optional bool success,
}

// ---------------------------------------------------------------- databases, tables, partitions

struct FieldSchema {
  1: string name,
  2: string type,
  3: string comment,
}

struct Database {
  1: string name,
  2: string description,
  3: string locationUri,
  4: map<string, string> parameters,
  5: optional PrincipalPrivilegeSet privileges,
  6: optional string ownerName,
  7: optional PrincipalType ownerType,
  // Present from the catalog-aware releases on; older servers omit it.
  8: optional string catalogName,
}

struct SerDeInfo {
  1: string name,
  2: string serializationLib,
  3: map<string, string> parameters,
}

// A sort column; order is 1 for ascending, 0 for descending.
struct Order {
  1: string col,
  2: i32 order,
}

// Field 3 (skewedColValueLocationMaps) is left out on purpose: see the header.
struct SkewedInfo {
  1: list<string> skewedColNames,
  2: list<list<string>> skewedColValues,
}

struct StorageDescriptor {
  1: list<FieldSchema> cols,
  2: string location,
  3: string inputFormat,
  4: string outputFormat,
  5: bool compressed,
  6: i32 numBuckets,
  7: SerDeInfo serdeInfo,
  8: list<string> bucketCols,
  9: list<Order> sortCols,
  10: map<string, string> parameters,
  11: optional SkewedInfo skewedInfo,
  12: optional bool storedAsSubDirectories,
}

// tableType is a string: MANAGED_TABLE, EXTERNAL_TABLE, VIRTUAL_VIEW, ...
struct Table {
  1: string tableName,
  2: string dbName,
  3: string owner,
  4: i32 createTime,
  5: i32 lastAccessTime,
  6: i32 retention,
  7: StorageDescriptor sd,
  8: list<FieldSchema> partitionKeys,
  9: map<string, string> parameters,
  10: string viewOriginalText,
  11: string viewExpandedText,
  12: string tableType,
  13: optional PrincipalPrivilegeSet privileges,
  14: optional bool temporary = false,
  15: optional bool rewriteEnabled,
  16: optional string catName,
}

// values are positional, in the order of the table's partitionKeys.
struct Partition {
  1: list<string> values,
  2: string dbName,
  3: string tableName,
  4: i32 createTime,
  5: i32 lastAccessTime,
  6: StorageDescriptor sd,
  7: map<string, string> parameters,
  8: optional PrincipalPrivilegeSet privileges,
  9: optional string catName,
}

// ---------------------------------------------------------------- column statistics

struct BooleanColumnStatsData {
  1: required i64 numTrues,
  2: required i64 numFalses,
  3: required i64 numNulls,
  4: optional binary bitVectors,
}

struct DoubleColumnStatsData {
  1: optional double lowValue,
  2: optional double highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
}

struct LongColumnStatsData {
  1: optional i64 lowValue,
  2: optional i64 highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
}

struct StringColumnStatsData {
  1: required i64 maxColLen,
  2: required double avgColLen,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
}

struct BinaryColumnStatsData {
  1: required i64 maxColLen,
  2: required double avgColLen,
  3: required i64 numNulls,
  4: optional binary bitVectors,
}

// unscaled is the two's-complement big-endian integer; value = unscaled * 10^-scale.
struct Decimal {
  1: required binary unscaled,
  3: required i16 scale,
}

struct DecimalColumnStatsData {
  1: optional Decimal lowValue,
  2: optional Decimal highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
}

struct Date {
  1: required i64 daysSinceEpoch,
}

struct DateColumnStatsData {
  1: optional Date lowValue,
  2: optional Date highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
}

union ColumnStatisticsData {
  1: BooleanColumnStatsData booleanStats,
  2: LongColumnStatsData longStats,
  3: DoubleColumnStatsData doubleStats,
  4: StringColumnStatsData stringStats,
  5: BinaryColumnStatsData binaryStats,
  6: DecimalColumnStatsData decimalStats,
  7: DateColumnStatsData dateStats,
}

struct ColumnStatisticsObj {
  1: required string colName,
  2: required string colType,
  3: required ColumnStatisticsData statsData,
}

struct ColumnStatisticsDesc {
  1: required bool isTblLevel,
  2: required string dbName,
  3: required string tableName,
  4: optional string partName,
  5: optional i64 lastAnalyzed,
  6: optional string catName,
}

struct ColumnStatistics {
  1: required ColumnStatisticsDesc statsDesc,
  2: required list<ColumnStatisticsObj> statsObj,
}

struct AddPartitionsRequest {
  1: required string dbName,
  2: required string tblName,
  3: required list<Partition> parts,
  4: required bool ifNotExists,
  5: optional bool needResult = true,
  6: optional string catName,
}

struct AddPartitionsResult {
  1: optional list<Partition> partitions,
}

struct TableStatsRequest {
  1: required string dbName,
  2: required string tblName,
  3: required list<string> colNames,
}

struct TableStatsResult {
  1: required list<ColumnStatisticsObj> tableStats,
}

struct PartitionsStatsRequest {
  1: required string dbName,
  2: required string tblName,
  3: required list<string> colNames,
  4: required list<string> partNames,
  5: optional string catName,
}

struct PartitionsStatsResult {
  1: required map<string, list<ColumnStatisticsObj>> partStats,
}

// ---------------------------------------------------------------- functions

struct ResourceUri {
  1: ResourceType resourceType,
  2: string uri,
}

struct Function {
  1: string functionName,
  2: string dbName,
  3: string className,
  4: string ownerName,
  5: PrincipalType ownerType,
  6: i32 createTime,
  7: FunctionType functionType,
  8: list<ResourceUri> resourceUris,
  9: optional string catName,
}

struct GetAllFunctionsResponse {
  1: optional list<Function> functions,
}

// ---------------------------------------------------------------- notification events

struct NotificationEventRequest {
  1: required i64 lastEvent,
  2: optional i32 maxEvents,
}

struct NotificationEvent {
  1: required i64 eventId,
  2: required i32 eventTime,
  3: required string eventType,
  4: optional string dbName,
  5: optional string tableName,
  6: required string message,
  7: optional string messageFormat,
}

struct NotificationEventResponse {
  1: required list<NotificationEvent> events,
}

struct CurrentNotificationEventId {
  1: required i64 eventId,
}

// ---------------------------------------------------------------- exceptions

exception MetaException {
  1: string message,
}

exception UnknownTableException {
  1: string message,
}

exception UnknownDBException {
  1: string message,
}

exception AlreadyExistsException {
  1: string message,
}

exception InvalidObjectException {
  1: string message,
}

exception NoSuchObjectException {
  1: string message,
}

exception InvalidOperationException {
  1: string message,
}

exception ConfigValSecurityException {
  1: string message,
}

exception InvalidInputException {
  1: string message,
}

// ---------------------------------------------------------------- newer clients' requests
// (HMS 2.3 declarations, field ids checked with DumpThriftMeta on hive-metastore-2.3.10.jar)

enum ClientCapability {
  TEST_CAPABILITY = 1,
}

struct ClientCapabilities {
  1: required list<ClientCapability> values,
}

struct GetTableRequest {
  1: required string dbName,
  2: required string tblName,
  3: optional ClientCapabilities capabilities,
}

struct GetTableResult {
  1: required Table table,
}

struct GetTablesRequest {
  1: required string dbName,
  2: optional list<string> tblNames,
  3: optional ClientCapabilities capabilities,
}

struct GetTablesResult {
  1: required list<Table> tables,
}

struct EnvironmentContext {
  1: map<string, string> properties,
}

// ---------------------------------------------------------------- the service

// Exception ids and names follow upstream exactly, including its odd pairs
// such as drop_table's `2: MetaException o3`: the id is what travels.
service ThriftHiveMetastore {
  // databases
  void create_database(1: Database database)
      throws (1: AlreadyExistsException o1, 2: InvalidObjectException o2, 3: MetaException o3)
  Database get_database(1: string name)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  void drop_database(1: string name, 2: bool deleteData, 3: bool cascade)
      throws (1: NoSuchObjectException o1, 2: InvalidOperationException o2, 3: MetaException o3)
  list<string> get_databases(1: string pattern) throws (1: MetaException o1)
  list<string> get_all_databases() throws (1: MetaException o1)
  void alter_database(1: string dbname, 2: Database db)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)

  // tables
  void create_table(1: Table tbl)
      throws (1: AlreadyExistsException o1, 2: InvalidObjectException o2, 3: MetaException o3,
              4: NoSuchObjectException o4)
  void drop_table(1: string dbname, 2: string name, 3: bool deleteData)
      throws (1: NoSuchObjectException o1, 2: MetaException o3)
  list<string> get_tables(1: string db_name, 2: string pattern) throws (1: MetaException o1)
  list<string> get_all_tables(1: string db_name) throws (1: MetaException o1)
  Table get_table(1: string dbname, 2: string tbl_name)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  list<Table> get_table_objects_by_name(1: string dbname, 2: list<string> tbl_names)
      throws (1: MetaException o1, 2: InvalidOperationException o2, 3: UnknownDBException o3)
  list<string> get_table_names_by_filter(1: string dbname, 2: string filter,
                                         3: i16 max_tables = -1)
      throws (1: MetaException o1, 2: InvalidOperationException o2, 3: UnknownDBException o3)
  void alter_table(1: string dbname, 2: string tbl_name, 3: Table new_tbl)
      throws (1: InvalidOperationException o1, 2: MetaException o2)

  // partitions
  Partition add_partition(1: Partition new_part)
      throws (1: InvalidObjectException o1, 2: AlreadyExistsException o2, 3: MetaException o3)
  i32 add_partitions(1: list<Partition> new_parts)
      throws (1: InvalidObjectException o1, 2: AlreadyExistsException o2, 3: MetaException o3)
  AddPartitionsResult add_partitions_req(1: AddPartitionsRequest request)
      throws (1: InvalidObjectException o1, 2: AlreadyExistsException o2, 3: MetaException o3)
  bool drop_partition(1: string db_name, 2: string tbl_name, 3: list<string> part_vals,
                      4: bool deleteData)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  bool drop_partition_by_name(1: string db_name, 2: string tbl_name, 3: string part_name,
                              4: bool deleteData)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  Partition get_partition(1: string db_name, 2: string tbl_name, 3: list<string> part_vals)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  Partition get_partition_by_name(1: string db_name, 2: string tbl_name, 3: string part_name)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  list<Partition> get_partitions(1: string db_name, 2: string tbl_name, 3: i16 max_parts = -1)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  list<string> get_partition_names(1: string db_name, 2: string tbl_name,
                                   3: i16 max_parts = -1)
      throws (1: MetaException o2)
  // part_vals may be shorter than the partition keys; "" matches any value.
  list<Partition> get_partitions_ps(1: string db_name, 2: string tbl_name,
                                    3: list<string> part_vals, 4: i16 max_parts = -1)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  list<string> get_partition_names_ps(1: string db_name, 2: string tbl_name,
                                      3: list<string> part_vals, 4: i16 max_parts = -1)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  list<Partition> get_partitions_by_filter(1: string db_name, 2: string tbl_name,
                                           3: string filter, 4: i16 max_parts = -1)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  list<Partition> get_partitions_ps_with_auth(1: string db_name, 2: string tbl_name,
                                              3: list<string> part_vals, 4: i16 max_parts = -1,
                                              5: string user_name, 6: list<string> group_names)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  Partition get_partition_with_auth(1: string db_name, 2: string tbl_name,
                                    3: list<string> part_vals, 4: string user_name,
                                    5: list<string> group_names)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  list<Partition> get_partitions_by_names(1: string db_name, 2: string tbl_name,
                                          3: list<string> names)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  void alter_partition(1: string db_name, 2: string tbl_name, 3: Partition new_part)
      throws (1: InvalidOperationException o1, 2: MetaException o2)
  list<string> partition_name_to_vals(1: string part_name) throws (1: MetaException o1)

  // column statistics
  ColumnStatistics get_table_column_statistics(1: string db_name, 2: string tbl_name,
                                               3: string col_name)
      throws (1: NoSuchObjectException o1, 2: MetaException o2, 3: InvalidInputException o3,
              4: InvalidObjectException o4)
  TableStatsResult get_table_statistics_req(1: TableStatsRequest request)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  PartitionsStatsResult get_partitions_statistics_req(1: PartitionsStatsRequest request)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  bool update_table_column_statistics(1: ColumnStatistics stats_obj)
      throws (1: NoSuchObjectException o1, 2: InvalidObjectException o2, 3: MetaException o3,
              4: InvalidInputException o4)
  bool update_partition_column_statistics(1: ColumnStatistics stats_obj)
      throws (1: NoSuchObjectException o1, 2: InvalidObjectException o2, 3: MetaException o3,
              4: InvalidInputException o4)

  // session: names the caller for this connection; HMS 2.3 echoes group_names
  list<string> set_ugi(1: string user_name, 2: list<string> group_names)
      throws (1: MetaException o1)

  // configuration
  string get_config_value(1: string name, 2: string defaultValue)
      throws (1: ConfigValSecurityException o1)

  // functions
  void create_function(1: Function func)
      throws (1: AlreadyExistsException o1, 2: InvalidObjectException o2, 3: MetaException o3,
              4: NoSuchObjectException o4)
  void drop_function(1: string dbName, 2: string funcName)
      throws (1: NoSuchObjectException o1, 2: MetaException o3)
  list<string> get_functions(1: string dbName, 2: string pattern) throws (1: MetaException o1)
  Function get_function(1: string dbName, 2: string funcName)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  GetAllFunctionsResponse get_all_functions() throws (1: MetaException o1)

  // roles
  bool create_role(1: Role role) throws (1: MetaException o1)
  bool drop_role(1: string role_name) throws (1: MetaException o1)
  list<string> get_role_names() throws (1: MetaException o1)
  bool grant_role(1: string role_name, 2: string principal_name, 3: PrincipalType principal_type,
                  4: string grantor, 5: PrincipalType grantorType, 6: bool grant_option)
      throws (1: MetaException o1)
  bool revoke_role(1: string role_name, 2: string principal_name,
                   3: PrincipalType principal_type)
      throws (1: MetaException o1)
  list<Role> list_roles(1: string principal_name, 2: PrincipalType principal_type)
      throws (1: MetaException o1)
  GrantRevokeRoleResponse grant_revoke_role(1: GrantRevokeRoleRequest request)
      throws (1: MetaException o1)
  GetPrincipalsInRoleResponse get_principals_in_role(1: GetPrincipalsInRoleRequest request)
      throws (1: MetaException o1)
  GetRoleGrantsForPrincipalResponse get_role_grants_for_principal(
      1: GetRoleGrantsForPrincipalRequest request)
      throws (1: MetaException o1)

  // privileges
  list<HiveObjectPrivilege> list_privileges(1: string principal_name,
                                            2: PrincipalType principal_type,
                                            3: HiveObjectRef hiveObject)
      throws (1: MetaException o1)
  bool grant_privileges(1: PrivilegeBag privileges) throws (1: MetaException o1)
  bool revoke_privileges(1: PrivilegeBag privileges) throws (1: MetaException o1)
  GrantRevokePrivilegeResponse grant_revoke_privileges(1: GrantRevokePrivilegeRequest request)
      throws (1: MetaException o1)

  // notification events (empty unless the server runs a listener that logs them)
  NotificationEventResponse get_next_notification(1: NotificationEventRequest rqst)
  CurrentNotificationEventId get_current_notificationEventId()

  // newer clients' reads (answered from the cache by the HMS endpoint)
  GetTableResult get_table_req(1: GetTableRequest req)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  GetTablesResult get_table_objects_by_name_req(1: GetTablesRequest req)
      throws (1: MetaException o1, 2: InvalidOperationException o2, 3: UnknownDBException o3)
  list<FieldSchema> get_fields(1: string db_name, 2: string table_name)
      throws (1: MetaException o1, 2: UnknownTableException o2, 3: UnknownDBException o3)
  list<FieldSchema> get_fields_with_environment_context(1: string db_name,
      2: string table_name, 3: EnvironmentContext environment_context)
      throws (1: MetaException o1, 2: UnknownTableException o2, 3: UnknownDBException o3)
  list<FieldSchema> get_schema(1: string db_name, 2: string table_name)
      throws (1: MetaException o1, 2: UnknownTableException o2, 3: UnknownDBException o3)
  list<FieldSchema> get_schema_with_environment_context(1: string db_name,
      2: string table_name, 3: EnvironmentContext environment_context)
      throws (1: MetaException o1, 2: UnknownTableException o2, 3: UnknownDBException o3)
  list<Partition> get_partitions_with_auth(1: string db_name, 2: string tbl_name,
                                           3: i16 max_parts = -1, 4: string user_name,
                                           5: list<string> group_names)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  i32 get_num_partitions_by_filter(1: string db_name, 2: string tbl_name, 3: string filter)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  PrincipalPrivilegeSet get_privilege_set(1: HiveObjectRef hiveObject, 2: string user_name,
                                          3: list<string> group_names)
      throws (1: MetaException o1)
}
