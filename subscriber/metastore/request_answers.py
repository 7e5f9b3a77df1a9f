"""Hive 4 request-style reads and ``get_table_names_by_filter`` answered from a cache
view (pure): ``get_database_req``, ``get_table_names_by_filter``.

A handler group of :class:`~subscriber.metastore.answers.CacheAnswers` (see
:mod:`~subscriber.metastore.function_answers`). Facts relied on, read in the
sources of HMS 2.3.10 and 4.0.1 and checked against both running
(``tests/integration/test_hms_endpoint_requests.py``):

* ``get_database_req`` exists from HMS 4.0 on (2.3 and 3.1: "Invalid method name"),
  so it is answered only when the upstream HMS was probed to have it
  (``upstream_serves_requests``, :mod:`~subscriber.metastore.dialect`). HMS 4 passes
  every database it returns through its metadata transformer
  (``MetastoreDefaultTransformer.transformDatabase``), ``get_database`` too: without
  processor capabilities the result is the same whichever call asked, so the
  ``Database`` catalogd loaded is the answer; with capabilities (``MANAGERAWMETADATA``,
  ACID write capabilities) it differs, and the call is forwarded. A missing database
  is ``NoSuchObjectException("database CAT.NAME")`` with both as sent.
* ``get_table_names_by_filter`` selects the names with a JDO query (no ``ORDER BY``,
  ``max_tables`` >= 0 a row range of it: which rows is the backing database's
  order, so a cut is forwarded) and de-duplicates them through a ``java.util.HashSet``,
  whose iteration order *is* the answer's order: by hash bucket. :func:`hash_set_order`
  reproduces it for the set HMS builds (2.3 adds names one by one; 4.0 copies a
  collection, whose initial capacity differs between JDKs: where the JDKs disagree,
  or two names share a bucket -- then their order is the query's --, it forwards).
  Only filters whose meaning does not depend on the backing database's collation are
  evaluated: ``""`` (every table and view), ``hive_filter_field_params__KEY`` with
  ``=`` or ``like`` and ``hive_filter_field_owner__`` with ``=``, of a plain ASCII
  value (letters and digits; ``_`` too for ``=``), and only when no stored key or value
  would compare equal case-insensitively or with trailing blanks (MySQL) but differ
  as strings. HMS 3.1 is not modelled (forwarded).
"""

from __future__ import annotations

import re
import struct
from typing import Any

import idl
from subscriber.cache import CacheView
from subscriber.metastore import shapes
from subscriber.metastore.framing import success_struct
from subscriber.metastore.lookups import Handler, Lookups
from subscriber.metastore.shapes import Forward
from subscriber.protocol import codec
from subscriber.protocol.binary import STRUCT
from subscriber.protocol.keys import database_key, object_type_of

__all__ = ["RequestAnswers", "hash_set_order", "java_hash"]

hms = idl.hive_metastore
_UNLOADED = idl.catalog_objects.TTableType.UNLOADED_TABLE
_DEFAULT_CATALOG = "hive"
_PARAMS = "hive_filter_field_params__"
_OWNER = "hive_filter_field_owner__"
_NO_TABLE = hms.Table(parameters={})
_FILTER = re.compile(
    r"\s*(?P<key>[A-Za-z0-9_]+)\s*(?P<op>=|(?i:like))\s*"
    r"(?P<q>[\"'])(?P<value>[A-Za-z0-9_]+)(?P=q)\s*"
)


