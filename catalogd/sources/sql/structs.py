# ruff: noqa: SIM300  (UPPER_CASE schema columns look like constants to ruff: `col == value` is right)
"""HMS Thrift structs assembled from backing-database rows, set by set.

Each function here runs a fixed number of queries for a whole *set* of objects
(never one per object): the set is given as a SQLAlchemy ``Select`` of ids
(storage descriptor ids, partition ids), used as a sub-query, so the database
does the join and no id list crosses the wire.

The structs are built the way HMS 2.3 builds them for its Thrift answers
(``ObjectStore.convertTo*`` and ``MetaStoreDirectSql``): lists ordered by
``INTEGER_IDX``, empty maps and lists rather than None, enums from their names,
privileges left unset. Maps are filled in key order (HMS answers in Java
``HashMap`` order; :mod:`catalogd.conversion.objects` sorts maps, so both give
the same bytes).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Set as AbstractSet
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Table, select
from sqlalchemy.engine import Connection

import idl
from catalogd.sources.sql import schema as s

hms = idl.hive_metastore

__all__ = [
    "as_bool",
    "bounds_of",
    "member",
    "params_of",
    "principal_type",
    "storage_descriptors",
]


def as_bool(value: Any) -> bool:
    """A database boolean as Python: PostgreSQL bool, MySQL BIT(1) bytes, 0/1, 'Y'/'N'."""
    if value is True or value is False:
        return value
    if isinstance(value, bytes | bytearray):
        return any(value)
    if isinstance(value, str):
        return value.strip().upper() in ("Y", "1", "T", "TRUE")
    return bool(value)


def principal_type(name: str | None) -> int | None:
    """``PrincipalType`` value of a stored name (``USER``/``ROLE``/``GROUP``), or None."""
    return getattr(hms.PrincipalType, name, None) if name else None


def member(
    column: Any,
    ids: Any,
    bounds: tuple[int, int] | None = None,
    known: AbstractSet[int] | None = None,
) -> Any:
    """``column IN (ids)``, and ``column BETWEEN bounds`` when the caller knows them: a
    range the planner can use on the child table's primary key. Without it PostgreSQL
    may hash-join a whole parameter table for each batch (measured: a 440k-row parallel
    sequential scan per 5,000 partitions of a 100,000-partition table).

    When the caller also has the ids themselves (``known``) and they fill at least half
    of ``bounds`` (as ids written together do), the range alone: a plain index range
    scan, where the semi-join with ``ids`` cost PostgreSQL about as much again (measured
    per 5,000 partitions: parameters 12 ms, SerDe parameters 9 ms). The caller then
    drops the rows of ids not in ``known`` (:func:`kept`)."""
    if bounds and known is not None and bounds[1] - bounds[0] + 1 <= 2 * len(known):
        return column.between(*bounds)
    condition = column.in_(ids)
    return sa.and_(column.between(*bounds), condition) if bounds else condition


def kept(rows: Any, known: AbstractSet[int] | None) -> Any:
    """The rows (first column: an id) whose id is in ``known`` (all of them without it)."""
    return rows if known is None else [r for r in rows if r[0] in known]


def bounds_of(ids: Any) -> tuple[int, int] | None:
    """(smallest, largest) of the ids that are not None; None if there are none."""
    known = [i for i in ids if i is not None]
    return (min(known), max(known)) if known else None


def params_of(
    conn: Connection,
    table: Table,
    owner_ids: Any,
    bounds: tuple[int, int] | None = None,
    known: AbstractSet[int] | None = None,
) -> dict[int, dict[str, str]]:
    """``{owner id: {key: value}}`` from a ``*_PARAMS`` table for the owners in ``owner_ids``
    (all within ``bounds``, and ``known`` as values, when given: see :func:`member`).

    Every owner in the result has a dict; owners without parameters are absent
    (callers default to ``{}``).
    """
    owner = table.c[0]
    rows = conn.execute(
        select(owner, table.c.PARAM_KEY, table.c.PARAM_VALUE)
        .where(member(owner, owner_ids, bounds, known))
        .order_by(owner, table.c.PARAM_KEY)
    )
    result: dict[int, dict[str, str]] = defaultdict(dict)
    for oid, key, value in kept(rows.all(), known):
        result[oid][key] = value
    return result


def _column_lists(
    conn: Connection, sd_ids: Any, bounds: tuple[int, int] | None, known: AbstractSet[int] | None
) -> tuple[dict[int, list[str]], dict[int, list[Any]], dict[int, list[str]]]:
    """Bucketing columns, sort columns (``Order``) and skewed column names by ``SD_ID``,
    each in ``INTEGER_IDX`` order: one query for the three (mostly empty) tables, as
    every query costs a loaded table about half a millisecond."""
    b, o, k = s.BUCKETING_COLS.c, s.SORT_COLS.c, s.SKEWED_COL_NAMES.c
    query = sa.union_all(
        select(sa.literal(0), b.SD_ID, b.INTEGER_IDX, b.BUCKET_COL_NAME, sa.literal(0)).where(
            member(b.SD_ID, sd_ids, bounds, known)
        ),
        select(sa.literal(1), o.SD_ID, o.INTEGER_IDX, o.COLUMN_NAME, o.ORDER).where(
            member(o.SD_ID, sd_ids, bounds, known)
        ),
        select(sa.literal(2), k.SD_ID, k.INTEGER_IDX, k.SKEWED_COL_NAME, sa.literal(0)).where(
            member(k.SD_ID, sd_ids, bounds, known)
        ),
    )
    lists: tuple[dict[int, list[Any]], ...] = (
        defaultdict(list),
        defaultdict(list),
        defaultdict(list),
    )
    for kind, sd_id, _, name, order in sorted(conn.execute(query).all(), key=lambda r: r[:3]):
        if known is None or sd_id in known:
            lists[kind][sd_id].append(hms.Order(col=name, order=order) if kind == 1 else name)
    return lists[0], lists[1], lists[2]


def columns_of(conn: Connection, cd_ids: Any) -> dict[int, list[Any]]:
    """``{CD_ID: [FieldSchema, ...]}`` for the column descriptors in ``cd_ids`` (a
    sub-query, or the ids themselves: partitions of a table mostly share one)."""
    c = s.COLUMNS_V2.c
    result: dict[int, list[Any]] = defaultdict(list)
    rows = conn.execute(
        select(c.CD_ID, c.COLUMN_NAME, c.TYPE_NAME, c.COMMENT)
        .where(c.CD_ID.in_(cd_ids))
        .order_by(c.CD_ID, c.INTEGER_IDX)
    )
    for cd_id, name, type_, comment in rows.all():
        result[cd_id].append(hms.FieldSchema(name=name, type=type_, comment=comment))
    return result


def storage_descriptors(
    conn: Connection,
    sd_ids: Any,
    bounds: tuple[int, int] | None = None,
    known: AbstractSet[int] | None = None,
) -> dict[int, Any]:
    """``{SD_ID: StorageDescriptor}`` for the descriptors in ``sd_ids`` (all within
    ``bounds``, and ``known`` as values, when given: see :func:`member`), in 8 queries
    (9 with ``known``).

    Column lists are shared between descriptors of the same column descriptor
    (``CD_ID``), and ``SerDeInfo`` and empty ``SkewedInfo`` structs between equal
    descriptors: treat them as read-only (sharing also makes comparing a
    partition's descriptor with its table's cheap).
    """
    sd, serde = s.SDS.c, s.SERDES.c
    columns = (
        sd.SD_ID,
        sd.CD_ID,
        sd.INPUT_FORMAT,
        sd.IS_COMPRESSED,
        sd.IS_STOREDASSUBDIRECTORIES,
        sd.LOCATION,
        sd.NUM_BUCKETS,
        sd.OUTPUT_FORMAT,
        sd.SERDE_ID,
    )
    serde_ids = select(sd.SERDE_ID).where(member(sd.SD_ID, sd_ids, bounds)).scalar_subquery()
    serde_known: set[int] | None = None
    rows: list[Any]
    if known is None:
        rows = list(
            conn.execute(
                select(*columns, serde.NAME, serde.SLIB)
                .select_from(s.SDS.outerjoin(s.SERDES, sd.SERDE_ID == serde.SERDE_ID))
                .where(member(sd.SD_ID, sd_ids, bounds))
            ).all()
        )
    else:
        # Two index range scans: joined, PostgreSQL hashed the whole SERDES table.
        sd_rows = kept(
            conn.execute(select(*columns).where(member(sd.SD_ID, sd_ids, bounds, known))).all(),
            known,
        )
        serde_known = {r[8] for r in sd_rows if r[8] is not None}
        serde_rows = conn.execute(
            select(serde.SERDE_ID, serde.NAME, serde.SLIB).where(
                member(serde.SERDE_ID, serde_ids, bounds_of(serde_known), serde_known)
            )
        ).all()
        serdes_by_id = {r[0]: (r[1], r[2]) for r in kept(serde_rows, serde_known)}
        no_serde = (None, None)
        rows = [(*r, *serdes_by_id.get(r[8], no_serde)) for r in sd_rows]
    if not rows:
        return {}
    sd_params = params_of(conn, s.SD_PARAMS, sd_ids, bounds, known)
    serde_params = params_of(
        conn, s.SERDE_PARAMS, serde_ids, bounds_of(r[8] for r in rows), serde_known
    )
    cd_known = {r[1] for r in rows if r[1] is not None}
    cols = columns_of(
        conn,
        sorted(cd_known)
        if known is not None and len(cd_known) <= 100
        else select(sd.CD_ID).where(member(sd.SD_ID, sd_ids, bounds)).scalar_subquery(),
    )
    buckets, sorts, skewed_names = _column_lists(conn, sd_ids, bounds, known)
    skewed_values = _skewed_values(conn, sd_ids, bounds, known)
    # Tuples unpacked, lookups bound: this loop runs once per partition of a load.
    result = {}
    cols_get, buckets_get, sorts_get = cols.get, buckets.get, sorts.get
    sd_params_get, serde_params_get = sd_params.get, serde_params.get
    names_get, values_get = skewed_names.get, skewed_values.get
    new_sd, new_serde, new_skewed = hms.StorageDescriptor, hms.SerDeInfo, hms.SkewedInfo
    # Equal SerDe and empty skew structs are shared, as column lists are (read-only).
    serdes: dict[tuple[Any, ...], Any] = {}
    # HMS always sends the location map; our IDL decodes it as {} (idl/generate).
    no_skew = new_skewed(skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={})
    for sd_id, cd_id, input_format, compressed, subdirs, location, buckets_n, output_format, \
            serde_id, serde_name, slib in rows:  # fmt: skip
        serde_info = None
        if serde_id is not None:
            params = serde_params_get(serde_id) or {}
            shape = (serde_name, slib, *sorted(params.items()))
            serde_info = serdes.get(shape)
            if serde_info is None:
                serde_info = serdes[shape] = new_serde(
                    name=serde_name, serializationLib=slib, parameters=params
                )
        skew_names, skew_values = names_get(sd_id), values_get(sd_id)
        result[sd_id] = new_sd(
            cols=(cols_get(cd_id) or []) if cd_id is not None else None,
            location=location,
            inputFormat=input_format,
            outputFormat=output_format,
            compressed=as_bool(compressed),
            numBuckets=buckets_n,
            serdeInfo=serde_info,
            bucketCols=buckets_get(sd_id) or [],
            sortCols=sorts_get(sd_id) or [],
            parameters=sd_params_get(sd_id) or {},
            skewedInfo=new_skewed(
                skewedColNames=skew_names or [],
                skewedColValues=skew_values or [],
                skewedColValueLocationMaps={},
            )
            if skew_names or skew_values
            else no_skew,
            storedAsSubDirectories=as_bool(subdirs),
        )
    return result


def _skewed_values(
    conn: Connection, sd_ids: Any, bounds: tuple[int, int] | None, known: AbstractSet[int] | None
) -> dict[int, list[list[str]]]:
    v, lv = s.SKEWED_VALUES.c, s.SKEWED_STRING_LIST_VALUES.c
    rows = conn.execute(
        select(v.SD_ID_OID, v.INTEGER_IDX, lv.STRING_LIST_VALUE)
        .select_from(
            s.SKEWED_VALUES.join(
                s.SKEWED_STRING_LIST_VALUES, v.STRING_LIST_ID_EID == lv.STRING_LIST_ID
            )
        )
        .where(member(v.SD_ID_OID, sd_ids, bounds, known))
        .order_by(v.SD_ID_OID, v.INTEGER_IDX, lv.INTEGER_IDX)
    )
    lists: dict[int, dict[int, list[str]]] = defaultdict(dict)
    for sd_id, idx, value in kept(rows.all(), known):
        lists[sd_id].setdefault(idx, []).append(value)
    return {sd_id: [by_idx[i] for i in sorted(by_idx)] for sd_id, by_idx in lists.items()}
