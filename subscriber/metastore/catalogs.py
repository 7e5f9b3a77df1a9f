"""Catalog-qualified names of Hive 3/4 clients, read as HMS reads them (pure).

A Hive 3 or 4 metastore client names a database with its catalog in the old calls'
database arguments: ``@hive#sales`` (``@CATALOG#DB``), ``@hive#`` for no database
(``get_databases`` of every one) and ``@hive#!`` for the empty name -- HMS's
``MetaStoreUtils.parseDbName`` (checked in Hive 3.1's source); request structs carry
``catName`` beside ``dbName``. catalogd mirrors one catalog, :data:`DEFAULT_CATALOG`
(HMS's default, the one catalogd reads), so :func:`unqualify` rewrites a call's
arguments to plain database names before they are answered from the cache (request
structs' ``dbName`` is not parsed by HMS: a marker there is forwarded), and sends
anything about another catalog, or a request field the cache cannot honour
(``validWriteIdList``, ``processorCapabilities``, ``engine``, ...), to HMS.
"""

from __future__ import annotations

from typing import Any

import idl
from subscriber.metastore.shapes import Forward

__all__ = ["DEFAULT_CATALOG", "split", "unqualify"]

hms = idl.hive_metastore

DEFAULT_CATALOG = "hive"
_DB_ARGS = ("dbname", "db_name", "dbName")
# Answers that repeat the catalog of "@cat#db" as the client spelt it (HMS 3.1).
_ECHO_CATALOG = frozenset({"get_partitions_pspec"})
# Request-struct fields the cached answers honour (others: forward), and values of
# other fields that mean "nothing asked" (Hive 4's IDL defaults, sent by its clients).
_REQUEST_FIELDS = frozenset(
    {"dbName", "tblName", "tblNames", "catName", "capabilities", "tablesPattern", "projectionSpec"}
)
# The calls whose ``req`` is checked here (other request calls check their own fields).
_TABLE_REQUESTS = frozenset({"get_table_req", "get_table_objects_by_name_req"})
_NEUTRAL: dict[str, tuple[Any, ...]] = {
    "id": (-1,),
    "engine": ("hive",),
    "getColumnStats": (False,),
}


def split(value: str) -> tuple[str | None, str | None]:
    """``@cat#db`` -> (``cat``, ``db``); ``@cat#`` -> (``cat``, None); ``@cat#!`` ->
    (``cat``, ``""``); a plain name -> (None, name).

    Raises:
        MetaException: HMS's error for a marker without a catalog (``@db``).
    """
    if not value.startswith("@"):
        return None, value
    if value.endswith("#"):
        return value[1:-1], None
    if value.endswith("#!"):
        return value[1:-2], ""
    catalog, sep, db = value[1:].partition("#")
    if not sep:
        raise hms.MetaException(
            message=f"{value} is prepended with the catalog marker but does not "
            "appear to have a catalog name in it"
        )
    return catalog, db


def unqualify(method: str, args: Any, upstream_reads_catalogs: bool | None = True) -> None:
    """Rewrite ``args`` (decoded, this call's own) to plain database names in place.
    ``upstream_reads_catalogs``: whether the HMS stood in for reads ``@cat#db`` (HMS
    3.1+; HMS 2.3 takes it for a name); unless True, a qualified name is forwarded.

    Raises:
        Forward: another catalog, no database where one is needed, a qualified name
            an HMS that does not read them would answer, or a request field the cache
            does not honour.
        MetaException: a malformed catalog marker (HMS's own error).
    """
    for attr in (*_DB_ARGS, "name" if method == "get_database" else None):
        if attr is None:
            continue
        value = getattr(args, attr, None)
        if isinstance(value, str) and value.startswith("@"):
            _readable(upstream_reads_catalogs)
            if method in _ECHO_CATALOG and split(value)[0] != DEFAULT_CATALOG:
                raise Forward(f"{method}: HMS answers the catalog as spelt")
            setattr(args, attr, _database(value))
    pattern = getattr(args, "pattern", None)
    if method == "get_databases" and isinstance(pattern, str) and pattern.startswith("@"):
        _readable(upstream_reads_catalogs)
        catalog, db = split(pattern)
        _check(catalog)
        args.pattern = db  # None: every database, as HMS answers for "@hive#"
    req = getattr(args, "req", None) if method in _TABLE_REQUESTS else None
    if req is not None and hasattr(req, "thrift_spec"):
        extra = [
            name
            for _, name, *_ in req.thrift_spec.values()
            if name not in _REQUEST_FIELDS
            and getattr(req, name, None) not in (None, *_NEUTRAL.get(name, ()))
        ]
        if extra:
            raise Forward(f"request fields the cache does not honour: {', '.join(sorted(extra))}")
        _check(req.catName)  # HMS 2.3 ignores catName: the one catalog either way
        if isinstance(req.dbName, str) and req.dbName.startswith("@"):
            # HMS 2.3, 3.1 and 4.0 take a request's dbName as written (checked in their
            # sources; HMS 4.0.1: "Could not find database hive.@hive#db"): its answer.
            raise Forward("'@catalog#db' in a request struct: HMS reads it as a name")


def _readable(upstream_reads_catalogs: bool | None) -> None:
    if upstream_reads_catalogs is not True:
        why = "not known yet" if upstream_reads_catalogs is None else "HMS 2.x: a name"
        raise Forward(f"how the upstream HMS reads '@catalog#db' is {why}")


def _database(value: str) -> str:
    catalog, db = split(value)
    _check(catalog)
    if db is None:
        raise Forward(f"{value}: a catalog without a database")
    return db


def _check(catalog: str | None) -> None:
    if catalog is not None and catalog.lower() != DEFAULT_CATALOG:
        raise Forward(f"catalog {catalog!r}: catalogd mirrors {DEFAULT_CATALOG!r} only")
