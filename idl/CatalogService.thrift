// catalogd's own wire messages: publisher -> subscriber (deltas, heartbeats),
// subscriber <-> catalogd (hello, snapshot, catch-up, load, reports) and
// admin tool <-> catalogd (commands).
//
// Each ZeroMQ frame carries one of these structs, framed by subscriber/codec.py
// (a flag byte, then the binary-protocol struct, zlib-compressed when large).
// Catalog objects travel pre-encoded in TCatalogEntry.object (codec
// encode_object/decode_object), so caches can keep blobs and decode on demand.
//
// Compatibility: add only optional fields with new ids; never reuse an id.
// PROTOCOL_VERSION changes when a change needs both sides to know.

include "CatalogObjects.thrift"

// 2: table headers leave out the columns their HMS table gives (TTable.column_stats).
// 3: a publication is one frame, its topic then its body (two frames before).
const i32 PROTOCOL_VERSION = 3

// Outcome of a request (after seed 003's RequestStatus).
enum TStatusCode {
  OK = 0
  ERROR = 1
  NOTFOUND = 2
  CONFLICT = 3
  BUSY = 4
  INTERNAL_ERR = 5
  // A service catalogd depends on (the Hive Metastore, the state store) is
  // unreachable; catalogd itself keeps serving the catalog it has.
  UNAVAILABLE = 6
}

struct TStatus {
  1: required TStatusCode code
  2: optional string message
}

// One versioned object, or the tombstone of a removed one.
struct TCatalogEntry {
  // Impala topic key, names lower-cased: "TABLE:db.tbl",
  // "HDFS_PARTITION:db.tbl:k=v", "DATABASE:db", "HDFS_CACHE_POOL:pool", ...
  1: required string key
  // The catalog_version of the change that produced this entry.
  2: required i64 version
  // An encoded TCatalogObject (codec.encode_object); absent for a tombstone, and
  // in an invalidation (the key changed at version: fetch it to read it).
  3: optional binary object
  // True for a tombstone.
  4: optional bool removed
}

// The changes in (from_version, to_version]. A subscriber applies it only when
// from_version equals its own version; otherwise it catches up.
struct TDelta {
  1: required string service_id
  2: required i64 from_version
  3: required i64 to_version
  4: required list<TCatalogEntry> entries
  // Set when this part carries one database's entries only ("" = the global
  // objects: catalog, privileges, principals, cache pools); a TDeltaCommit
  // then closes the set of parts.
  5: optional string database
  // Set on the last part of a delta only: the entries per database of the
  // whole delta, so a subscriber that follows every database needs no separate
  // TDeltaCommit (one message per single-database delta).
  6: optional map<string, i32> counts
  // Invalidations only: the part's partition keys grouped per table (never in
  // entries then), so a big partitioned change costs a name and a version per
  // partition. counts still count every key, grouped or not.
  7: optional list<TPartitionGroup> partitions
}

// The changed partitions of one table in an invalidation (TDelta.partitions).
struct TPartitionGroup {
  // "db.tbl", lower case: the keys are "HDFS_PARTITION:db.tbl:" + each name.
  1: required string table
  // Partition names ("k=v/k2=v2") and the version each changed at, index by index.
  2: required list<string> names
  3: required list<i64> versions
  // Indexes into names of the partitions removed (the others changed); unset: none.
  4: optional list<i32> removed
}

// Closes a delta published in per-database parts: a filtering subscriber
// checks that it saw the parts of the databases it follows.
struct TDeltaCommit {
  1: required string service_id
  2: required i64 from_version
  3: required i64 to_version
  // Entries per database in this delta ("" = global objects).
  4: required map<string, i32> counts
}

struct THeartbeat {
  1: required string service_id
  // The newest published version.
  2: required i64 version
  // Sender's wall clock, milliseconds since the epoch.
  3: required i64 sent_at_ms
  4: required i32 interval_ms
  // Set when catalogd wants every subscriber's applied version now (its --sync
  // barrier waits): a subscriber reports at once, else at most once a second.
  5: optional bool report
}

// First request of a subscriber.
struct THello {
  1: optional string client_id
  // Databases to follow (lower case); unset = all.
  2: optional list<string> databases
  3: optional i32 protocol_version
}

struct TWelcome {
  1: required string service_id
  // Where deltas and heartbeats are published.
  2: required string pub_endpoint
  // The newest published version.
  3: required i64 version
  4: required i32 heartbeat_interval_ms
  // The oldest from_version a catch-up can still be served from.
  5: optional i64 oldest_catch_up_version
  6: optional i32 protocol_version
  // The Hive Metastore catalogd reads, as a Thrift URI ("thrift://host:port"):
  // its embedded HMS or the first --hms address. Unset when catalogd reads the
  // metastore database directly (--hms-db without --hms), and from catalogd
  // before this field existed. An HMS endpoint forwards to it by default.
  7: optional string hms_uri
  // The whole snapshot of the hello's selection at `version`, when it is small
  // (none, or a few objects: an empty catalog, a filter that selects little), so
  // the subscriber needs no snapshot request: it installs these entries once its
  // SUB socket is live and catches up from `version`. Unset when the selection is
  // larger, and from catalogd before this field existed.
  8: optional list<TCatalogEntry> snapshot
}

