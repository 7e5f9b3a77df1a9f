"""Lookups behind :class:`~subscriber.api.CatalogSubscriber`'s reads, over one cache view.

Pure functions of an immutable :class:`~subscriber.cache.CacheView` (and, where
objects must be looked into, a ``decode`` callable such as :class:`ObjectDecoder`):
no lock, no I/O, safe from any thread. Partition specs are parsed here. Two memos
sit beside them: :class:`ObjectDecoder` (decoded objects) and
:class:`PrivilegeIndexes` (the privilege index of the newest global objects).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from subscriber.cache import CacheView
from subscriber.memo import BoundedMemo
from subscriber.privileges import PrivilegeIndex
from subscriber.protocol import codec
from subscriber.protocol.delta import Entry
from subscriber.protocol.errors import InvalidRequestError, NotFoundError
from subscriber.protocol.keys import (
    AUTHORIZATION_PREFIXES,
    CACHE_POOL_PREFIX,
    GLOBAL,
    TABLE_PREFIX,
    TableName,
    database_key,
    object_type_of,
    parse_partition_name,
    table_key,
)

PartitionSpec = Mapping[str, str] | str | None
"""A partial partition spec: ``{"dt": "2024-01-01"}``, ``"dt=2024-01-01/h=3"``, or None (all)."""

Decode = Callable[[Entry], Any]

_MEMO_LIMIT = 200_000


class ObjectDecoder:
    """Decodes an entry's payload into its ``TCatalogObject`` (with ``catalog_version``
    set), memoised by ``(key, version)``; the memo starts over past ``limit`` objects.

    Safe to share between threads: at worst two threads decode the same entry.
    """

    def __init__(self, limit: int = _MEMO_LIMIT) -> None:
        self._memo: BoundedMemo[tuple[str, int], Any] = BoundedMemo(limit)
        self._known = self._memo.values  # read directly: this is every read's hot path

    def __call__(self, entry: Entry) -> Any:
        memo_key = (entry.key, entry.version)
        obj = self._known.get(memo_key)
        if obj is None:
            assert entry.payload is not None
            obj = codec.decode_object(entry.payload)
            obj.catalog_version = entry.version
            self._memo.put(memo_key, obj)
        return obj


def table_names(view: CacheView, db: str) -> list[str]:
    """Names of the tables and views in database ``db`` (lower-cased), sorted.

    Raises:
        NotFoundError: no such database in the view.
    """
    if database_key(db) not in view.objects:
        raise NotFoundError(f"database {db!r} not found")
    names = []
    for key in view.keys_of(db):
        kind = object_type_of(key)
        if kind in ("TABLE", "VIEW"):
            names.append(key.partition(".")[2])
    return sorted(names)


def table_entry(view: CacheView, name: TableName) -> Entry:
    """The entry of table or view ``name``.

    Raises:
        NotFoundError: neither exists in the view.
    """
    entry = view.get(table_key(name.db, name.table)) or view.get(
        table_key(name.db, name.table, view=True)
    )
    if entry is None:
        raise NotFoundError(f"table {name} not found")
    return entry


def partition_entries(
    view: CacheView, name: TableName, columns: list[str], spec: PartitionSpec
) -> list[Entry]:
    """The partition entries of table ``name`` (partition ``columns``) matching
    ``spec``, sorted by partition name.

    Raises:
        InvalidRequestError: a malformed spec, or a column not in ``columns``.
    """
    wanted = spec_pairs(spec)
    unknown = [c for c, _ in wanted if c not in columns]
    if unknown:
        raise InvalidRequestError(
            f"{', '.join(unknown)} not a partition column of {name}; "
            f"partition columns: {', '.join(columns) or '(none)'}"
        )
    parts = view.partitions_of(str(name))
    found = parts.matching(dict(wanted)) if wanted else list(parts.items())
    found.sort(key=lambda item: item[0])
    return [entry for _, entry in found]


def spec_pairs(spec: PartitionSpec) -> list[tuple[str, str]]:
    """``spec`` as ``(column, value)`` pairs, columns lower-cased.

    Raises:
        InvalidRequestError: a malformed ``k=v/k2=v2`` string.
    """
    if spec is None:
        return []
    if isinstance(spec, str):
        return list(parse_partition_name(spec))
    if not isinstance(spec, Mapping):
        raise InvalidRequestError(
            f"a partition spec is a mapping like {{'dt': '2024-01-01'}}, a string like "
            f"'dt=2024-01-01/region=eu' or None, not {type(spec).__name__} {spec!r:.80}"
        )
    return [(str(k).lower(), str(v)) for k, v in spec.items()]


def cached_tables(view: CacheView, decode: Decode, pool: str | None = None) -> list[str]:
    """Tables (``db.table``) and partitions (``db.table/k=v``) marked cached (in
    ``pool`` when given), from table headers alone; sorted."""
    found = []
    for keys in view.by_database.values():
        for key in keys:
            if not key.startswith(TABLE_PREFIX):
                continue
            table = decode(view.objects[key]).table
            name = f"{table.db_name}.{table.tbl_name}"
            if table.cache_pool_name and pool in (None, table.cache_pool_name):
                found.append(name)
            for part, part_pool in (table.cached_partitions or {}).items():
                if pool in (None, part_pool):
                    found.append(f"{name}/{part}")
    return sorted(found)


def cache_pools(view: CacheView, decode: Decode) -> list[Any]:
    """The ``THdfsCachePool`` objects of the view, sorted by name."""
    names = sorted(k for k in view.keys_of(GLOBAL) if k.startswith(CACHE_POOL_PREFIX))
    return [decode(view.objects[k]).cache_pool for k in names]


class PrivilegeIndexes:
    """The :class:`~subscriber.privileges.PrivilegeIndex` of a view's principals and
    grants, built again only when a global object changed.

    Remembers one index, keyed by the identity of the view's global key set, which
    every change of a global object replaces (the set is held, so its id stays
    unique). Safe to share between threads: a race builds an equal index twice.
    """

    def __init__(self, decode: Decode) -> None:
        self._decode = decode
        self._memo: tuple[frozenset[str], PrivilegeIndex] | None = None

    def __call__(self, view: CacheView) -> PrivilegeIndex:
        global_keys = view.by_database.get(GLOBAL, frozenset())
        memo = self._memo
        if memo is not None and memo[0] is global_keys:
            return memo[1]
        objects = [
            self._decode(view.objects[k])
            for k in global_keys
            if k.startswith(AUTHORIZATION_PREFIXES)
        ]
        index = PrivilegeIndex.from_objects(objects)
        self._memo = (global_keys, index)
        return index
