"""Stable object ids and the placeholder of a table whose metadata is not loaded (pure).

Invariants:

* :func:`stable_id` depends on the object's key alone (a hash, never a counter), so
  the same object converts to the same bytes on every reload and restart.
* :func:`unloaded_table_object` depends on the (lower-cased) names alone: a
  placeholder's encoded bytes are the same every time, which is what lets
  :func:`catalogd.core.plans.is_placeholder` compare bytes.

The conversion from HMS objects (:mod:`catalogd.conversion.objects`) uses the same
ids, so a loaded table keeps the id of its placeholder.
"""

from __future__ import annotations

import hashlib

import idl
from subscriber.protocol.keys import table_key

__all__ = ["stable_id", "unloaded_table_object"]

co = idl.catalog_objects


def stable_id(key: str) -> int:
    """A positive 63-bit id derived from an object key (stable across reloads)."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") >> 1


def unloaded_table_object(db: str, name: str) -> object:
    """A placeholder ``TABLE`` object: only the name is known (lazy loading)."""
    return co.TCatalogObject(
        type=co.TCatalogObjectType.TABLE,
        catalog_version=0,
        table=co.TTable(
            db_name=db.lower(),
            tbl_name=name.lower(),
            table_type=co.TTableType.UNLOADED_TABLE,
            id=stable_id(table_key(db, name)),
        ),
    )