def java_hash(text: str) -> int:
    """``String.hashCode()`` of ``text`` as an unsigned 32-bit value."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def _table_size_for(n: int) -> int:
    cap = 1
    while cap < n:
        cap <<= 1
    return cap


def _capacity(count: int, copied: bool) -> int | None:
    """The table capacity of a ``HashSet`` of ``count`` names: added one by one
    (``copied`` False, HMS 2.3) or copied from a collection (HMS 4.0, whose
    ``HashSet(Collection)`` sizes differently on JDK 8-18 and 19+: None if they differ)."""
    if not copied:
        cap = 16
        while count > cap * 3 // 4:
            cap <<= 1
        return cap
    if count >= 1 << 24:
        return None
    older = _table_size_for(max(int(_float32(count / 0.75)) + 1, 16))  # JDK 8-18
    newer = _table_size_for(-(-max(count, 12) * 4 // 3))  # JDK 19+: ceil(n / 0.75)
    return older if older == newer else None


def hash_set_order(names: list[str], copied: bool) -> list[str] | None:
    """``names`` (distinct) in the iteration order of a ``java.util.HashSet`` holding
    them (see :func:`_capacity`); None when it depends on insertion order (two names
    in one bucket) or on the JDK."""
    cap = _capacity(len(names), copied)
    if cap is None:
        return None
    buckets: dict[int, str] = {}
    for name in names:
        h = java_hash(name)
        bucket = (h ^ (h >> 16)) & (cap - 1)
        if bucket in buckets:
            return None
        buckets[bucket] = name
    return [buckets[b] for b in sorted(buckets)]


class RequestAnswers:
    """The handlers of this module over shared :class:`Lookups`."""

    def __init__(self, lookups: Lookups) -> None:
        self._lookups = lookups

    def handlers(self) -> dict[str, Handler]:
        return {
            "get_database_req": self._get_database_req,
            "get_table_names_by_filter": self._get_table_names_by_filter,
        }

    def _upstream(self) -> str:
        """``"2"`` (HMS 2.x) or ``"4"`` (HMS 4.x), as probed; Forward otherwise."""
        if self._lookups.upstream_serves_requests is True:
            return "4"
        if self._lookups.upstream_reads_catalogs is False:
            return "2"
        raise Forward("the upstream HMS's version is not known yet, or is 3.x")

    def _get_database_req(self, view: CacheView, args: Any) -> bytes:
        if self._lookups.upstream_serves_requests is not True:
            raise Forward("get_database_req: the upstream HMS may not have it (HMS 4.0+)")
        req = args.request
        if req is None or req.name is None or req.catalogName is None:
            raise Forward("no name or catalog: HMS's own error")
        if req.catalogName.lower() != _DEFAULT_CATALOG:
            raise Forward(f"catalog {req.catalogName!r}: catalogd mirrors {_DEFAULT_CATALOG!r}")
        if req.processorCapabilities:
            raise Forward("processor capabilities: HMS's transformer answers by them")
        self._lookups.follows(req.name)
        entry = view.get(database_key(req.name))
        if entry is None:
            raise hms.NoSuchObjectException(message=f"database {req.catalogName}.{req.name}")
        db = self._lookups.decode(entry).db.metastore_db
        if db is None:
            raise Forward("database kept without its HMS struct")
        return success_struct(STRUCT, codec.encode(db, check=False))

    def _get_table_names_by_filter(self, view: CacheView, args: Any) -> bytes:
        version = self._upstream()
        db, text = args.dbname or "", args.filter
        if not db or text is None:
            raise Forward("no database or no filter: HMS's own error")
        self._lookups.follows(db)
        if database_key(db) not in view.objects:
            raise Forward(f"database {db} not in the cache")
        _selects(text, _NO_TABLE)  # a filter HMS rejects is HMS's error, tables or not
        tables = self._tables(view, db)
        found = sorted(name for name, table in tables if _selects(text, table))
        max_tables = -1 if args.max_tables is None else args.max_tables
        if 0 <= max_tables < len(found):
            raise Forward("max_tables cuts the backing database's row order")
        ordered = hash_set_order(found, copied=version == "4")
        if ordered is None:
            raise Forward("names share a HashSet bucket: their order is the query's")
        return shapes.strings(ordered)

    def _tables(self, view: CacheView, db: str) -> list[tuple[str, Any]]:
        out = []
        for key in view.keys_of(db.lower()):
            if object_type_of(key) not in ("TABLE", "VIEW"):
                continue
            table = self._lookups.decode(view.objects[key]).table
            if table.table_type == _UNLOADED or table.metastore_table is None:
                raise Forward(f"table {key} not loaded yet")
            out.append((key.partition(".")[2], table.metastore_table))
        return out


def _selects(text: str, table: Any) -> bool:
    """Whether the filter ``text`` selects ``table`` (Forward: not evaluated exactly)."""
    if text == "":
        return True
    match = _FILTER.fullmatch(text)
    if match is None:
        raise Forward(f"filter {text!r} not evaluated here")
    key, op, value = match["key"], match["op"].lower(), match["value"]
    if op == "like" and "_" in value:
        raise Forward("'_' is a wildcard of like")
    if key.startswith(_PARAMS) and key != _PARAMS + "discover__partitions":
        name = key[len(_PARAMS) :]
        params = table.parameters or {}
        if any(k != name and k.lower() == name.lower() for k in params):
            raise Forward(f"a parameter key differing from {name!r} in case only")
        return _same(params.get(name), value)
    if key == _OWNER and op == "=":
        return _same(table.owner, value)
    raise Forward(f"filter key {key!r} with {op!r} not evaluated here")


def _same(stored: str | None, value: str) -> bool:
    """``stored == value``, when every collation agrees on it (Forward otherwise)."""
    if stored is None or stored == value:
        return stored is not None
    if not stored.isascii() or stored.rstrip(" ").lower() == value.lower():
        raise Forward("a value only a collation tells apart from the one asked")
    return False
