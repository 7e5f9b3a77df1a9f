"""The pages' view functions: catalog reads in, template contexts (plain dicts) out.

Each ``*_view`` takes ``read``, which runs a function of :mod:`catalogd.web.reads` on
the server thread and returns its result (the app passes a bounded, timed
``server.submit``; tests pass ``lambda fn: fn(catalog)``), and decodes the encoded
objects here, on the web's thread. Contexts hold text and numbers only: the
templates escape every string (Jinja2 autoescape), whatever a table's comment,
parameters or partition values say.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import idl
from catalogd.core.catalog import Catalog
from catalogd.web import reads
from subscriber.protocol.codec import decode_object
from subscriber.protocol.keys import split_partition_key

__all__ = [
    "Read",
    "catalog_view",
    "database_view",
    "fingerprint",
    "page_of",
    "table_context",
    "table_view",
]

T = TypeVar("T")
Read = Callable[[Callable[[Catalog], T]], T]
co = idl.catalog_objects
_TABLE_TYPES = co.TTableType._VALUES_TO_NAMES


def page_of(offset: int, limit: int, total: int) -> dict[str, Any]:
    """Paging links' numbers: ``prev``/``next`` offsets (None at an end)."""
    return {
        "offset": offset,
        "limit": limit,
        "total": total,
        "first": offset + 1 if total else 0,
        "last": min(offset + limit, total),
        "prev": max(0, offset - limit) if offset > 0 else None,
        "next": offset + limit if offset + limit < total else None,
    }


def catalog_view(read: Read[Any], offset: int = 0, limit: int = 200) -> dict[str, Any]:
    """``/catalog``: databases by name with their table counts."""
    listing = read(functools.partial(reads.databases, offset=offset, limit=limit))
    rows = []
    for found in listing.rows:
        db = decode_object(found.payload).db
        meta = db.metastore_db
        rows.append(
            {
                "name": db.db_name,
                "tables": found.partitions,
                "version": found.version,
                "comment": getattr(meta, "description", "") or "",
                "location": getattr(meta, "locationUri", "") or "",
            }
        )
    return {
        "version": listing.version,
        "databases": rows,
        "page": page_of(offset, limit, listing.total),
    }


def _table_row(found: reads.Found) -> dict[str, Any]:
    table = decode_object(found.payload).table
    kind = _TABLE_TYPES.get(table.table_type, "?")
    meta = table.metastore_table
    stats = table.table_stats
    state = "not loaded" if kind == "UNLOADED_TABLE" else "loaded"
    if table.load_status is not None and table.load_status.status_code:
        state = "failed"
    return {
        "name": table.tbl_name,
        "type": meta.tableType if meta is not None and meta.tableType else kind,
        "state": state,
        "partitions": found.partitions,
        "rows": stats.num_rows if stats is not None and stats.num_rows >= 0 else None,
        "bytes": stats.total_file_bytes if stats is not None else None,
        "version": found.version,
    }


def database_view(
    read: Read[Any], db: str, offset: int = 0, limit: int = 100, search: str = ""
) -> dict[str, Any] | None:
    """``/catalog/DB``: its tables (type, partitions, size, version, load state);
    None when there is no such database."""
    listing = read(
        functools.partial(reads.tables, db=db, offset=offset, limit=limit, search=search)
    )
    if listing.head is None:
        return None
    meta = decode_object(listing.head.payload).db.metastore_db
    return {
        "db": db.lower(),
        "version": listing.version,
        "db_version": listing.head.version,
        "comment": getattr(meta, "description", "") or "",
        "location": getattr(meta, "locationUri", "") or "",
        "owner": getattr(meta, "ownerName", "") or "",
        "parameters": sorted((getattr(meta, "parameters", None) or {}).items()),
        "tables": [_table_row(found) for found in listing.rows],
        "search": search,
        "page": page_of(offset, limit, listing.total),
    }


def _columns(fields: list[Any] | None, stats: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for field in fields or []:
        col = stats.get((field.name or "").lower())
        row = {"name": field.name, "type": field.type, "comment": field.comment or ""}
        if col is not None:
            row.update(ndv=col.num_distinct_values, nulls=col.num_nulls, avg_size=col.avg_size)
        rows.append(row)
    return rows


def _partition_row(found: reads.Found) -> dict[str, Any]:
    part = decode_object(found.payload).hdfs_partition
    stats = part.stats
    location = part.location.suffix if part.location is not None else ""
    return {
        "name": split_partition_key(found.key)[1],
        "version": found.version,
        "location": location,
        "rows": stats.num_rows if stats is not None and stats.num_rows >= 0 else None,
        "bytes": part.total_file_size_bytes,
        "files": len(part.file_desc) if part.file_desc is not None else None,
        "parameters": sorted((part.hms_parameters or {}).items()),
    }


def table_view(
    read: Read[Any], db: str, name: str, offset: int = 0, limit: int = 100, search: str = ""
) -> dict[str, Any] | None:
    """``/catalog/DB/TABLE``: columns, partition keys, parameters, statistics and a
    page of partitions with their versions; None when there is no such table."""
    listing = read(
        functools.partial(reads.table, db=db, name=name, offset=offset, limit=limit, search=search)
    )
    return table_context(listing, db, offset, limit, search)


def fingerprint(listing: reads.Listing) -> tuple[Any, ...]:
    """What a page built from ``listing`` depends on: its rows' keys and versions (not
    the catalog's version), so a page is rebuilt only when what it shows changed."""
    head = (listing.head.key, listing.head.version) if listing.head else None
    return head, listing.total, tuple((found.key, found.version) for found in listing.rows)


def table_context(
    listing: reads.Listing, db: str, offset: int, limit: int, search: str
) -> dict[str, Any] | None:
    """The context of a table's page read as ``listing`` (:func:`table_view`)."""
    if listing.head is None:
        return None
    row = _table_row(listing.head)
    table = decode_object(listing.head.payload).table
    meta = table.metastore_table
    sd = getattr(meta, "sd", None)
    stats = {
        col.columnName: col.col_stats
        for col in (table.columns or []) + (table.clustering_columns or [])
        if col.col_stats is not None
    }
    parameters = dict(getattr(meta, "parameters", None) or {})
    rows = [_partition_row(found) for found in listing.rows]
    rows.sort(key=lambda r: r["name"])  # the page is taken in catalog order
    return {
        **row,
        "db": db.lower(),
        "owner": getattr(meta, "owner", "") or "",
        "comment": parameters.get("comment", "") or table.tbl_comment or "",
        "location": getattr(sd, "location", "") or "",
        "input_format": getattr(sd, "inputFormat", "") or "",
        "view_text": getattr(meta, "viewOriginalText", "") or "",
        "columns": _columns(getattr(sd, "cols", None), stats),
        "partition_keys": _columns(getattr(meta, "partitionKeys", None), stats),
        "parameters": sorted(parameters.items()),
        "cache_pool": table.cache_pool_name or "",
        "load_error": _load_error(table),
        "partitions": rows,
        "partition_total": listing.total,
        "search": search,
        "page": page_of(offset, limit, listing.total),
    }


def _load_error(table: Any) -> str:
    status = table.load_status
    if status is None or not status.status_code:
        return ""
    return "; ".join(status.error_msgs or []) or "load failed"