struct TSnapshotRequest {
  // Unset = all databases.
  1: optional list<string> databases
  // An on-demand subscriber's snapshot: no entries, only the version it starts at
  // (it fetches what it reads and follows invalidations from there).
  2: optional bool empty
}

// One part of a snapshot, numbered from 0.
struct TSnapshotChunk {
  1: required string service_id
  2: required i32 seq
  3: required list<TCatalogEntry> entries
}

// Ends a snapshot: it is the catalog at `version`, `count` entries in `chunks`
// chunks.
struct TSnapshotEnd {
  1: required string service_id
  2: required i64 version
  3: required i64 count
  4: required i32 chunks
}

// Ask for the changes after from_version (answered with a TDelta, or with a
// non-OK status when the delta log no longer reaches back: take a snapshot).
struct TCatchUpRequest {
  1: required i64 from_version
  2: optional list<string> databases
  // Keys and versions only (TCatalogEntry without object): an on-demand subscriber.
  3: optional bool invalidations
}

// An on-demand subscriber's read of parts of the catalog (after Impala's
// GetPartialCatalogObject): entries by key, or the keys (with versions) of one
// database or of one table's partitions, a page at a time.
struct TFetchRequest {
  // Entries by exact key; a key the catalog lacks comes back with removed = true.
  1: optional list<string> keys
  // Or list: the keys of database list_db (not its partitions), or with
  // list_table the partition keys of that table, from offset, at most limit.
  2: optional string list_db
  3: optional string list_table
  4: optional i32 offset
  5: optional i32 limit
}

struct TFetchResponse {
  1: required string service_id
  // The catalog version the answer is valid at.
  2: required i64 version
  // Fetched entries (with object, or removed), or listed keys (no object).
  3: required list<TCatalogEntry> entries
  // A listing: how many keys the whole group has (offset + entries < total: more).
  4: optional i32 total
}

// Load one table now, ahead of the background loader.
struct TLoadTableRequest {
  1: required string db_name
  2: required string tbl_name
  // Reload it even when loaded (a write was made through an HMS endpoint);
  // with tbl_name "" reload the database's table names and functions; with both
  // "" reload the principals and grants (after a grant or role write).
  3: optional bool reload
  // With reload: answer once the reload is published (TResponse.loaded_version),
  // not at once; a load that fails answers with an error status.
  4: optional bool answer_when_loaded
}

// A subscriber's acknowledgement of the version it has applied.
struct TSubscriberReport {
  1: required string client_id
  2: required string service_id
  3: required i64 applied_version
}

// Subscriber -> catalogd. Exactly one of the payload fields is set.
struct TRequest {
  1: optional i64 request_id
  2: optional THello hello
  3: optional TSnapshotRequest snapshot
  4: optional TCatchUpRequest catch_up
  5: optional TLoadTableRequest load_table
  6: optional TSubscriberReport report
  7: optional TFetchRequest fetch
}

// catalogd -> subscriber; request_id echoes the request's.
struct TResponse {
  1: optional i64 request_id
  2: required TStatus status
  3: optional TWelcome welcome
  4: optional TSnapshotChunk chunk
  5: optional TSnapshotEnd snapshot_end
  6: optional TDelta delta
  // Answer to a TLoadTableRequest with answer_when_loaded: the catalog version
  // whose state shows the reload (published; the current version if nothing changed).
  7: optional i64 loaded_version
  8: optional TFetchResponse fetched
}

enum TAdminCommand {
  STATUS = 1
  INVALIDATE = 2
  REFRESH = 3
  CACHE_POOL_ADD = 4
  CACHE_POOL_ALTER = 5
  CACHE_POOL_REMOVE = 6
  CACHE_POOL_LIST = 7
  CACHE = 8
  UNCACHE = 9
  AUDIT = 10
}

struct TAdminRequest {
  1: required TAdminCommand command
  2: optional string db_name
  3: optional string tbl_name
  // Partition specs in HMS form: "k=v/k2=v2".
  4: optional list<string> partitions
  // Answer only once subscribers applied the result (or sync_timeout_ms ran out).
  5: optional bool sync
  6: optional i32 sync_timeout_ms
  // Who asked (for the audit log).
  7: optional string requester
  // Command-specific options, e.g. a cache pool's attributes.
  8: optional map<string, string> options
}

struct TAdminResponse {
  1: required TStatus status
  // The catalog version at which the command's effect is published.
  2: optional i64 version
  // Command-specific result as a JSON document.
  3: optional string detail_json
  // With sync: subscribers that did not confirm in time.
  4: optional list<string> unconfirmed_subscribers
}
