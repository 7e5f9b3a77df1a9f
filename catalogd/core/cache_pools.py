"""Cache pools and cache marks as catalog objects (pure conversions).

catalogd manages HDFS-style cache pools itself (there is no HDFS here): pools
live in the state store and are broadcast as ``HDFS_CACHE_POOL`` objects;
tables and partitions marked cached carry ``is_marked_cached`` and their pool
the way Impala's do, plus a summary on the table header (``cache_pool_name``,
``cached_partitions``) so subscribers list cached tables without scanning
partitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import idl
from catalogd.state.values import CacheMark, CachePool
from subscriber.protocol import codec
from subscriber.protocol.keys import cache_pool_key

co = idl.catalog_objects

TableMarks = Mapping[str | None, str]
"""One table's marks: partition name (None for the whole table) -> pool."""


def pool_object(pool: CachePool) -> Any:
    return co.TCatalogObject(
        type=co.TCatalogObjectType.HDFS_CACHE_POOL,
        catalog_version=0,
        cache_pool=co.THdfsCachePool(
            pool_name=pool.name, owner_name=pool.owner, limit=pool.limit_bytes
        ),
    )


def pool_payloads(pools: Iterable[CachePool]) -> dict[str, bytes]:
    return {cache_pool_key(p.name): codec.encode_object(pool_object(p)) for p in pools}


def marks_by_table(marks: Iterable[CacheMark]) -> dict[tuple[str, str], dict[str | None, str]]:
    by_table: dict[tuple[str, str], dict[str | None, str]] = {}
    for mark in marks:
        by_table.setdefault((mark.db, mark.table), {})[mark.partition] = mark.pool
    return by_table


def apply_marks(objects: Mapping[str, Any], marks: TableMarks) -> None:
    """Mark the header and partitions of one table's freshly converted objects."""
    table_pool = marks.get(None)
    partition_marks = {name: pool for name, pool in marks.items() if name is not None}
    for obj in objects.values():
        if obj.table is not None:
            obj.table.cache_pool_name = table_pool
            obj.table.cached_partitions = dict(sorted(partition_marks.items())) or None
            if obj.table.hdfs_table is not None:
                obj.table.hdfs_table.prototype_partition.is_marked_cached = table_pool is not None
        elif obj.hdfs_partition is not None:
            part = obj.hdfs_partition
            pool = partition_marks.get(part.partition_name, table_pool)
            part.is_marked_cached = pool is not None
            part.cache_pool_name = pool
