# ruff: noqa: SIM300  (UPPER_CASE schema columns look like constants to ruff: `col == value` is right)
"""Partitions from the HMS backing database, read set by set.

:func:`read_batch` is the one way partitions are read: every partition matching a
``PARTITIONS`` predicate, with its key values, parameters and storage descriptor, in
about ten queries whatever the number of partitions. The predicates say which:
:func:`by_names` (named partitions of one table), :func:`in_range` (a ``PART_ID``
range of one table: keyset paging and the ranges of :func:`partition_ranges`) or
several tables at once (:func:`table_owners` then ``TBL_ID IN ...``). Counting and
naming partitions are one query each.

Functions over a connection the caller holds
(:class:`~catalogd.sources.sql.SqlSource` opens one per batch, so a long stream
holds no connection between batches, and maps driver errors).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import select
from sqlalchemy.engine import Connection

import idl
from catalogd.sources.sql import schema as s
from catalogd.sources.sql.structs import bounds_of, kept, member, params_of, storage_descriptors

__all__ = [
    "by_names",
    "in_range",
    "partition_counts",
    "partition_names",
    "partition_ranges",
    "read_batch",
    "table_owners",
]

hms = idl.hive_metastore

# (TBL_ID -> (database, table) as stored): whose partitions a batch reads.
Owners = dict[int, tuple[str, str]]


def partition_names(conn: Connection, tbl_id: int) -> list[str]:
    """The ``PART_NAME`` s (``k=v/k2=v2``) of one table, sorted."""
    p = s.PARTITIONS.c
    rows = conn.execute(select(p.PART_NAME).where(p.TBL_ID == tbl_id).order_by(p.PART_NAME))
    return list(rows.scalars())


def partition_ranges(conn: Connection, tbl_id: int, size: int) -> list[tuple[int, int | None]]:
    """``PART_ID`` ranges ``[first, next first)`` (the last one open: None) covering the
    table's partitions with at most ``size`` partitions each; one query."""
    p = s.PARTITIONS.c
    numbered = (
        select(p.PART_ID, sa.func.row_number().over(order_by=p.PART_ID).label("n"))
        .where(p.TBL_ID == tbl_id)
        .subquery()
    )
    firsts = list(
        conn.execute(
            select(numbered.c.PART_ID)
            .where((numbered.c.n - 1) % size == 0)
            .order_by(numbered.c.PART_ID)
        ).scalars()
    )
    return [(first, nxt) for first, nxt in zip(firsts, [*firsts[1:], None], strict=True)]


def partition_counts(conn: Connection, db: str, tables: Sequence[str]) -> dict[str, int]:
    """``{table: number of partitions}`` (lower-case names) for the named tables of
    ``db`` that exist; 0 for unpartitioned tables and views; one query."""
    t, p = s.TBLS.c, s.PARTITIONS.c
    tables_of_db, named = _named_tables(conn, db, tables)
    rows = conn.execute(
        select(t.TBL_NAME, sa.func.count(p.PART_ID))
        .select_from(tables_of_db.outerjoin(s.PARTITIONS, p.TBL_ID == t.TBL_ID))
        .where(named)
        .group_by(t.TBL_NAME)
    ).all()
    return {name.lower(): int(count) for name, count in rows}


def table_owners(conn: Connection, db: str, tables: Sequence[str]) -> Owners:
    """``TBL_ID -> (database, table)`` of the named tables of ``db`` that exist."""
    t, d = s.TBLS.c, s.layout_of(conn).dbs.c
    tables_of_db, named = _named_tables(conn, db, tables)
    refs = conn.execute(
        select(t.TBL_ID, d.NAME, t.TBL_NAME).select_from(tables_of_db).where(named)
    ).all()
    return {int(tbl_id): (db_name, tbl_name) for tbl_id, db_name, tbl_name in refs}


def by_names(tbl_id: int, names: Sequence[str]) -> Any:
    """The predicate selecting the partitions of table ``tbl_id`` named ``names``."""
    p = s.PARTITIONS.c
    return sa.and_(p.TBL_ID == tbl_id, p.PART_NAME.in_(list(names)))


