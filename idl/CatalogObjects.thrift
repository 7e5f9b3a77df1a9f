// Impala catalog objects: the versioned units catalogd publishes.
//
// A wire-compatible subset of Apache Impala's common/thrift/CatalogObjects.thrift
// (the release that has TCatalogObject.hdfs_partition, field 12). Rules:
// * every enum member and value equals upstream;
// * every field kept has its upstream id, type and requiredness, so an Impala
//   peer decodes what we encode and we decode what it sends (unknown ids are
//   skipped by both sides);
// * Kudu, HBase, Iceberg, data-source-table, system-table and SQL-constraint
//   parts are left out: a Hive/Spark catalog never carries them;
// * catalogd's own additions use field ids from 100 up, which no upstream
//   release uses, and are always optional.

namespace java org.apache.impala.thrift

include "Exprs.thrift"
include "Status.thrift"
include "Types.thrift"
include "hive_metastore.thrift"

// ---------------------------------------------------------------- enums

enum TCatalogObjectType {
  // Marks a failed conversion from a string; never published.
  UNKNOWN = 0
  CATALOG = 1
  DATABASE = 2
  TABLE = 3
  VIEW = 4
  FUNCTION = 5
  DATA_SOURCE = 6
  PRINCIPAL = 7
  PRIVILEGE = 8
  HDFS_CACHE_POOL = 9
  AUTHZ_CACHE_INVALIDATION = 10
  HDFS_PARTITION = 11
}

enum TTableType {
  HDFS_TABLE = 0
  HBASE_TABLE = 1
  VIEW = 2
  DATA_SOURCE_TABLE = 3
  KUDU_TABLE = 4
  ICEBERG_TABLE = 5
  // Only the name is known yet (lazy loading): not a view, kind unknown.
  UNLOADED_TABLE = 6
  MATERIALIZED_VIEW = 7
  SYSTEM_TABLE = 8
}

enum THdfsFileFormat {
  TEXT = 0
  RC_FILE = 1
  SEQUENCE_FILE = 2
  AVRO = 3
  PARQUET = 4
  KUDU = 5
  ORC = 6
  HUDI_PARQUET = 7
  ICEBERG = 8
  JSON = 9
  JDBC = 10
}

enum THdfsCompression {
  NONE = 0
  DEFAULT = 1
  GZIP = 2
  DEFLATE = 3
  BZIP2 = 4
  SNAPPY = 5
  SNAPPY_BLOCKED = 6
  LZO = 7
  LZ4 = 8
  ZLIB = 9
  ZSTD = 10
  BROTLI = 11
  LZ4_BLOCKED = 12
}

enum TColumnEncoding {
  AUTO = 0
  PLAIN = 1
  PREFIX = 2
  GROUP_VARINT = 3
  RLE = 4
  DICTIONARY = 5
  BIT_SHUFFLE = 6
}

enum THdfsSeqCompressionMode {
  RECORD = 0
  BLOCK = 1
}

enum TTablePropertyType {
  TBL_PROPERTY = 0
  SERDE_PROPERTY = 1
}

enum TAccessLevel {
  NONE = 0
  READ_WRITE = 1
  READ_ONLY = 2
  WRITE_ONLY = 3
}

enum TBucketType {
  NONE = 0
  // Hive's bucketing hash.
  HASH = 1
}

enum TPrincipalType {
  ROLE = 0
  USER = 1
  GROUP = 2
}

enum TPrivilegeScope {
  SERVER = 0
  URI = 1
  DATABASE = 2
  TABLE = 3
  COLUMN = 4
  STORAGE_TYPE = 5
  STORAGEHANDLER_URI = 6
  USER_DEFINED_FN = 7
}

enum TPrivilegeLevel {
  ALL = 0
  INSERT = 1
  SELECT = 2
  REFRESH = 3
  CREATE = 4
  ALTER = 5
  DROP = 6
  OWNER = 7
  RWSTORAGE = 8
}

// ---------------------------------------------------------------- names and stats

// One `column = value` item of a partition spec.
struct TPartitionKeyValue {
  1: required string name
  2: required string value
}

