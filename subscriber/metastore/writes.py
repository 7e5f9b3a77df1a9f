"""Which catalog objects a forwarded HMS write touched (pure).

After a write succeeds upstream, the endpoint asks catalogd to reload every object
it touched (read-your-writes). :func:`touched` names them from the call's method
name and argument bytes, decoded with the method's own argument struct (the IDL
declares every method of HMS 2.3, 3.1 and 4.x). The arguments are walked, with
their nested structs and lists, for the name pairs HMS uses:

* a table: ``dbName``/``tableName`` (Table, Partition, PartitionSpec, requests),
  ``db_name``/``tbl_name``, ``dbname``/``tbl_name`` or ``dbname``/``name`` (the
  ``*_table`` methods), ``table_db``/``table_name`` (constraints),
  ``source_db``/``source_table_name`` and ``dest_db``/``dest_table_name``
  (exchanges), ``statsDesc`` of column statistics, ``HiveObjectRef`` of grants;
* a database (its table names and functions): ``Database.name``, a Function's
  ``dbName``, ``dbName`` of function DDL, ``name`` of the ``*_database`` methods.

So a rename names both tables (``alter_table*``'s arguments and its new Table,
which PyIceberg's rename moves to a new dbName/tableName), an exchange both its
source and destination, ``add_partitions`` every table of its partitions.

A grant or role write (:data:`GRANT_WRITES`) also touches :data:`PRIVILEGES`: the
catalog's principals and grants, which catalogd reloads from HMS on request.

A method the IDL does not declare (:data:`Kind.UNKNOWN`) is decoded generically:
every string among its arguments and their direct struct fields is a *guess* at a
database; :func:`resolve` keeps the guesses that are cached databases, and when
none is, the write touches :data:`ALL_DATABASES`: a bounded invalidate, the
listings of at most :data:`MAX_INVALIDATE` cached databases.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

import idl
from subscriber.metastore import methods
from subscriber.protocol import binary, codec
from subscriber.protocol.errors import ProtocolError

hms = idl.hive_metastore
_SERVICE = hms.ThriftHiveMetastore

MAX_INVALIDATE = 32
"""A bounded invalidate reloads the listings of at most this many databases."""

GRANT_WRITES = frozenset(
    {
        "grant_privileges",
        "revoke_privileges",
        "grant_revoke_privileges",
        "refresh_privileges",
        "grant_role",
        "revoke_role",
        "grant_revoke_role",
        "create_role",
        "drop_role",
    }
)
"""Writes that change grants or role memberships (HMS logs no events for them)."""

_MAX_DEPTH = 4  # args -> request -> list -> struct -> statsDesc
_MAX_GUESSES = 8


@dataclass(frozen=True, slots=True)
class Target:
    """What a write touched: a table (``table`` set), or a database's names and
    functions (``table`` None). ``guess``: named by a method the IDL does not
    know, reloaded only if the database is cached."""

    db: str
    table: str | None = None
    guess: bool = False


ALL_DATABASES = Target("*")
"""An undeclared write naming no cached database: reload every cached database's
listing (at most :data:`MAX_INVALIDATE`)."""

PRIVILEGES = Target("")
"""The catalog's principals and grants (kept under the database ""): reloaded with
``TLoadTableRequest("", "")``; what privilege reads show."""

# (database attribute, table attribute) pairs, most specific first.
_TABLE_PAIRS = (
    ("dbName", "tableName"),
    ("dbName", "tblName"),
    ("dbName", "tbl_name"),
    ("db_name", "tbl_name"),
    ("db_name", "table_name"),
    ("dbname", "tbl_name"),
    ("dbname", "tableName"),
    ("table_db", "table_name"),
    ("source_db", "source_table_name"),
    ("dest_db", "dest_table_name"),
)
_DB_ATTRS = ("dbName", "db_name", "dbname", "databaseName")
_TABLE_OBJECT_TYPES = frozenset({3, 4, 5})  # HiveObjectType TABLE, PARTITION, COLUMN


def touched(name: str, body: bytes) -> tuple[Target, ...]:
    """Every object the write ``name`` with argument bytes ``body`` touched, in a
    stable order without duplicates (empty: none that catalogd caches)."""
    kind = methods.kind(name)
    if kind is methods.Kind.UNKNOWN:
        guesses = _strings(body)
        return tuple(Target(db, guess=True) for db in guesses) or (ALL_DATABASES,)
    if kind is not methods.Kind.WRITE:
        return ()
    try:
        args = codec.decode(getattr(_SERVICE, f"{name}_args"), body)
    except ProtocolError:
        return (ALL_DATABASES,)  # a write we cannot read still invalidates
    found: dict[Target, None] = {}
    _walk(args, name, found, _MAX_DEPTH, top=True)
    if name in GRANT_WRITES:
        found[PRIVILEGES] = None
    return tuple(found)


def resolve(targets: Iterable[Target], cached: Collection[str]) -> tuple[Target, ...]:
    """``targets`` made concrete for a cache holding the databases ``cached``:
    guesses kept when cached (none kept: :data:`ALL_DATABASES`), which becomes the
    first :data:`MAX_INVALIDATE` cached databases in name order. What a guess or
    :data:`ALL_DATABASES` became keeps ``guess`` set: reload it, do not wait for a
    change that may never come."""
    out: dict[Target, None] = {}
    guessed = False
    for target in targets:
        if target.guess:
            guessed = True
            if target.db in cached:
                out[target] = None
        elif target == ALL_DATABASES:
            out.update(dict.fromkeys(_everything(cached)))
        else:
            out[target] = None
    if guessed and not out:
        out.update(dict.fromkeys(_everything(cached)))
    return tuple(out)


def _everything(cached: Collection[str]) -> list[Target]:
    return [Target(db, guess=True) for db in sorted(db for db in cached if db)[:MAX_INVALIDATE]]


def _db(value: Any) -> str | None:
    """A database name as clients send it: ``@catalog#db`` means ``db``."""
    if not isinstance(value, str) or not value:
        return None
    if value.startswith("@"):
        _, _, value = value.partition("#")
        if not value or value == "!":  # "@cat#" or "@cat#!": the catalog alone
            return None
    return value.lower()


