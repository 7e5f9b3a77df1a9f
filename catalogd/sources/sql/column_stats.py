# ruff: noqa: SIM300  (UPPER_CASE schema columns look like constants to ruff: `col == value` is right)
"""Table-level column statistics (``TAB_COL_STATS``) as HMS ``ColumnStatisticsObj`` s.

The answer to ``get_table_statistics_req``, built the way HMS 2.3's
``StatObjectConverter`` fills ``ColumnStatisticsData`` from a row: the stored
``COLUMN_TYPE`` picks the union member; low/high values are set only when
stored; decimals come back as (unscaled two's-complement bytes, scale).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy import select
from sqlalchemy.engine import Connection

import idl
from catalogd.sources.sql import schema as s

__all__ = ["table_column_statistics"]

hms = idl.hive_metastore


# HMS 4 keeps statistics per engine; its Thrift answers (no engine asked) are Hive's.
_ENGINE = "hive"

_LONG_TYPES = ("bigint", "int", "smallint", "tinyint", "timestamp")


def _decimal(text: str | None) -> Any:
    if text is None:
        return None
    value = Decimal(text)
    sign, digits, exponent = value.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    scale = -int(exponent)
    # As Java's BigInteger.toByteArray: the fewest bytes holding the sign bit too.
    length = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return hms.Decimal(unscaled=unscaled.to_bytes(length, "big", signed=True), scale=scale)


def _data(r: Any) -> Any:
    kind = (r.COLUMN_TYPE or "").lower()
    nulls, ndv = r.NUM_NULLS, r.NUM_DISTINCTS
    D = hms.ColumnStatisticsData
    if kind == "boolean":
        return D(
            booleanStats=hms.BooleanColumnStatsData(
                numTrues=r.NUM_TRUES, numFalses=r.NUM_FALSES, numNulls=nulls
            )
        )
    if kind.startswith(("string", "varchar", "char")):
        return D(
            stringStats=hms.StringColumnStatsData(
                maxColLen=r.MAX_COL_LEN, avgColLen=r.AVG_COL_LEN, numNulls=nulls, numDVs=ndv
            )
        )
    if kind == "binary":
        return D(
            binaryStats=hms.BinaryColumnStatsData(
                maxColLen=r.MAX_COL_LEN, avgColLen=r.AVG_COL_LEN, numNulls=nulls
            )
        )
    if kind in _LONG_TYPES:
        return D(
            longStats=hms.LongColumnStatsData(
                lowValue=r.LONG_LOW_VALUE, highValue=r.LONG_HIGH_VALUE, numNulls=nulls, numDVs=ndv
            )
        )
    if kind in ("double", "float"):
        return D(
            doubleStats=hms.DoubleColumnStatsData(
                lowValue=r.DOUBLE_LOW_VALUE,
                highValue=r.DOUBLE_HIGH_VALUE,
                numNulls=nulls,
                numDVs=ndv,
            )
        )
    if kind.startswith("decimal"):
        return D(
            decimalStats=hms.DecimalColumnStatsData(
                lowValue=_decimal(r.BIG_DECIMAL_LOW_VALUE),
                highValue=_decimal(r.BIG_DECIMAL_HIGH_VALUE),
                numNulls=nulls,
                numDVs=ndv,
            )
        )
    if kind == "date":
        low, high = r.LONG_LOW_VALUE, r.LONG_HIGH_VALUE
        return D(
            dateStats=hms.DateColumnStatsData(
                lowValue=hms.Date(daysSinceEpoch=low) if low is not None else None,
                highValue=hms.Date(daysSinceEpoch=high) if high is not None else None,
                numNulls=nulls,
                numDVs=ndv,
            )
        )
    return None


def table_column_statistics(conn: Connection, tbl_id: int, columns: Sequence[str]) -> list[Any]:
    """The ``ColumnStatisticsObj`` s of one table (``TBL_ID``) for ``columns`` it has."""
    c = s.TAB_COL_STATS.c
    wanted = sorted({name.lower() for name in columns})
    if not wanted:
        return []
    layout = s.layout_of(conn)
    where = sa.and_(c.TBL_ID == tbl_id, c.COLUMN_NAME.in_(wanted))
    if layout.generation >= 4:  # statistics per engine: HMS answers with Hive's
        where = sa.and_(where, c.ENGINE == _ENGINE)
    rows = conn.execute(
        select(*layout.columns(s.TAB_COL_STATS)).where(where).order_by(c.COLUMN_NAME)
    )
    result = []
    for r in rows:
        data = _data(r)
        if data is not None:
            result.append(
                hms.ColumnStatisticsObj(
                    colName=r.COLUMN_NAME, colType=r.COLUMN_TYPE, statsData=data
                )
            )
    return result