struct TTableName {
  1: required string db_name
  2: required string table_name
}

struct TTableStats {
  // -1 when unknown.
  1: required i64 num_rows
  2: optional i64 total_file_bytes
}

struct TBucketInfo {
  1: required TBucketType bucket_type
  2: optional list<string> bucket_columns
  3: required i32 num_bucket
}

struct TColumnStats {
  // Bytes per value, excluding serialization overhead.
  1: required double avg_size
  2: required i64 max_size
  3: required i64 num_distinct_values
  4: required i64 num_nulls
  // Boolean columns only; -1 when unknown.
  5: required i64 num_trues
  6: required i64 num_falses
  7: optional Types.TColumnValue low_value
  8: optional Types.TColumnValue high_value
}

// Impala's incremental-statistics state; travels deflated inside
// THdfsPartition.partition_stats.
struct TIntermediateColumnStats {
  1: optional binary intermediate_ndv
  2: optional bool is_ndv_encoded
  3: optional i64 num_nulls
  4: optional i32 max_width
  5: optional double avg_width
  6: optional i64 num_rows
  7: optional i64 num_trues
  8: optional i64 num_falses
  9: optional Types.TColumnValue low_value
  10: optional Types.TColumnValue high_value
}

struct TPartitionStats {
  1: required TTableStats stats
  2: optional map<string, TIntermediateColumnStats> intermediate_col_stats
}

struct TColumn {
  // Lower case.
  1: required string columnName
  2: required Types.TColumnType columnType
  3: optional string comment
  4: optional TColumnStats col_stats
  // Ordinal position in the table, partition keys after the data columns.
  5: optional i32 position
  7: optional bool is_hidden
}

// ---------------------------------------------------------------- HDFS tables

struct THdfsFileDesc {
  // Impala: a FlatBuffer (common/fbs/CatalogObjects.fbs). catalogd: its own compact
  // encoding of path, length and mtime (subscriber/protocol/files.py).
  1: required binary file_desc_data
  2: optional binary file_metadata
}

// A location split in two: partition_prefixes[prefix_index] + suffix, or just
// suffix when prefix_index is -1. Partitions of one table share prefixes.
struct THdfsPartitionLocation {
  1: required i32 prefix_index = -1
  2: required string suffix
}

// File format of a table or partition, with its text delimiters (as bytes).
struct THdfsStorageDescriptor {
  1: required byte lineDelim
  2: required byte fieldDelim
  3: required byte collectionDelim
  4: required byte mapKeyDelim
  5: required byte escapeChar
  6: required byte quoteChar
  7: required THdfsFileFormat fileFormat
  8: required i32 blockSize
}

// One partition. Published on its own (TCatalogObject.hdfs_partition, type
// HDFS_PARTITION, topic key "HDFS_PARTITION:db.tbl:partition_name") so that
// changing one partition does not resend its table; db_name, tbl_name and
// partition_name are then required.
struct THdfsPartition {
  // One single-node literal TExpr per partition key, in key order.
  7: list<Exprs.TExpr> partitionKeyExprs
  10: optional THdfsPartitionLocation location
  // Unique in the catalog; never reused for another partition.
  14: optional i64 id
  // The id of the instance this one replaces (-1: none).
  26: optional i64 prev_id = -1
  9: optional list<THdfsFileDesc> file_desc
  21: optional list<THdfsFileDesc> insert_file_desc
  22: optional list<THdfsFileDesc> delete_file_desc
  11: optional TAccessLevel access_level
  12: optional TTableStats stats
  // Marked cached (the data need not be cached yet).
  13: optional bool is_marked_cached
  // The partition's parameters in the Hive Metastore.
  15: optional map<string, string> hms_parameters
  16: optional i64 num_blocks
  17: optional i64 total_file_size_bytes
  // A deflated TPartitionStats.
  18: optional binary partition_stats
  19: optional bool has_incremental_stats
  20: optional i64 write_id
  23: optional string db_name
  24: optional string tbl_name
  // Escaped HMS form: "k1=v1/k2=v2".
  25: optional string partition_name
  27: optional THdfsStorageDescriptor hdfs_storage_descriptor
  // catalogd: the pool this partition is marked cached in (with is_marked_cached).
  100: optional string cache_pool_name
  // catalogd: the HMS Partition as HMS returned it, so an HMS endpoint can
  // answer with it field for field. To save space what can be rebuilt exactly
  // is unset (parameters: see hms_parameters; sd fields equal to the table's,
  // names, values, location): hms_sd_inherited says which
  // (subscriber/protocol/hms_partition.py slims and rebuilds).
  101: optional hive_metastore.Partition hms_partition
  102: optional i32 hms_sd_inherited
}

