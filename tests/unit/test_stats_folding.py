"""The pure parts of the statistics job: the scan's SQL per column and the folding of
its rows into partition and table figures (no Spark)."""

from __future__ import annotations

import pytest

from catalogd.stats import aggregates, folding
from catalogd.stats.aggregates import prefix
from subscriber.protocol.hms_partition import NULL_PARTITION_VALUE

pytestmark = pytest.mark.timeout(30)


def test_filter_sql_binds_values_and_matches_the_null_partition_with_is_null() -> None:
    where, args = aggregates.filter_sql([{"p": "a'b", "q": NULL_PARTITION_VALUE}, {"p": "c"}])
    assert (
        where == " WHERE (CAST(`p` AS STRING) = :v0 AND `q` IS NULL) OR (CAST(`p` AS STRING) = :v1)"
    )
    assert args == {"v0": "a'b", "v1": "c"}
    assert aggregates.filter_sql([]) == ("", {})


def test_columns_are_sketched_as_is_or_by_hash_and_strings_get_lengths() -> None:
    p = prefix("s")
    assert aggregates.column_inputs("s", "StringType") == [
        f"CASE WHEN `s` IS NOT NULL THEN xxhash64(`s`) END AS {p}h",
        f"length(`s`) AS {p}l",
    ]
    assert [a for _, a in aggregates.column_aggregates("s", "StringType")] == [
        p + "nn",
        p + "hll",
        p + "tl",
        p + "ml",
    ]
    q = prefix("ts")
    assert aggregates.column_inputs("ts", "TimestampType") == [f"unix_micros(`ts`) AS {q}v"]
    booleans = {a for _, a in aggregates.column_aggregates("b", "BooleanType")}
    assert prefix("b") + "hll" not in booleans  # two values: counted, not sketched


def _row(part: str | None, rows: int, nn: int, lo: int, hi: int, hll: int) -> dict[str, object]:
    p = prefix("x")
    return {"s0": part, "k0": part, "rows": rows, p + "nn": nn, p + "lo": lo, p + "hi": hi,
            p + "hll": hll}  # fmt: skip


def test_rows_fold_into_partitions_and_a_table_level() -> None:
    data, key_cols = [("x", "LongType")], [(0, "p", "StringType")]
    rows = [_row("a", 10, 8, 1, 5, 4), _row(None, 5, 5, -3, 2, 5)]
    parts = [folding.partition(r, ["p"], data, key_cols) for r in rows]
    assert [p.name for p in parts] == ["p=a", f"p={NULL_PARTITION_VALUE}"]
    assert parts[1].columns["p"].nulls == 5 and parts[0].columns["p"].max_len == 1
    table = folding.fold(parts, [("x", "LongType"), ("p", "StringType")], {prefix("x") + "hll": 7})
    x = table.columns["x"]
    assert (table.rows, x.nulls, x.low, x.high, x.distinct) == (15, 2, -3, 5, 7)
    assert table.columns["p"].total_len == 10
