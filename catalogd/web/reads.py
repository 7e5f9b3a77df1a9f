"""What the web pages read from the catalog: bounded functions run on the server thread.

Each function here takes the :class:`~catalogd.core.catalog.Catalog` (it runs inside
``CatalogServer.submit``) and returns plain values: keys, versions and the encoded
payloads, never decoded objects (decoding happens on the web's threads). Work per
call is bounded whatever the catalog size:

* :func:`databases` looks once at each database (no scan of its objects beyond the
  page's, whose non-partition keys are counted);
* :func:`tables` sorts one database's table names (no partition is touched) and
  counts the partitions of the page's tables (``len`` of an index set);
* :func:`table` returns one header and one page of partitions taken from the
  table's key set in its iteration order (stable while the table is unchanged):
  ``offset + limit`` steps, never a copy of the table's partition keys;
* :func:`table_sizes` sums the payload sizes of at most ``limit`` partitions.

Pure: no threads, sockets or clocks.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from catalogd.core.catalog import Catalog
from subscriber.protocol.keys import (
    DATABASE_PREFIX,
    PARTITION_PREFIX,
    TABLE_PREFIX,
    VIEW_PREFIX,
    table_key,
)

__all__ = ["MAX_PAGE", "Found", "Listing", "databases", "table", "table_sizes", "tables"]

MAX_PAGE = 500
"""Rows one page may ask for."""

_TABLE_PREFIXES = (TABLE_PREFIX, VIEW_PREFIX)


def _name(key: str) -> str:
    return key[key.index(".") + 1 :]


@dataclass(frozen=True)
class Found:
    """One catalog entry as read: its key, version and encoded payload."""

    key: str
    version: int
    payload: bytes
    partitions: int = 0


@dataclass(frozen=True)
class Listing:
    """A page of a group: its rows, the group's size, the catalog version read at."""

    version: int
    total: int
    rows: tuple[Found, ...]
    head: Found | None = None


def _bounded(offset: int, limit: int) -> tuple[int, int]:
    return max(0, offset), max(0, min(limit, MAX_PAGE))


def databases(catalog: Catalog, offset: int = 0, limit: int = MAX_PAGE) -> Listing:
    """A page of databases by name, each with its count of tables and views."""
    offset, limit = _bounded(offset, limit)
    names = sorted(key.partition(":")[2] for key in catalog.database_keys())
    rows = []
    for name in names[offset : offset + limit]:
        entry = catalog.get(DATABASE_PREFIX + name)
        if entry is None or entry.payload is None:
            continue
        heads = catalog.head_keys(name)
        count = sum(1 for key in heads if key.startswith(_TABLE_PREFIXES))
        rows.append(Found(entry.key, entry.version, entry.payload, count))
    return Listing(catalog.version, len(names), tuple(rows))


def tables(
    catalog: Catalog, db: str, offset: int = 0, limit: int = 100, search: str = ""
) -> Listing:
    """A page of ``db``'s tables and views by name (``search``: names containing it),
    each with its partition count; ``head`` is the database's own entry."""
    offset, limit = _bounded(offset, limit)
    db, search = db.lower(), search.lower()
    keys = [key for key in catalog.head_keys(db) if key.startswith(_TABLE_PREFIXES)]
    if search:
        keys = [key for key in keys if search in _name(key)]
    keys.sort(key=_name)
    rows = []
    for key in keys[offset : offset + limit]:
        entry = catalog.get(key)
        if entry is not None and entry.payload is not None:
            count = len(catalog.partition_key_set(db, _name(key)))
            rows.append(Found(key, entry.version, entry.payload, count))
    head = catalog.get(DATABASE_PREFIX + db)
    found = Found(head.key, head.version, head.payload) if head and head.payload else None
    return Listing(catalog.version, len(keys), tuple(rows), found)


def table(
    catalog: Catalog, db: str, name: str, offset: int = 0, limit: int = 100, search: str = ""
) -> Listing:
    """``db.name``'s header (``head``, None when absent) and a page of its partitions.

    Without ``search`` the page is ``[offset, offset + limit)`` of the table's key set
    in iteration order; with it, the first ``limit`` partitions whose name contains
    ``search`` after skipping ``offset`` of them (a scan of the table's keys at most).
    """
    offset, limit = _bounded(offset, limit)
    db, name = db.lower(), name.lower()
    head = None
    for key in (table_key(db, name), table_key(db, name, view=True)):
        entry = catalog.get(key)
        if entry is not None and entry.payload is not None:
            head = Found(entry.key, entry.version, entry.payload)
            break
    keys = catalog.partition_key_set(db, name)
    chosen = (k for k in keys if search in k) if search else iter(keys)
    rows = []
    for key in itertools.islice(chosen, offset, offset + limit):
        entry = catalog.get(key)
        if entry is not None and entry.payload is not None:
            rows.append(Found(key, entry.version, entry.payload))
    total = len(keys)
    return Listing(catalog.version, total, tuple(rows), head)


def table_sizes(
    catalog: Catalog, db: str, name: str, offset: int = 0, limit: int = 50_000
) -> tuple[int, int]:
    """``(partitions, bytes)``: the table's partition count and the payload bytes of
    its partitions ``[offset, offset + limit)`` in iteration order."""
    db, name = db.lower(), name.lower()
    keys = catalog.partition_key_set(db, name)
    size = 0
    for key in itertools.islice(keys, offset, offset + limit):
        entry = catalog.get(key)
        if entry is not None and entry.payload is not None:
            size += len(entry.payload)
    return len(keys), size


def partition_name(key: str) -> str:
    """``HDFS_PARTITION:db.t:k=v`` -> ``k=v``."""
    return key[len(PARTITION_PREFIX) :].partition(":")[2]


def find_tables(catalog: Catalog, text: str, limit: int = 100) -> list[tuple[str, str]]:
    """``(db, table)`` of up to ``limit`` tables and views whose ``db.table`` contains
    ``text`` (a scan of the non-partition keys at most)."""
    text = text.lower()
    found: list[tuple[str, str]] = []
    for db_key in catalog.database_keys():
        db = db_key.partition(":")[2]
        for key in catalog.head_keys(db):
            if key.startswith(_TABLE_PREFIXES) and text in key.partition(":")[2]:
                found.append((db, _name(key)))
                if len(found) >= limit:
                    return sorted(found)
    return sorted(found)
