"""HMS's row order of a database's tables, carried in its DATABASE object (pure).

HMS answers ``get_table_objects_by_name`` with a query that has no ``ORDER BY``:
two or more tables come back in its backing database's plan's order, which the
catalog cannot derive (measured: by name for a few tables on Derby and PostgreSQL;
for 405 tables on PostgreSQL neither by name nor by creation, HMS 2.3 cutting the
names into batches of 300 in a ``HashSet``'s order).
An HMS endpoint that has not seen that order must forward the call. So catalogd
learns it once for every endpoint: it asks HMS for *all* of a database's tables
(what PyIceberg's ``list_tables`` and Spark's ``listTables`` ask) and publishes the
answer's order in ``TDatabase.table_order``, each table with the catalog version it
had. An endpoint uses it only for exactly those tables at exactly those versions
(:func:`subscriber.metastore.orders.RowOrders.arrange`); any change to one of them, a
table more or fewer, and it is not used until catalogd learns the order again.

Here: which databases need learning (:func:`candidates`, :func:`needs_learning`),
what committing a learnt order changes (:func:`plan`), and keeping an order when the
database object is reloaded (:func:`keep_order`). No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import idl
from catalogd.core.catalog import Catalog
from catalogd.core.plans import placeholder
from subscriber.protocol import codec
from subscriber.protocol.keys import database_key, object_type_of

co = idl.catalog_objects

MAX_TABLES = 1000
"""Databases with more tables and views than this are not learnt (each learning reads
every one of them from HMS); an endpoint forwards, and learns, as before."""

Fingerprint = dict[str, int]
"""Table or view name (lower case) -> its catalog version."""


BUDGET = 20_000
"""Catalog keys looked at per :func:`candidates` call at most (the server thread's
time: measured ~21 ms for 22,000 keys, 1,000 databases of 20 tables); databases
beyond it are looked at in the next call."""


class Candidate(NamedTuple):
    """A database whose tables changed: its tables now and its object's payload."""

    db: str
    tables: Fingerprint
    payload: bytes


class Scan(NamedTuple):
    """What :func:`candidates` found."""

    version: int
    """The catalog's version when it looked."""
    found: list[Candidate]
    examined: dict[str, int]
    """Every database looked at -> the version of its newest change then."""
    complete: bool
    """Every database changed since was looked at (else: the rest next time)."""


def fingerprint(catalog: Catalog, db: str, max_tables: int = MAX_TABLES) -> Fingerprint | None:
    """Every table and view of ``db`` with its version; None when there is no order to
    learn (fewer than two, more than ``max_tables``) or a table is not loaded (an
    endpoint cannot answer it, and loading it gives it a new version)."""
    tables: Fingerprint = {}
    for key in catalog.head_keys(db):
        if object_type_of(key) not in ("TABLE", "VIEW"):
            continue
        entry = catalog.get(key)
        if entry is None:
            continue
        name = key.partition(".")[2]
        if entry.payload == placeholder(db, name):
            return None
        tables[name] = entry.version
        if len(tables) > max_tables:
            return None
    return tables if len(tables) >= 2 else None


def candidates(
    catalog: Catalog,
    since: int,
    seen: Mapping[str, int],
    max_tables: int = MAX_TABLES,
    budget: int = BUDGET,
) -> Scan:
    """Databases changed after version ``since`` whose tables could be ordered (server
    thread). A database whose newest change is the one ``seen`` names is skipped in
    O(1); the others cost their heads, at most ``budget`` keys in all. Whether each
    candidate needs learning is decided off the server thread (:func:`needs_learning`)."""
    found: list[Candidate] = []
    examined: dict[str, int] = {}
    spent = 0
    for db in catalog.databases_changed_since(since):
        changed = catalog.changed_version_of(db)
        if not db or seen.get(db) == changed:
            continue
        if spent >= budget:
            return Scan(catalog.version, found, examined, complete=False)
        spent += len(catalog.head_keys(db))
        examined[db] = changed
        candidate = candidate_of(catalog, db, max_tables)
        if candidate is not None:
            found.append(candidate)
    return Scan(catalog.version, found, examined, complete=True)


def candidate_of(catalog: Catalog, db: str, max_tables: int = MAX_TABLES) -> Candidate | None:
    """``db`` as a :class:`Candidate` now (None: gone, or no order to learn)."""
    entry = catalog.get(database_key(db))
    if entry is None or entry.payload is None:
        return None
    tables = fingerprint(catalog, db, max_tables)
    return None if tables is None else Candidate(db, tables, entry.payload)


def order_of(payload: bytes) -> list[tuple[str, int]] | None:
    """The (name, version) rows a DATABASE payload carries, in HMS's order (None: none)."""
    database = codec.decode_object(payload).db
    rows = database.table_order if database is not None else None
    if rows is None:
        return None
    return [(row.name, row.catalog_version) for row in rows]


def needs_learning(candidate: Candidate) -> bool:
    """Whether the order ``candidate``'s payload carries is not for its tables now."""
    order = order_of(candidate.payload)
    return order is None or dict(order) != candidate.tables or len(order) != len(candidate.tables)


def plan(catalog: Catalog, db: str, names: Sequence[str], tables: Fingerprint) -> dict[str, bytes]:
    """Server thread: publish ``names`` (HMS's order of ``tables``) in ``db``'s object,
    unless a table changed since ``tables`` was taken (then nothing)."""
    entry = catalog.get(database_key(db))
    if entry is None or entry.payload is None or fingerprint(catalog, db) != tables:
        return {}
    if sorted(names) != sorted(tables):
        raise ValueError(f"an order of other tables than {db}'s")
    return {database_key(db): with_order(entry.payload, [(n, tables[n]) for n in names])}


def with_order(payload: bytes, rows: Sequence[tuple[str, int]] | None) -> bytes:
    """``payload`` (a DATABASE object) carrying ``rows`` as its table order."""
    obj = codec.decode_object(payload)
    obj.db.table_order = (
        None if rows is None else [co.TVersionedName(name=n, catalog_version=v) for n, v in rows]
    )
    return codec.encode_object(obj)


def keep_order(catalog: Catalog, changes: Mapping[str, bytes | None]) -> dict[str, bytes | None]:
    """``changes`` with every reloaded database object keeping the order it carries now
    (a reload from HMS has none; the versions in it say whether it still holds, so an
    unchanged reload stays free and the order is not learnt again)."""
    kept = dict(changes)
    for key, payload in changes.items():
        if payload is None or object_type_of(key) != "DATABASE":
            continue
        entry = catalog.get(key)
        if entry is None or entry.payload is None or entry.payload == payload:
            continue
        order = order_of(entry.payload)
        if order is not None and order_of(payload) is None:
            kept[key] = with_order(payload, order)
    return kept
