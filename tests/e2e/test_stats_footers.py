"""The stats job's Parquet-footer figures against Spark's ``ANALYZE``, where the
footers are exact and where they are not.

The job takes null counts and integer/date/decimal min/max from the files'
footers (:mod:`catalogd.stats.footers`) and aggregates the rest over the rows;
where a footer does not give a figure exactly it must aggregate that figure
too. Twin tables get the same rows in the same files: Spark's own ``ANALYZE
TABLE ... FOR ALL COLUMNS`` on one, the job on the other; every figure must
match (distinct counts within both errors), timestamp min/max byte for byte
(aggregated over the rows, in another session time zone than ``ANALYZE``'s:
INT96 footers have no order).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.stats import compute, footers
from catalogd.stats.aggregates import NDV_RSE
from catalogd.stats.job import run_job

pytestmark = [pytest.mark.hms, pytest.mark.spark, pytest.mark.timeout(600)]

SPARK = "spark.sql.statistics."
SCHEMA = (
    "id BIGINT, small TINYINT, dec DECIMAL(10,2), big DECIMAL(30,2), old DATE, x DOUBLE, "
    "s STRING, b BINARY, t TIMESTAMP"
)
COLUMNS = ["id", "small", "dec", "big", "old", "x", "s", "b", "t", "added", "p"]
JOB_TIME_ZONE = "Asia/Kolkata"  # ANALYZE runs in the session default (UTC here)
# t: before and after 1970 with microseconds; in partition c (ids 600-799) also
# the years -1 and 10000, which ANALYZE writes as "-0001-..." and "+10000-...".
FAR_PAST, FAR_FUTURE = -62167219200000001, 253402300800000000  # micros since 1970


def _rows(start: int, date: str) -> str:
    return (
        f"SELECT id, CAST(id % 100 AS TINYINT), CAST(id / 8 AS DECIMAL(10,2)), "
        f"CAST(id * 1000 AS DECIMAL(30,2)), date_add(DATE'{date}', CAST(id % 9 AS INT)), "
        "CASE id % 5 WHEN 0 THEN CAST('NaN' AS DOUBLE) WHEN 1 THEN -0.0 WHEN 2 THEN NULL "
        "ELSE id / 3 END, IF(id % 4 = 0, NULL, concat('é', CAST(id % 13 AS STRING))), "
        "IF(id % 6 = 0, NULL, CAST(CAST(id % 7 AS STRING) AS BINARY)), "
        f"CASE id WHEN 650 THEN timestamp_micros({FAR_PAST}) "
        f"WHEN 750 THEN timestamp_micros({FAR_FUTURE}) "
        "ELSE timestamp_micros((id - 300) * 98765432101) END "
        f"FROM range({start}, {start + 200})"
    )


def _insert(spark: Any, table: str, partition: str, select: str, conf: dict[str, str]) -> None:
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        spark.sql(f"INSERT INTO {table} PARTITION (p = '{partition}') {select}")
    finally:
        for key in conf:
            spark.conf.unset(key)


@pytest.fixture(scope="module")
def edge_db(spark: Any) -> Iterator[str]:
    """Twin Parquet tables, partitions ``a``-``d``: ``a`` plain; ``b`` in Spark's
    legacy format (decimals as fixed-length bytes: no exact min/max in the
    footers); ``c`` with dates before 1582 (no min/max taken from footers);
    ``d`` written after a column was added (the older files lack it)."""
    db = f"sf_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE DATABASE {db}")
    legacy = {"spark.sql.parquet.writeLegacyFormat": "true"}
    ancient = {"spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED"}
    for name in ("ours", "theirs"):
        table = f"{db}.{name}"
        spark.sql(f"CREATE TABLE {table} ({SCHEMA}) PARTITIONED BY (p STRING) STORED AS PARQUET")
        _insert(spark, table, "a", _rows(0, "2024-01-01"), {})
        _insert(spark, table, "a", _rows(200, "2024-02-01"), {})  # a second file
        _insert(spark, table, "b", _rows(400, "2024-03-01"), legacy)
        _insert(spark, table, "c", _rows(600, "1500-01-01"), ancient)
        spark.sql(f"ALTER TABLE {table} ADD COLUMNS (added INT)")
        _insert(
            spark,
            table,
            "d",
            f"SELECT *, CAST(id % 3 AS INT) FROM ({_rows(800, '2024-05-01')})",
            {},
        )
    for kind, stored in (("text", "TEXTFILE"), ("flat", "PARQUET")):  # unpartitioned
        for name in (f"{kind}_ours", f"{kind}_theirs"):
            spark.sql(f"CREATE TABLE {db}.{name} ({SCHEMA}) STORED AS {stored}")
            spark.sql(f"INSERT INTO {db}.{name} {_rows(0, '2024-01-01')}")
            spark.sql(f"INSERT INTO {db}.{name} {_rows(200, '2024-02-01')}")
    for name in ("theirs", "text_theirs", "flat_theirs"):
        spark.sql(f"ANALYZE TABLE {db}.{name} COMPUTE STATISTICS FOR ALL COLUMNS")
    yield db
    spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


def _params(hms: EmbeddedMetastore, db: str, table: str) -> dict[str, str]:
    with MetastoreClient(hms.uri) as client:
        return dict(client.get_table(db, table).parameters)


def _ndv_close(ours: int, theirs: int) -> bool:
    return abs(ours - theirs) <= max(2, 3 * (NDV_RSE + 0.05) * theirs)


def _assert_like_analyze(ours: dict[str, str], theirs: dict[str, str], columns: list[str]) -> None:
    assert ours[SPARK + "numRows"] == theirs[SPARK + "numRows"]
    for col in columns:
        p = f"{SPARK}colStats.{col}."
        for key in ("nullCount", "min", "max", "avgLen", "maxLen", "version"):
            assert ours.get(p + key) == theirs.get(p + key), (col, key)
        assert _ndv_close(int(ours[p + "distinctCount"]), int(theirs[p + "distinctCount"])), col


def _run_job(spark: Any, hms: EmbeddedMetastore, db: str, table: str, **kwargs: Any) -> Any:
    spark.conf.set("spark.sql.session.timeZone", JOB_TIME_ZONE)
    try:
        with MetastoreClient(hms.uri) as client:
            return run_job(spark, client, db, table, **kwargs)
    finally:
        spark.conf.unset("spark.sql.session.timeZone")


def test_footer_figures_and_fallbacks_equal_spark_analyze(
    spark: Any, hms: EmbeddedMetastore, edge_db: str
) -> None:
    report = _run_job(spark, hms, edge_db, "ours", footers_min_bytes=0)
    ours = _params(hms, edge_db, "ours")
    _assert_like_analyze(ours, _params(hms, edge_db, "theirs"), COLUMNS)
    t = f"{SPARK}colStats.t."
    assert (ours[t + "min"], ours[t + "max"]) == (
        "-0001-12-31 23:59:59.999999",
        "+10000-01-01 00:00:00.000000",
    )
    # Exact in every footer: taken from them. Not exact in some (legacy decimals,
    # dates before 1582): aggregated over the rows instead.
    taken = set(report.result.footer_columns)
    assert {"id", "small", "big", "x", "s", "b", "t", "added"} <= taken
    assert not {"dec", "old"} & taken
    by_name = {p.name: p for p in report.result.partitions}
    assert by_name["p=a"].columns["added"].nulls == 400  # files without the column
    assert by_name["p=d"].columns["added"].nulls == 0
    with MetastoreClient(hms.uri) as client:
        part = client.get_partitions_by_names(edge_db, "ours", ["p=a"])[0]
    assert part.parameters["numRows"] == "400" and part.parameters["numFiles"] == "2"


@pytest.mark.parametrize("kind", ["flat", "text"])
def test_unpartitioned_tables(spark: Any, hms: EmbeddedMetastore, edge_db: str, kind: str) -> None:
    report = _run_job(spark, hms, edge_db, f"{kind}_ours", footers_min_bytes=0)
    # Parquet: every column's nulls and min/max from the footers (all exact
    # here; doubles' and timestamps' min/max over the rows); text: everything
    # over the rows.
    taken = {"id", "small", "dec", "big", "old", "x", "s", "b", "t"} if kind == "flat" else set()
    assert set(report.result.footer_columns) == taken
    assert report.result.table_level.rows == 400 and report.result.table_level.files == 2
    columns = [c for c in COLUMNS if c not in ("added", "p")]
    ours = _params(hms, edge_db, f"{kind}_ours")
    _assert_like_analyze(ours, _params(hms, edge_db, f"{kind}_theirs"), columns)
    t = f"{SPARK}colStats.t."  # ids 0 and 399
    assert (ours[t + "min"], ours[t + "max"]) == (
        "1969-01-23 01:32:50.369700",
        "1970-04-24 04:02:57.777999",
    )


def test_small_tables_are_aggregated_without_footers(
    spark: Any, hms: EmbeddedMetastore, edge_db: str
) -> None:
    # HMS knows the table's size (the job above wrote it): below the default
    # threshold, reading footers would cost a short scan more than it saves.
    with MetastoreClient(hms.uri) as client:
        report = run_job(spark, client, edge_db, "flat_ours")
    assert report.result.footer_columns == () and report.footer_s == 0.0
    assert report.result.table_level.rows == 400


def test_footers_of_other_files_than_the_scan_read_are_not_used(spark: Any, edge_db: str) -> None:
    # As if files changed between the scan's listing and the job's: the footers'
    # row counts differ from the scan's, so every deferred figure is aggregated.
    everything = compute.compute(spark, edge_db, "ours", ["p"])
    plan = compute.plan(spark, edge_db, "ours", ["p"], footers=True)
    assert plan.deferred
    rows = compute.scan(plan)
    stale = {f"p={v}": footers.Figures(rows=1, columns={}) for v in ("a", "b", "c", "d")}
    for figures in (stale, None):
        again = compute.finish(spark, plan, [dict(r) for r in rows], figures)
        assert again.footer_columns == ()
        # repr: x's maximum is NaN, which equals nothing.
        assert repr(again.table_level) == repr(everything.table_level)
        assert repr(again.partitions) == repr(everything.partitions)
