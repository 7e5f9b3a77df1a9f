"""Column statistics from HMS and from Spark's parameters into TColumnStats, and back out
through the subscriber's typed helper (pure)."""

from __future__ import annotations

import json

import pytest

import idl
from catalogd.conversion import column_stats
from catalogd.conversion import objects as convert
from catalogd.stats.encoding import timestamp_text
from subscriber.stats import partition_stats, table_stats

hms = idl.hive_metastore

pytestmark = pytest.mark.timeout(30)


def _table(params: dict[str, str]) -> object:
    cols = [hms.FieldSchema(name=n, type=t) for n, t in (("id", "bigint"), ("Name", "string"))]
    return hms.Table(
        dbName="d",
        tableName="t",
        sd=hms.StorageDescriptor(cols=cols, location="file:/w/t"),
        partitionKeys=[],
        parameters=params,
        tableType="MANAGED_TABLE",
    )


def test_hms_objects_become_impala_column_stats() -> None:
    long_obj = hms.ColumnStatisticsObj(
        colName="id",
        colType="bigint",
        statsData=hms.ColumnStatisticsData(
            longStats=hms.LongColumnStatsData(lowValue=1, highValue=9, numNulls=2, numDVs=7)
        ),
    )
    str_obj = hms.ColumnStatisticsObj(
        colName="name",
        colType="string",
        statsData=hms.ColumnStatisticsData(
            stringStats=hms.StringColumnStatsData(maxColLen=5, avgColLen=3.5, numNulls=0, numDVs=4)
        ),
    )
    table = _table({"numRows": "10", "totalSize": "100", "numFiles": "2"})
    stats = column_stats.column_stats(table.sd.cols, table.parameters, [long_obj, str_obj])
    _, obj = convert.table_object(table, stats)
    typed = table_stats(obj)
    assert (typed.num_rows, typed.total_bytes, typed.num_files) == (10, 100, 2)
    assert typed.columns["id"].num_distinct == 7
    assert (typed.columns["id"].low, typed.columns["id"].high) == (1, 9)
    assert typed.columns["id"].avg_size == 8.0
    assert typed.columns["name"].avg_size == 3.5
    assert typed.columns["name"].max_size == 5
    assert typed.columns["name"].num_trues is None


def test_spark_parameters_are_read_when_hms_has_none() -> None:
    prefix = column_stats.SPARK_COL_STATS_PREFIX
    params = {
        "numRows": "-1",
        "spark.sql.statistics.numRows": "10",
        f"{prefix}Name.version": "2",
        f"{prefix}Name.distinctCount": "4",
        f"{prefix}Name.nullCount": "1",
        f"{prefix}Name.avgLen": "3",
        f"{prefix}Name.maxLen": "6",
        f"{prefix}id.version": "2",
        f"{prefix}id.distinctCount": "10",
        f"{prefix}id.nullCount": "0",
        f"{prefix}id.min": "1",
        f"{prefix}id.max": "10",
    }
    table = _table(params)
    stats = column_stats.column_stats(table.sd.cols, params)
    typed = table_stats(convert.table_object(table, stats)[1])
    assert typed.num_rows == 10  # numRows=-1 is unknown, Spark's count wins
    assert typed.columns["name"].num_distinct == 4
    assert typed.columns["name"].max_size == 6
    assert (typed.columns["id"].low, typed.columns["id"].high) == (1, 10)


def test_column_stats_accurate_says_when_to_ask_hms() -> None:
    accurate = json.dumps({"BASIC_STATS": "true", "COLUMN_STATS": {"id": "true"}})
    assert column_stats.has_hms_column_stats({"COLUMN_STATS_ACCURATE": accurate})
    assert not column_stats.has_hms_column_stats(
        {"COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}'}
    )
    assert not column_stats.has_hms_column_stats({"COLUMN_STATS_ACCURATE": "true"})
    assert not column_stats.has_hms_column_stats(None)


def test_partition_stats_read_basic_counts() -> None:
    part = idl.catalog_objects.THdfsPartition(
        partition_name="dt=1",
        stats=idl.catalog_objects.TTableStats(num_rows=5, total_file_bytes=50),
        hms_parameters={"numFiles": "3"},
    )
    assert partition_stats(part).num_files == 3
    assert partition_stats(part).num_rows == 5


@pytest.mark.parametrize(
    ("micros", "text"),
    [
        # What Spark 4's ANALYZE wrote for these values (UTC, six fraction digits,
        # proleptic Gregorian, java.time's signs for years beyond 4 digits).
        (1_704_067_200_000_000, "2024-01-01 00:00:00.000000"),
        (28_799_999_999, "1970-01-01 07:59:59.999999"),
        (-62_135_596_800_000_001, "0000-12-31 23:59:59.999999"),
        (-62_167_219_200_000_001, "-0001-12-31 23:59:59.999999"),
        (253_402_300_800_000_000, "+10000-01-01 00:00:00.000000"),
        (-(2**63), "-290308-12-21 19:59:05.224192"),
        (2**63 - 1, "+294247-01-10 04:00:54.775807"),
    ],
)
def test_timestamps_are_written_as_spark_analyze_writes_them(micros: int, text: str) -> None:
    assert timestamp_text(micros) == text
