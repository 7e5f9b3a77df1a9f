"""Cache pools and cache marks: their values, checks, and catalog objects (pure).

Names are normalized here once: database, table and pool names lower-cased,
partition names in HMS's canonical ``k=v/k2=v2`` form (columns lower-cased,
values escaped as Hive escapes them). The state store persists these values.

catalogd manages HDFS-style cache pools itself (there is no HDFS here): pools
live in the state store and are broadcast as ``HDFS_CACHE_POOL`` objects;
tables and partitions marked cached carry ``is_marked_cached`` and their pool
the way Impala's do, plus a summary on the table header (``cache_pool_name``,
``cached_partitions``) so subscribers list cached tables without scanning
partitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import idl
from subscriber.protocol import codec
from subscriber.protocol.errors import InvalidRequestError
from subscriber.protocol.keys import cache_pool_key, make_partition_name, parse_partition_name

_MAX_NAME = 255
_MAX_LIMIT = 2**63 - 1


def check_pool_name(name: str) -> str:
    """A pool name, lower-cased.

    Raises:
        InvalidRequestError: not a string, empty, longer than 255 characters,
            or containing whitespace or control characters.
    """
    if not isinstance(name, str) or not name:
        raise InvalidRequestError(f"a cache pool needs a non-empty name, not {name!r}")
    if len(name) > _MAX_NAME or any(c.isspace() or not c.isprintable() for c in name):
        raise InvalidRequestError(
            f"invalid cache pool name {name!r}: at most {_MAX_NAME} characters, "
            "no whitespace or control characters"
        )
    return name.lower()


def check_limit(limit_bytes: int | None) -> int | None:
    """A pool limit in bytes (None: unlimited).

    Raises:
        InvalidRequestError: not an integer, negative, or beyond 2**63 - 1.
    """
    if limit_bytes is None:
        return None
    if isinstance(limit_bytes, bool) or not isinstance(limit_bytes, int):
        raise InvalidRequestError(f"a pool limit is a number of bytes, not {limit_bytes!r}")
    if not 0 <= limit_bytes <= _MAX_LIMIT:
        raise InvalidRequestError(
            f"a pool limit must be between 0 and {_MAX_LIMIT} bytes, not {limit_bytes}"
        )
    return limit_bytes


def _table_part(text: str, what: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidRequestError(f"a cache mark needs a non-empty {what} name, not {text!r}")
    return text.strip().lower()


@dataclass(frozen=True, slots=True)
class CachePool:
    """An HDFS-style cache pool managed by catalogd."""

    name: str
    owner: str | None = None
    limit_bytes: int | None = None  # None: unlimited

    @classmethod
    def from_row(cls, row: Any) -> CachePool:
        limit = row.limit_bytes
        return cls(row.name, row.owner, None if limit is None else int(limit))


@dataclass(frozen=True, slots=True)
class CacheMark:
    """A table (``partition`` None) or one partition marked cached in ``pool``."""

    db: str
    table: str
    partition: str | None
    pool: str

    @classmethod
    def of(cls, db: str, table: str, partition: str | None, pool: str) -> CacheMark:
        """Normalize and check a mark's names.

        Raises:
            InvalidRequestError: an empty db or table name, or a partition
                name not of the form ``k=v/k2=v2``.
        """
        if partition is not None:
            pairs = parse_partition_name(partition)
            partition = make_partition_name([k for k, _ in pairs], [v for _, v in pairs])
        return cls(_table_part(db, "database"), _table_part(table, "table"), partition, pool)

    @classmethod
    def from_row(cls, row: Any) -> CacheMark:
        return cls(row.db, row.tbl, row.partition_name or None, row.pool)

    @property
    def display_name(self) -> str:
        """``db.table`` or ``db.table (k=v/k2=v2)`` for messages."""
        name = f"{self.db}.{self.table}"
        return name if self.partition is None else f"{name} ({self.partition})"

    def sort_key(self) -> tuple[str, str, str]:
        return self.db, self.table, self.partition or ""


def describe_marks(marks: list[CacheMark], named: int) -> str:
    """``"3 cached tables or partitions: a.b, a.c, a.c (k=v)"`` naming at most ``named`` of them."""
    names = [m.display_name for m in sorted(marks, key=CacheMark.sort_key)]
    text = ", ".join(names[:named])
    if len(names) > named:
        text += f", and {len(names) - named} more"
    noun = "cached table or partition" if len(names) == 1 else "cached tables or partitions"
    return f"{len(names)} {noun}: {text}"


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
