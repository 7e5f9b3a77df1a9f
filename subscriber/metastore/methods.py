"""What each HMS service method is: a read, a write, lock/transaction state, or session (pure).

The service is the generated ``idl/hive_metastore.thrift`` (every method of HMS
2.3, 3.1 and 4.x, and fb303's). :func:`kind` classifies a method name by the rules
below, applied in order; the explicit sets hold the names whose prefix misleads
(``get_delegation_token`` issues a token, ``check_lock`` is lock state,
``markPartitionForEvent`` writes). A name the IDL does not declare is
:attr:`Kind.UNKNOWN`: the endpoint forwards it and treats it as a write to
whatever it names (see :mod:`subscriber.metastore.writes`).

* ``SESSION``: the connection or the server process, no catalog object
  (``set_ugi``, ``shutdown``, ``get_config_value``, fb303's counters, tokens).
* ``LOCK``: locks, transactions, write ids and compaction; a connection holding
  a lock or an open transaction must see HMS's current state (issue 22 point 1).
* ``READ``: returns metadata and changes nothing.
* ``WRITE``: may change metadata: its targets are reloaded before answering.
"""

from __future__ import annotations

import enum

import idl

_SERVICE = idl.hive_metastore.ThriftHiveMetastore


class Kind(enum.Enum):
    READ = "read"
    WRITE = "write"
    LOCK = "lock"
    SESSION = "session"
    UNKNOWN = "unknown"


SESSION = frozenset(
    {
        "set_ugi",
        "shutdown",
        "reinitialize",
        "get_config_value",
        "getMetaConf",
        "setMetaConf",  # changes this connection's configuration only
        "flushCache",  # HMS's own object cache; no metadata changes
        # fb303
        "aliveSince",
        "getCounter",
        "getCounters",
        "getCpuProfile",
        "getName",
        "getOption",
        "getOptions",
        "getStatus",
        "getStatusDetails",
        "getVersion",
        "setOption",
        # delegation tokens and master keys: security state, not catalog objects
        "get_delegation_token",
        "renew_delegation_token",
        "cancel_delegation_token",
        "add_token",
        "remove_token",
        "get_token",
        "get_all_token_identifiers",
        "add_master_key",
        "update_master_key",
        "remove_master_key",
        "get_master_keys",
    }
)

LOCK = frozenset(
    {
        "lock",
        "check_lock",
        "unlock",
        "show_locks",
        "heartbeat",
        "heartbeat_txn_range",
        "open_txns",
        "commit_txn",
        "abort_txn",
        "abort_txns",
        "get_open_txns",
        "get_open_txns_info",
        "get_open_txns_req",
        "get_latest_txnid_in_conflict",
        "allocate_table_write_ids",
        "get_valid_write_ids",
        "get_max_allocated_table_write_id",
        "seed_write_id",
        "seed_txn_id",
        "repl_tbl_writeid_state",
        "add_write_ids_to_min_history",
        "add_dynamic_partitions",  # records a transaction's partitions; creates none
        "compact",
        "compact2",
        "show_compact",
        "abort_Compactions",
        "find_next_compact",
        "find_next_compact2",
        "mark_cleaned",
        "mark_compacted",
        "mark_failed",
        "mark_refused",
        "set_hadoop_jobid",
        "update_compactor_state",
        "find_columns_with_stats",
        "get_latest_committed_compaction_info",
        "submit_for_cleanup",
        "update_compaction_metrics_data",
        "remove_compaction_metrics_data",
        "get_lock_materialization_rebuild",
        "heartbeat_lock_materialization_rebuild",
        "update_transaction_statistics",
    }
)

# Reads whose names do not start like one.
READ = frozenset(
    {
        "isPartitionMarkedForEvent",
        "partition_name_has_valid_characters",
        "partition_name_to_spec",
        "partition_name_to_vals",
        "fetch_partition_names_req",
        "find_package",
        "translate_table_dryrun",  # what HMS would make of a table; stores nothing
        "validate_resource_plan",
    }
)

# Writes whose names do not say so (everything not matched above is a write too).
WRITE = frozenset({"scheduled_query_poll"})  # marks the polled query as executing

_READ_PREFIXES = ("get_", "list_", "show_")


def declared() -> frozenset[str]:
    """Every method the IDL declares (the HMS service and what it inherits from fb303)."""
    return frozenset(_SERVICE.thrift_services)


_DECLARED = declared()


def kind(name: str) -> Kind:
    """The class of the method ``name`` (case-sensitive, as the wire carries it)."""
    if name not in _DECLARED:
        return Kind.UNKNOWN
    if name in SESSION:
        return Kind.SESSION
    if name in LOCK:
        return Kind.LOCK
    if name in WRITE:
        return Kind.WRITE
    if name in READ or name.startswith(_READ_PREFIXES):
        return Kind.READ
    return Kind.WRITE


def is_write(name: str) -> bool:
    """Whether the endpoint must reload what ``name`` touched after it succeeds (a
    write, or a method the IDL does not know)."""
    return kind(name) in (Kind.WRITE, Kind.UNKNOWN)
