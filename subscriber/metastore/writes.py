"""Which catalog object a forwarded HMS write touched (pure).

After a write succeeds upstream, the endpoint asks catalogd to reload what it
touched (read-your-writes). :func:`touched` names it from the call's method
name and argument bytes. Many write methods come in variants that only add
arguments (``create_table_with_environment_context``,
``alter_table_with_cascade``, ...): their leading arguments are those of the
base method, so they decode with the base method's argument struct (unknown
fields are skipped). A method we cannot read at all touches "the database"
named by its first string argument, or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import idl
from subscriber.protocol import codec
from subscriber.protocol.errors import ProtocolError

hms = idl.hive_metastore
_SUFFIXES = ("_with_environment_context", "_with_cascade", "_req")


@dataclass(frozen=True, slots=True)
class Target:
    """What a write touched: a table (``table`` set), or a database's names
    and functions (``table`` None)."""

    db: str
    table: str | None = None


def base_method(name: str) -> str:
    """``create_table_with_environment_context`` -> ``create_table``."""
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def touched(name: str, body: bytes) -> Target | None:
    """The object the write ``name`` with argument bytes ``body`` touched, if known."""
    base = name if hasattr(hms.ThriftHiveMetastore, f"{name}_args") else base_method(name)
    args_cls = getattr(hms.ThriftHiveMetastore, f"{base}_args", None)
    if args_cls is None:
        return None
    try:
        args = codec.decode(args_cls, body)
    except ProtocolError:
        return None
    return _from_args(base, args)


def _from_args(base: str, args: Any) -> Target | None:
    get = args.__dict__.get
    tbl = get("tbl") or get("new_tbl")
    if tbl is not None and tbl.dbName and tbl.tableName:
        return Target(tbl.dbName.lower(), tbl.tableName.lower())
    part = get("new_part")
    parts = get("new_parts")
    if part is None and parts:
        part = parts[0]
    if part is not None and part.dbName and part.tableName:
        return Target(part.dbName.lower(), part.tableName.lower())
    if get("database") is not None and args.database.name:
        return Target(args.database.name.lower())
    if get("func") is not None and args.func.dbName:
        return Target(args.func.dbName.lower())
    request = get("request")
    db, table = getattr(request, "dbName", None), getattr(request, "tblName", None)
    if db and table:
        return Target(db.lower(), table.lower())
    stats = get("stats_obj")
    if stats is not None and stats.statsDesc is not None:
        return Target(stats.statsDesc.dbName.lower(), stats.statsDesc.tableName.lower())
    db = get("db_name") or get("dbname") or get("dbName")
    table = get("tbl_name") or (get("name") if "table" in base else None)
    if db and table:
        return Target(db.lower(), table.lower())
    if "database" in base:
        db = db or get("name")
        return Target(db.lower()) if db else None
    if db:
        return Target(db.lower())
    return None
