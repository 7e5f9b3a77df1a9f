"""Does a read forwarded to HMS show the cache behind? (pure)

A read forwarded to HMS -- under a lock, or because the cache could not answer
it -- may show a table newer than the cached one (another writer committed and
catalogd has not reloaded it yet), a table the cache lacks, or no table where the
cache has one. The client has now seen HMS's state; its next cached read must not
be older. :func:`behind` names the tables whose cached state differs from what
the reply shows, and the endpoint asks catalogd to reload them (as after a write).

The comparison is cheap and bounded: only ``get_table`` and
``get_table_objects_by_name`` replies of at most :data:`MAX_REPLY` bytes are read,
at most :data:`MAX_TABLES` tables each, and a table is compared by what a commit
changes: its ``parameters`` (``metadata_location``, ``transient_lastDdlTime``, ...),
its storage location and its columns.
"""

from __future__ import annotations

from typing import Any

import idl
from subscriber.cache import CacheView
from subscriber.metastore import framing
from subscriber.metastore.answers import Decode
from subscriber.metastore.writes import Target
from subscriber.protocol import codec
from subscriber.protocol.errors import ProtocolError
from subscriber.protocol.keys import table_key

__all__ = ["CHECKED", "MAX_REPLY", "MAX_TABLES", "behind"]

hms = idl.hive_metastore
_SERVICE = hms.ThriftHiveMetastore
_UNLOADED = idl.catalog_objects.TTableType.UNLOADED_TABLE

CHECKED = frozenset({"get_table", "get_table_objects_by_name"})
"""The forwarded reads whose replies are compared with the cache."""
MAX_REPLY = 4 << 20
"""Replies larger than this are not compared (bytes)."""
MAX_TABLES = 64
"""At most this many tables of one reply are compared."""


def behind(view: CacheView, decode: Decode, name: str, args: Any, reply: bytes) -> list[Target]:
    """The tables whose cached state differs from what the forwarded ``reply`` to
    ``name`` (decoded arguments ``args``) shows. Never raises on a reply it cannot
    read (it names nothing then)."""
    if name not in CHECKED or len(reply) > MAX_REPLY:
        return []
    try:
        header = framing.read_header(reply)
        if header is None or header.type != framing.REPLY:
            return []
        result = codec.decode(getattr(_SERVICE, f"{name}_result"), reply[header.body_start :])
    except ProtocolError:
        return []
    db = args.dbname or ""
    if name == "get_table":
        seen = {args.tbl_name.lower(): result.success} if args.tbl_name else {}
        if result.success is None and not isinstance(result.o2, hms.NoSuchObjectException):
            return []  # an error other than "no such table": says nothing
    else:
        if result.success is None:
            return []
        asked = [n.lower() for n in (args.tbl_names or [])[:MAX_TABLES]]
        seen = dict.fromkeys(asked)
        for table in result.success[:MAX_TABLES]:
            if table.tableName and table.tableName.lower() in seen:
                seen[table.tableName.lower()] = table
    return [
        Target(db.lower(), table)
        for table, hms_table in seen.items()
        if _differs(view, decode, db, table, hms_table)
    ]


def _differs(view: CacheView, decode: Decode, db: str, table: str, hms_table: Any) -> bool:
    entry = view.get(table_key(db, table)) or view.get(table_key(db, table, view=True))
    if entry is None:
        return hms_table is not None
    if hms_table is None:
        return True
    cached = decode(entry).table
    if cached.table_type == _UNLOADED or cached.metastore_table is None:
        return False  # not loaded yet: catalogd loads it, a cached read forwards meanwhile
    return _state(cached.metastore_table) != _state(hms_table)


def _state(table: Any) -> tuple[Any, ...]:
    """What a commit to ``table`` (an HMS ``Table``) changes."""
    sd = table.sd
    cols = tuple((c.name, c.type) for c in (sd.cols or [])) if sd is not None else ()
    return (table.parameters or {}, sd.location if sd is not None else None, cols)