def _walk(obj: Any, method: str, found: dict[Target, None], depth: int, top: bool) -> None:
    if depth < 0 or obj is None:
        return
    if isinstance(obj, (list, tuple, set, frozenset)):
        for item in obj:
            _walk(item, method, found, depth - 1, top=False)
        return
    if isinstance(obj, dict):
        for item in obj.values():
            _walk(item, method, found, depth - 1, top=False)
        return
    fields = getattr(obj, "__dict__", None)
    if not isinstance(fields, dict) or not hasattr(obj, "thrift_spec"):
        return
    _names(obj, fields, method, found, top)
    for value in fields.values():
        if isinstance(value, (list, tuple, set, frozenset, dict)) or hasattr(value, "thrift_spec"):
            _walk(value, method, found, depth - 1, top=False)


def _names(
    obj: Any, get: dict[str, Any], method: str, found: dict[Target, None], top: bool
) -> None:
    matched = False
    for db_attr, table_attr in _TABLE_PAIRS:
        db, table = _db(get.get(db_attr)), get.get(table_attr)
        if db and isinstance(table, str) and table:
            found[Target(db, table.lower())] = None
            matched = True
    if matched:
        return
    if isinstance(obj, hms.Database):
        db = _db(obj.name)
    elif isinstance(obj, hms.HiveObjectRef):
        db = _db(obj.dbName)
        if db and obj.objectType in _TABLE_OBJECT_TYPES and obj.objectName:
            found[Target(db, obj.objectName.lower())] = None
            return
    else:
        db = next((d for d in map(_db, map(get.get, _DB_ATTRS)) if d), None)
        if top and "database" not in method:
            name = get.get("name")  # drop_table(dbname, name), ...
            if db and "table" in method and isinstance(name, str) and name:
                found[Target(db, name.lower())] = None
                return
        elif top and db is None:
            db = _db(get.get("name"))  # drop_database(name), get_database-like writes
    if db:
        found[Target(db)] = None


def _strings(body: bytes) -> list[str]:
    """Up to a few distinct strings among a struct's fields and their structs'
    direct fields (a generic decode: no spec needed)."""
    out: dict[str, None] = {}
    # What was read before any damage still counts.
    with contextlib.suppress(ProtocolError, IndexError, struct.error, UnicodeDecodeError):
        _struct_strings(body, 0, out, 2)
    return list(out)[:_MAX_GUESSES]


def _struct_strings(buf: bytes, pos: int, out: dict[str, None], depth: int) -> int:
    limit = len(buf)
    while True:
        ftype = buf[pos]
        if ftype == binary.STOP:
            return pos + 1
        pos += 3
        if ftype == binary.STRING:
            size = struct.unpack_from(">i", buf, pos)[0]
            if 0 < size <= 256 and pos + 4 + size <= limit:
                value = _db(buf[pos + 4 : pos + 4 + size].decode())
                if value and len(out) < _MAX_GUESSES:
                    out[value] = None
        if ftype == binary.STRUCT and depth > 1:
            pos = _struct_strings(buf, pos, out, depth - 1)
        else:
            pos = binary.skip(buf, pos, ftype, 16, limit)
