"""Catalog change plans: what a reload, invalidate or refresh changes (pure).

Each function reads the :class:`~catalogd.core.catalog.Catalog` and returns the
changes (key -> payload, None removes) that bring one part of it in line with
what HMS said. They run on the server thread inside
:meth:`CatalogServer.submit`, so they see a consistent catalog and must be
quick: the HMS calls and the encoding happen before, in the caller's thread.
A few read-only helpers (:func:`is_placeholder`, :func:`table_names_of`,
:func:`unloaded_tables`, :func:`databases_in`, :func:`loaded_table_state`)
answer questions about the catalog, on the server thread too.

Tables whose metadata is not loaded yet are *placeholders*: a ``TABLE`` object
of type ``UNLOADED_TABLE`` holding only the name. Placeholders are
deterministic bytes, so "is this table loaded?" is a byte comparison.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache

from catalogd.core.catalog import Catalog
from catalogd.core.placeholders import unloaded_table_object
from subscriber.protocol import codec
from subscriber.protocol.keys import (
    DATABASE_PREFIX,
    database_key,
    object_type_of,
    partition_prefix,
    table_key,
)

Changes = dict[str, bytes | None]


@lru_cache(maxsize=65536)
def placeholder(db: str, table: str) -> bytes:
    """The encoded placeholder of a table whose metadata is not loaded."""
    return codec.encode_object(unloaded_table_object(db, table))


def is_placeholder(catalog: Catalog, db: str, table: str) -> bool:
    entry = catalog.get(table_key(db, table))
    return entry is not None and entry.payload == placeholder(db, table)


def table_names_of(catalog: Catalog, db: str) -> set[str]:
    """Names of the tables and views the catalog holds in ``db``."""
    names = set()
    for key in catalog.keys_of_database(db.lower()):
        if object_type_of(key) in ("TABLE", "VIEW"):
            names.add(key.partition(".")[2])
    return names


def unloaded_tables(catalog: Catalog, db: str | None = None) -> list[tuple[str, str]]:
    """(db, table) of every placeholder, optionally in one database."""
    dbs = [db.lower()] if db is not None else sorted(databases_in(catalog))
    return [
        (d, t)
        for d in dbs
        for t in sorted(table_names_of(catalog, d))
        if is_placeholder(catalog, d, t)
    ]


def databases_in(catalog: Catalog) -> set[str]:
    """Names of the databases the catalog holds."""
    return {k.partition(":")[2] for k in catalog.keys_with_prefix(DATABASE_PREFIX)}


def loaded_table_state(
    catalog: Catalog, db: str, names: Iterable[str]
) -> dict[str, tuple[bytes, set[str]]]:
    """For each loaded table among ``names``: (encoded header, partition names).

    Placeholders and missing names are left out. Decoding the headers is the
    caller's job, off the server thread.
    """
    result = {}
    for name in names:
        entry = catalog.get(table_key(db, name)) or catalog.get(table_key(db, name, view=True))
        if entry is None or entry.payload is None or is_placeholder(catalog, db, name):
            continue
        prefix_len = len(partition_prefix(db, name))
        result[name] = (entry.payload, {k[prefix_len:] for k in catalog.partition_keys(db, name)})
    return result


def remove_table(catalog: Catalog, db: str, table: str) -> Changes:
    return dict.fromkeys(catalog.table_keys(db, table))


def remove_database(catalog: Catalog, db: str) -> Changes:
    return dict.fromkeys(catalog.keys_of_database(db.lower()))


def database_names(
    catalog: Catalog,
    db: str,
    db_payload: bytes,
    table_names: Iterable[str],
    *,
    reset: bool,
) -> Changes:
    """Make ``db`` hold exactly ``table_names``, by name.

    New names become placeholders; names gone from HMS lose every key; with
    ``reset`` (invalidate) every table becomes a placeholder again, so its
    metadata is reloaded lazily. Loaded tables are otherwise kept as they are.
    """
    db = db.lower()
    changes: Changes = {database_key(db): db_payload}
    wanted = {t.lower() for t in table_names}
    for name in table_names_of(catalog, db) - wanted:
        changes.update(remove_table(catalog, db, name))
    for name in sorted(wanted):
        known = table_key(db, name) in catalog or table_key(db, name, view=True) in catalog
        if reset or not known:
            changes.update(dict.fromkeys(catalog.table_keys(db, name)))
            changes[table_key(db, name)] = placeholder(db, name)
    return changes


def databases(catalog: Catalog, present: Iterable[str]) -> Changes:
    """Remove every database not in ``present`` (with all its objects)."""
    keep = {d.lower() for d in present}
    changes: Changes = {}
    for db in databases_in(catalog) - keep:
        changes.update(remove_database(catalog, db))
    return changes


def table(catalog: Catalog, db: str, name: str, payloads: Mapping[str, bytes]) -> Changes:
    """Replace every key of one table with ``payloads`` (its header and partitions)."""
    return replace_group(catalog, catalog.table_keys(db, name), payloads)


def partitions(catalog: Catalog, keys: Iterable[str], payloads: Mapping[str, bytes]) -> Changes:
    """Set the given partition keys: to their new payload, or removed when HMS lacks them."""
    return {key: payloads.get(key) for key in keys if key in payloads or key in catalog}


def replace_group(catalog: Catalog, keys: Iterable[str], payloads: Mapping[str, bytes]) -> Changes:
    """Make a group of keys (cache pools, principals, privileges) exactly ``payloads``."""
    changes: Changes = {k: None for k in keys if k not in payloads}
    changes.update(payloads)
    return changes