// THdfsPartition.id of a table's prototype partition.
const i64 PROTOTYPE_PARTITION_ID = -1

struct TValidWriteIdList {
  1: optional i64 high_watermark
  2: optional i64 min_open_write_id
  3: optional list<i64> invalid_write_ids
  4: optional list<i32> aborted_indexes
}

struct THdfsTable {
  1: required string hdfsBaseDir
  // Deprecated upstream, still required: all column names, keys first.
  2: required list<string> colNames
  // How a NULL partition key value is spelled (Hive: __HIVE_DEFAULT_PARTITION__).
  3: required string nullPartitionKeyValue
  // How a NULL column value is spelled in text files (Hive: \N).
  5: required string nullColumnValue
  6: optional string avroSchema
  // Partition id -> partition. With partition-granular publishing the values
  // may carry only names (see the two flags below).
  4: required map<i64, THdfsPartition> partitions
  14: optional bool has_full_partitions
  15: optional bool has_partition_names
  // Template for partitions created by inserts (id PROTOTYPE_PARTITION_ID).
  10: required THdfsPartition prototype_partition
  // Shared location prefixes, see THdfsPartitionLocation.
  9: optional list<string> partition_prefixes
  7: optional list<Types.TNetworkAddress> network_addresses
  12: optional bool is_full_acid = false
  13: optional TValidWriteIdList valid_write_ids
  16: optional TBucketInfo bucket_info
  17: optional list<THdfsPartition> dropped_partitions
}

// ---------------------------------------------------------------- catalog objects

struct TDataSource {
  1: required string name
  2: required string hdfs_location
  3: required string class_name
  4: required string api_version
}

// A table or a view (a view has table_type VIEW and no hdfs_table).
struct TTable {
  // Lower case.
  1: required string db_name
  2: required string tbl_name
  // Set when loading failed; the other fields may then be missing.
  3: optional Status.TStatus load_status
  4: optional TAccessLevel access_level
  // Data columns, without the partition keys. On the wire (codec encode_object)
  // columns and clustering_columns are left out when they are exactly what
  // metastore_table's sd.cols and partitionKeys give; decode_object derives them
  // again (subscriber/protocol/table_columns.py) with column_stats.
  5: optional list<TColumn> columns
  // Partition keys, in order (empty when unpartitioned).
  6: optional list<TColumn> clustering_columns
  7: optional list<TColumn> virtual_columns
  8: optional TTableStats table_stats
  9: optional TTableType table_type
  10: optional THdfsTable hdfs_table
  12: optional hive_metastore.Table metastore_table
  16: optional i64 storage_metadata_load_time_ns
  // Only for tables whose metastore_table is not loaded yet.
  18: optional string tbl_comment
  // catalogd: stable identity of this table within one catalog service id
  // (survives renames). Newer Impala has no table id field.
  100: optional i64 id
  // catalogd: the cache pool the whole table is marked cached in (unset: not
  // marked), and each partition marked cached on its own -> its pool, so a
  // subscriber can list cached tables from headers alone.
  101: optional string cache_pool_name
  102: optional map<string, string> cached_partitions
  // catalogd, on the wire only: set (maybe empty) when columns and
  // clustering_columns were left out, each column's TColumn.col_stats by name.
  103: optional map<string, TColumnStats> column_stats
}

// catalogd extension: one table of a database at the catalog version it had.
struct TVersionedName {
  1: required string name
  2: required i64 catalog_version
}