def in_range(tbl_id: int, first: int | None, end: int | None) -> Any:
    """The predicate selecting the partitions of table ``tbl_id`` with
    ``first <= PART_ID < end`` (None: no bound on that side)."""
    p = s.PARTITIONS.c
    where = p.TBL_ID == tbl_id
    if end is not None:
        where = sa.and_(where, p.PART_ID < end)
    if first is not None:
        where = sa.and_(where, p.PART_ID >= first)
    return where


def read_batch(
    conn: Connection,
    where: Any,
    owners: Owners,
    *,
    limit: int | None = None,
    tbl_id: int | None = None,
) -> tuple[list[Any], int]:
    """Every ``Partition`` matching ``where`` (a PARTITIONS predicate on tables among
    ``owners``), in ``PART_ID`` order, in 10 queries, and the last ``PART_ID`` read (0
    when none); with ``limit`` (and ``tbl_id``, the one table), only the first
    ``limit`` of them by ``PART_ID``.

    Built as HMS's direct-SQL partition reads build them for the schema's version
    (3.x: the catalog; 4.x: the write id, -1 when not positive)."""
    layout = s.layout_of(conn)
    p, kv = s.PARTITIONS.c, s.PARTITION_KEY_VALS.c
    write_id = p.WRITE_ID if layout.generation >= 4 else sa.null()
    query = select(p.PART_ID, p.CREATE_TIME, p.LAST_ACCESS_TIME, p.SD_ID, p.TBL_ID, write_id).where(
        where
    )
    rows = conn.execute(query.order_by(p.PART_ID).limit(limit)).all()
    if not rows:
        return [], 0
    if limit is not None:
        where = sa.and_(p.TBL_ID == tbl_id, p.PART_ID.between(rows[0][0], rows[-1][0]))
    ids = select(p.PART_ID).where(where).scalar_subquery()
    part_range = (rows[0][0], rows[-1][0])  # rows are in PART_ID order
    part_ids = {r[0] for r in rows}
    values: dict[int, list[str]] = defaultdict(list)
    for part_id, value in kept(
        conn.execute(
            select(kv.PART_ID, kv.PART_KEY_VAL)
            .where(member(kv.PART_ID, ids, part_range, part_ids))
            .order_by(kv.PART_ID, kv.INTEGER_IDX)
        ).all(),
        part_ids,
    ):
        values[part_id].append(value)
    params = params_of(conn, s.PARTITION_PARAMS, ids, part_range, part_ids)
    sd_ids = select(p.SD_ID).where(where).scalar_subquery()
    sd_known = {r[3] for r in rows if r[3] is not None}
    sds = storage_descriptors(conn, sd_ids, bounds_of(r[3] for r in rows), sd_known)
    new_partition, values_get, params_get, sds_get = (
        hms.Partition,
        values.get,
        params.get,
        sds.get,
    )
    partitions = [
        new_partition(
            values=values_get(part_id) or [],
            dbName=owners[tbl][0],
            tableName=owners[tbl][1],
            createTime=create_time,
            lastAccessTime=last_access_time,
            sd=sds_get(sd_id),
            parameters=params_get(part_id) or {},
        )
        for part_id, create_time, last_access_time, sd_id, tbl, _ in rows
    ]
    if layout.generation >= 3:
        for partition in partitions:
            partition.catName = layout.catalog
    if layout.generation >= 4:
        for partition, row in zip(partitions, rows, strict=True):
            partition.writeId = row[5] if row[5] is not None and row[5] > 0 else -1
    return partitions, rows[-1][0]


def _named_tables(conn: Connection, db: str, tables: Sequence[str]) -> tuple[Any, Any]:
    """``TBLS`` joined with ``DBS``, and the predicate selecting ``tables`` of ``db``."""
    dbs = s.layout_of(conn).dbs
    t, d = s.TBLS.c, dbs.c
    wanted = sorted({n.lower() for n in tables})
    return s.TBLS.join(dbs, t.DB_ID == d.DB_ID), sa.and_(
        d.NAME == db.lower(), t.TBL_NAME.in_(wanted)
    )
