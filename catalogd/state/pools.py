"""Cache pools and cache marks in the state database.

Each function runs inside a connection or transaction the caller holds
(:class:`~catalogd.state.store.StateStore`, which checks names and limits first,
fences writes and maps driver errors); a write's checks and changes share that one
transaction. Pools and marks are the core's values (:mod:`catalogd.core.cache_pools`).
Used only by :mod:`catalogd.state.store`.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from catalogd.core.cache_pools import CacheMark, CachePool, describe_marks
from catalogd.state.schema import cache_mark, cache_pool, mark_id
from subscriber.protocol.errors import ConflictError, NotFoundError

__all__ = [
    "add_pool",
    "alter_pool",
    "list_cached",
    "list_pools",
    "mark_cached",
    "remove_pool",
    "unmark_cached",
]

# How many of a pool's users a CONFLICT error names.
_NAMED_USERS = 10


def add_pool(conn: sa.Connection, pool: CachePool) -> None:
    """Insert ``pool``. Raises ConflictError: a pool of that name exists."""
    if _pool_row(conn, pool.name) is not None:
        raise ConflictError(f"cache pool {pool.name!r} already exists")
    try:
        conn.execute(
            cache_pool.insert().values(
                name=pool.name, owner=pool.owner, limit_bytes=pool.limit_bytes
            )
        )
    except sa_exc.IntegrityError as exc:  # a concurrent add won the race
        raise ConflictError(f"cache pool {pool.name!r} already exists") from exc


def alter_pool(conn: sa.Connection, key: str, changes: dict[str, Any]) -> CachePool:
    """Apply ``changes`` (column -> value) to pool ``key``; the pool after.
    Raises NotFoundError: no such pool."""
    _existing(conn, key)
    if changes:
        conn.execute(cache_pool.update().where(cache_pool.c.name == key).values(changes))
    return _existing(conn, key)


def remove_pool(conn: sa.Connection, key: str) -> CachePool:
    """Delete pool ``key``; what it was.

    Raises:
        NotFoundError: no such pool.
        ConflictError: tables or partitions are still cached in it (named).
    """
    pool = _existing(conn, key)
    users = [
        CacheMark.from_row(r)
        for r in conn.execute(sa.select(cache_mark).where(cache_mark.c.pool == key))
    ]
    if users:
        raise ConflictError(
            f"cache pool {key!r} is in use by {describe_marks(users, _NAMED_USERS)}; "
            "uncache them first"
        )
    conn.execute(cache_pool.delete().where(cache_pool.c.name == key))
    return pool


def list_pools(conn: sa.Connection) -> list[CachePool]:
    """Every pool, sorted by name."""
    pools = [CachePool.from_row(r) for r in conn.execute(sa.select(cache_pool))]
    return sorted(pools, key=lambda p: p.name)


def mark_cached(conn: sa.Connection, mark: CacheMark) -> None:
    """Insert ``mark``, or move the existing mark of its table or partition to its pool.
    Raises NotFoundError: no such pool."""
    _existing(conn, mark.pool)
    ident = mark_id(mark.db, mark.table, mark.partition)
    updated = conn.execute(
        cache_mark.update().where(cache_mark.c.id == ident).values(pool=mark.pool)
    ).rowcount
    if not updated:
        conn.execute(
            cache_mark.insert().values(
                id=ident,
                db=mark.db,
                tbl=mark.table,
                partition_name=mark.partition or "",
                pool=mark.pool,
            )
        )


def unmark_cached(conn: sa.Connection, probe: CacheMark) -> list[CacheMark]:
    """Delete the marks of ``probe``'s table (all of them when its partition is None,
    else that partition's); the removed ones, sorted."""
    where = sa.and_(cache_mark.c.db == probe.db, cache_mark.c.tbl == probe.table)
    if probe.partition is not None:
        where = cache_mark.c.id == mark_id(probe.db, probe.table, probe.partition)
    removed = [CacheMark.from_row(r) for r in conn.execute(sa.select(cache_mark).where(where))]
    if removed:
        conn.execute(cache_mark.delete().where(where))
    return sorted(removed, key=CacheMark.sort_key)


def list_cached(conn: sa.Connection, key: str | None) -> list[CacheMark]:
    """Every mark (of pool ``key``), sorted by db, table, partition.
    Raises NotFoundError: ``key`` names no pool."""
    query = sa.select(cache_mark)
    if key is not None:
        _existing(conn, key)
        query = query.where(cache_mark.c.pool == key)
    marks = [CacheMark.from_row(r) for r in conn.execute(query)]
    # Sorted here: collations differ between backends.
    return sorted(marks, key=CacheMark.sort_key)


def _existing(conn: sa.Connection, key: str) -> CachePool:
    row = _pool_row(conn, key)
    if row is None:
        raise NotFoundError(f"cache pool {key!r} does not exist")
    return CachePool.from_row(row)


def _pool_row(conn: sa.Connection, name: str) -> sa.Row[Any] | None:
    return conn.execute(sa.select(cache_pool).where(cache_pool.c.name == name)).first()
