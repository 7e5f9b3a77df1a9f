"""``get_table_objects_by_name_req`` answered from a cache view (pure): by names, by a
table pattern, with or without a projection.

A handler group of :class:`~subscriber.metastore.answers.CacheAnswers` (see
:mod:`~subscriber.metastore.function_answers`). Facts relied on, read in HMS 4.0.1's
source (``HMSHandler.getTableObjectsInternal``, ``ObjectStore.getTableObjectsByName``,
``TableFields``) and checked against it running (``tests/integration/
test_hms_endpoint_requests.py``):

* Names (``tblNames``) select with a JDO query, rows in the backing database's order
  (published by catalogd for all of a database's tables, ``TDatabase.table_order``,
  else learnt: :mod:`~subscriber.metastore.orders`). Without a projection each row is the
  whole ``Table``, and an insert-only transactional table makes HMS check that the
  client's ``capabilities`` name ``INSERT_ONLY_TABLES`` (else an error: forwarded);
  HMS checks nothing else of them (unless run as a test, ``hive.in.test``). Spark's
  Hive 4 client sends ``[INSERT_ONLY_TABLES]``.
* ``tablesPattern`` (Hive 4; Spark's Hive 4 client lists tables with ``.*``) is
  lower-cased, split at ``|``, ``*`` made ``.*``, and each alternative matched
  case-insensitively, whole, through DataNucleus: measured, ``.*`` is any run of
  characters, ``.`` any one, and every other character itself (``_`` and ``%`` too;
  ``[ae].*`` matches nothing). Alternatives with other characters than letters, digits,
  ``_``, ``.`` and ``*`` are forwarded (not measured). The database name is matched the
  same way (``bk.a`` lists ``bk_a``'s and ``bkxa``'s tables): one with ``.`` or ``*``
  is forwarded.
* A projection (``projectionSpec.fieldList``) makes HMS fill a bare ``MTable`` with
  the listed columns and convert it as any table: ``tableType`` ``MANAGED_TABLE``
  (views too: the view text was not read), ``createTime``, ``lastAccessTime``,
  ``retention``, ``writeId`` and ``id`` 0, ``rewriteEnabled`` false, ``ownerType``
  the table's or ``USER``, and only the listed ones of ``dbName``, ``tableName`` and
  ``owner``; no descriptor, keys or parameters (so no capability check). Served for
  field lists within those four that name ``tableName``; others forwarded.
* HMS 2.3 and 3.1 do not know either field and ignore them, so both are served only
  when the upstream HMS was probed to have Hive 4's calls (``upstream_serves_requests``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

import idl
from subscriber.cache import CacheView
from subscriber.metastore import orders, shapes
from subscriber.metastore.framing import success_struct
from subscriber.metastore.lookups import Handler, Lookups
from subscriber.metastore.shapes import Forward
from subscriber.protocol import codec
from subscriber.protocol.binary import LIST, STRUCT
from subscriber.protocol.delta import Entry
from subscriber.protocol.keys import database_key

__all__ = ["MAX_PATTERN", "PROJECTED_FIELDS", "TableRequests", "partial_table", "table_pattern"]

hms = idl.hive_metastore

PROJECTED_FIELDS = frozenset({"dbName", "tableName", "owner", "ownerType"})
"""Projection fields answered from the cache (the ones Spark's Hive 4 client asks)."""

_PLAIN = re.compile(r"[a-z0-9_.*]*")
MAX_PATTERN = 4096
"""Longer table patterns are forwarded: each alternative is a regular expression to
compile, and an endpoint thread must not spend a long time on one call's pattern."""


def table_pattern(pattern: str) -> Callable[[str], bool]:
    """Whether a table name matches ``tablesPattern`` as HMS 4 matches it (see the
    module docstring).

    Raises:
        Forward: a character whose meaning was not measured.
    """
    if len(pattern) > MAX_PATTERN:
        raise Forward(f"a table pattern of {len(pattern)} characters")
    alternatives = []
    for alternative in pattern.strip().lower().split("|"):
        if not _PLAIN.fullmatch(alternative):
            raise Forward(f"table pattern {pattern!r}: characters not modelled")
        regex = "".join(
            ".*" if part == "*" else "." if part == "." else re.escape(part)
            for part in re.findall(r"\*|\.|[^.*]+", alternative.replace(".*", "*"))
        )
        alternatives.append(re.compile(regex, re.IGNORECASE))
    return lambda name: any(a.fullmatch(name) for a in alternatives)


def partial_table(table: Any, fields: frozenset[str]) -> Any:
    """The ``Table`` HMS 4 answers for ``table`` under a projection of ``fields``
    (within :data:`PROJECTED_FIELDS`)."""
    return hms.Table(
        tableName=table.tableName if "tableName" in fields else None,
        dbName=table.dbName if "dbName" in fields else None,
        owner=table.owner if "owner" in fields else None,
        createTime=0,
        lastAccessTime=0,
        retention=0,
        tableType="MANAGED_TABLE",
        rewriteEnabled=False,
        ownerType=(table.ownerType if "ownerType" in fields else None) or hms.PrincipalType.USER,
        writeId=0,
        id=0,
    )


class TableLookups(Lookups, Protocol):
    """What this group uses beyond :class:`Lookups`."""

    def table(self, view: CacheView, db: str, name: str) -> tuple[Entry, Any] | None:
        """The entry and HMS ``Table`` of ``db.name`` (None: not in the cache; Forward:
        not loaded)."""
        ...

    def table_bytes(self, entry: Entry, table: Any) -> bytes:
        """The encoded ``Table`` (memoised by key and version)."""
        ...

    def table_names(self, view: CacheView, db: str) -> list[str]:
        """The names of ``db``'s tables and views (Forward: ``db`` not in the cache)."""
        ...


class TableRequests:
    """The ``get_table_objects_by_name_req`` handler over shared lookups."""

    def __init__(self, lookups: TableLookups) -> None:
        self._lookups = lookups

    def handlers(self) -> dict[str, Handler]:
        return {"get_table_objects_by_name_req": self._get_table_objects_by_name_req}

    def _get_table_objects_by_name_req(self, view: CacheView, args: Any) -> bytes:
        req = args.req
        if req is None:
            raise Forward("no request")
        pattern, spec = req.tablesPattern, req.projectionSpec
        if (pattern is not None or spec is not None) and (
            self._lookups.upstream_serves_requests is not True
        ):
            raise Forward("a table pattern or projection: read by HMS 4 only, ignored before")
        if req.tblNames is None and pattern is None:
            raise Forward("every table: HMS's error")
        fields = _projected(spec)
        db = req.dbName or ""
        if "." in db or "*" in db:
            raise Forward(f"database {db!r}: HMS reads it as a pattern")
        # No names: every table the pattern matches (HMS: both conditions when both).
        names = (
            list(req.tblNames) if req.tblNames is not None else self._lookups.table_names(view, db)
        )
        if pattern is not None:
            matches = table_pattern(pattern)
            names = [n for n in names if matches(n.lower())]
        items = self.rows(view, db, names, fields, pattern, _insert_only(req.capabilities))
        return success_struct(STRUCT, shapes.struct_field(1, LIST, shapes.struct_list(items)))

    def rows(
        self,
        view: CacheView,
        db: str,
        names: list[str],
        fields: frozenset[str] | None = None,
        pattern: str | None = None,
        insert_only: bool = False,
    ) -> list[bytes]:
        """The tables of ``names`` (each once), whole or projected, in HMS's row order
        (also ``get_table_objects_by_name``'s answer); ``insert_only``: the client
        declared the capability to read insert-only tables.

        Raises:
            Forward: ``db`` not in the cache, a table not loaded, an insert-only table
                asked whole, or the row order not learnt yet.
        """
        lookups = self._lookups
        lookups.table_names(view, db)  # Forward: a database not in the cache
        found: dict[str, tuple[int, bytes]] = {}
        for name in names:
            row = lookups.table(view, db, name)
            if row is None or name.lower() in found:
                continue
            entry, table = row
            if fields is not None:
                data = codec.encode(partial_table(table, fields), check=False)
            else:
                properties = (table.parameters or {}).get("transactional_properties") or ""
                if properties.lower() == "insert_only" and not insert_only:
                    raise Forward("an insert-only table: HMS checks the client's capabilities")
                data = lookups.table_bytes(entry, table)
            found[name.lower()] = (entry.version, data)
        # The query differs with a pattern or a projection, and so may the row order.
        if pattern is None and fields is None:
            published = _published_order(lookups, view, db)
            whole = ("tables", db.lower())
            return lookups.orders.arrange(whole, found, orders.table_names, published)
        scope = ("tables", db.lower(), pattern, fields)
        return lookups.orders.arrange(scope, found, orders.table_names)


def _published_order(lookups: Lookups, view: CacheView, db: str) -> list[tuple[str, int]] | None:
    """HMS's order of all of ``db``'s tables as catalogd learnt it: (name, version) rows
    (``TDatabase.table_order``; None when it carries none)."""
    entry = view.get(database_key(db))
    database = lookups.decode(entry).db if entry is not None else None
    rows = database.table_order if database is not None else None
    return None if rows is None else [(r.name, r.catalog_version) for r in rows]


def _insert_only(capabilities: Any) -> bool:
    """Whether ``ClientCapabilities`` declare ``INSERT_ONLY_TABLES`` (HMS checks no other
    capability here unless it runs as a test, ``hive.in.test``)."""
    values = capabilities.values if capabilities is not None else None
    return hms.ClientCapability.INSERT_ONLY_TABLES in (values or [])


def _projected(spec: Any) -> frozenset[str] | None:
    """The projected fields of ``spec`` (None: whole tables). Raises Forward for a
    projection this group does not model."""
    if spec is None:
        return None
    if spec.includeParamKeyPattern is not None or spec.excludeParamKeyPattern is not None:
        raise Forward("parameter key patterns in a projection")
    if not spec.fieldList:
        raise Forward("a projection without fields")
    fields = frozenset(spec.fieldList)
    if "tableName" not in fields or not fields <= PROJECTED_FIELDS:
        raise Forward(f"projection of {sorted(fields)}: not modelled")
    return fields
