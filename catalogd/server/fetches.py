"""An on-demand subscriber's reads of parts of the catalog (pure).

After Impala's ``GetPartialCatalogObject``: an on-demand subscriber keeps no
replica; it follows the invalidation stream (keys and versions) and asks catalogd,
over the same ROUTER, for what it reads (``TRequest.fetch``):

* ``keys``: those entries as they are now (a key the catalog lacks comes back as
  a tombstone at the current version: "absent at this version");
* ``list_db``: the keys (with versions, no objects) of one database's objects
  other than partitions (its database object, tables, views, functions), a page at
  a time (``offset``, ``limit``), with the group's ``total``;
* ``list_db`` + ``list_table``: that table's partition keys, likewise;
* ``list_db`` ``"*"``: the ``DATABASE`` keys of every database.

Every answer carries the catalog version it is valid at, so the subscriber can
tell it from invalidations it has seen (:mod:`subscriber.ondemand.cache`).

Bounded work per request, whatever the catalog size: at most ``max_keys`` keys
fetched and ``max_page`` listed. A page is taken from the group's set in its
iteration order, which is stable while the group does not change; the answer's
version tells the subscriber whether it changed between two pages.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection
from typing import Any

import idl
from catalogd.core.catalog import Catalog
from subscriber.protocol import wire
from subscriber.protocol.delta import INVALIDATED, Entry
from subscriber.protocol.errors import ProtocolError

__all__ = ["DATABASES", "MAX_KEYS", "MAX_PAGE", "fetch"]

svc = idl.catalog_service

DATABASES = "*"
"""``list_db`` for the list of databases (no database is named ``*``)."""
MAX_KEYS = 1_000
"""Entries one fetch may ask for (objects can be large: a page of partitions)."""
MAX_PAGE = 10_000
"""Keys one listing page may return."""


def fetch(catalog: Catalog, service_id: str, req: Any) -> Any:
    """The ``TFetchResponse`` to ``req`` (a ``TFetchRequest``).

    Raises:
        ProtocolError: neither keys nor a listing asked, or too many keys, or a bad page.
    """
    version = catalog.version
    if req.keys is not None:
        if len(req.keys) > MAX_KEYS:
            raise ProtocolError(f"fetch of {len(req.keys)} keys: at most {MAX_KEYS}")
        entries = []
        for key in req.keys:
            found = catalog.get(key)
            entries.append(found if found is not None else Entry(key, version, None))
        return svc.TFetchResponse(
            service_id=service_id,
            version=version,
            entries=[wire.entry_to_thrift(e) for e in entries],
        )
    if req.list_db is None:
        raise ProtocolError("fetch: neither keys nor list_db")
    offset, limit = req.offset or 0, req.limit if req.limit is not None else MAX_PAGE
    if offset < 0 or limit < 0:
        raise ProtocolError("fetch: negative offset or limit")
    db = req.list_db.lower()
    group: Collection[str]
    if db == DATABASES:
        group = catalog.database_keys()
    elif req.list_table is not None:
        group = catalog.partition_key_set(db, req.list_table)
    else:
        group = catalog.head_keys(db)
    page = []
    for key in itertools.islice(group, offset, offset + min(limit, MAX_PAGE)):
        entry = catalog.get(key)
        if entry is not None:
            page.append(svc.TCatalogEntry(key=key, version=entry.version, object=INVALIDATED))
    return svc.TFetchResponse(
        service_id=service_id, version=version, entries=page, total=len(group)
    )