struct TDatabase {
  // Lower case.
  1: required string db_name
  2: optional hive_metastore.Database metastore_db
  // catalogd extension: HMS's row order of this database's tables and views, as
  // get_table_objects_by_name of all of them answered it (HMS runs that query
  // with no ORDER BY: the order is its backing database's). Valid only while
  // every table named has the catalog version given and the database holds no
  // other table; an HMS endpoint checks that, else it does not use it.
  100: optional list<TVersionedName> table_order
}

struct TPrincipal {
  // Case-insensitive.
  1: required string principal_name
  // Assigned by the catalog service.
  2: required i32 principal_id
  3: required TPrincipalType principal_type
  // Groups the principal was granted to (case-sensitive).
  4: required list<string> grant_groups
  // catalogd extension: the roles granted directly to this principal in HMS
  // (lower-cased, sorted). Set on USER, GROUP and ROLE principals; a ROLE's
  // entry means its members inherit those roles (HMS role nesting). Upstream
  // expresses only group membership (grant_groups of a ROLE), which cannot say
  // "role R granted to user U".
  100: optional list<string> roles
  // catalogd: the principal as HMS keeps it, so an HMS endpoint can answer
  // list_privileges and get_privilege_set field for field. Unset when the
  // grants could not be read exactly (a metastore database comparing names
  // case-insensitively). metastore_names: every HMS name of this principal whose
  // grants were asked for (as stored: role names keep their case, so "DiffRole"
  // and "diffrole" are one ROLE principal here with two names), sorted.
  101: optional list<string> metastore_names
  // Every grant HMS answered list_privileges with for those names, unconverted
  // (privilege string as granted, grantor, partition and UPDATE grants kept),
  // sorted by their fields (HMS's own order is its database's: not kept).
  102: optional list<hive_metastore.HiveObjectPrivilege> metastore_privileges
  // The roles granted to those names (get_principals_in_role's answers whose
  // principal is one of them), sorted.
  103: optional list<hive_metastore.RolePrincipalGrant> metastore_roles
}

// A grant. Objects are hierarchical: a TABLE privilege also names its database
// and server. Field 1 was removed upstream and must stay unused.
struct TPrivilege {
  2: required TPrivilegeLevel privilege_level
  3: required TPrivilegeScope scope
  4: required bool has_grant_opt
  5: optional i32 principal_id
  6: optional TPrincipalType principal_type
  7: optional string server_name
  8: optional string db_name
  9: optional string table_name
  10: optional string uri
  11: optional i64 create_time_ms
  12: optional string column_name
  13: optional string storage_type
  14: optional string storage_url
  15: optional string fn_name
}

// An HDFS cache pool. Upstream carries only the name; catalogd manages pools
// itself and publishes their attributes too (HDFS CachePoolInfo's fields).
struct THdfsCachePool {
  1: required string pool_name
  100: optional string owner_name
  101: optional string group_name
  // POSIX permission bits.
  102: optional i32 mode
  // Bytes; unset means unlimited.
  103: optional i64 limit
  // Longest allowed cache directive lifetime; unset means never expires.
  104: optional i64 max_relative_expiry_ms
  105: optional i16 default_replication
}

// A marker telling coordinators to drop their authorization caches.
struct TAuthzCacheInvalidation {
  1: required string marker_name
}

struct TCatalog {
  // New for every start of the catalog service: a change means "resync".
  1: required Types.TUniqueId catalog_service_id
  // The catalog version of the last full reset (invalidate all).
  2: required i64 last_reset_catalog_version
}

// Any catalog object, tagged with its type and the version that produced it.
// Exactly the field matching `type` is set (TABLE and VIEW both use `table`).
struct TCatalogObject {
  1: required TCatalogObjectType type
  2: required i64 catalog_version
  3: optional TCatalog catalog
  4: optional TDatabase db
  5: optional TTable table
  6: optional Types.TFunction fn
  7: optional TDataSource data_source
  8: optional TPrincipal principal
  9: optional TPrivilege privilege
  10: optional THdfsCachePool cache_pool
  11: optional TAuthzCacheInvalidation authz_cache_invalidation
  12: optional THdfsPartition hdfs_partition
}
