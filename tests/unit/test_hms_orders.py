"""HMS's row order learnt from its answers (subscriber/metastore/orders.py): pure rules.

Several rows are forwarded once and learnt from HMS's reply; the same rows at the
same versions are then arranged in that order; a new version, a row more or fewer,
a reply with other rows, an error reply or garbage teach nothing; the memo is bounded.
"""

from __future__ import annotations

from typing import Any

import pytest

import idl
from subscriber.metastore import orders, replies
from subscriber.metastore.orders import RowOrders
from subscriber.metastore.shapes import Forward

hms = idl.hive_metastore
svc = hms.ThriftHiveMetastore


def _tables_reply(*names: str) -> bytes:
    tables = [hms.Table(tableName=n, dbName="d") for n in names]
    return replies.result(
        "get_table_objects_by_name", 1, svc.get_table_objects_by_name_result(success=tables)
    )


def _rows(**versions: int) -> dict[str, tuple[int, str]]:
    return {name: (version, f"<{name}>") for name, version in versions.items()}


def _learn(memo: RowOrders, rows: dict[str, tuple[int, Any]], reply: bytes) -> None:
    with pytest.raises(Forward) as raised:
        memo.arrange(("tables", "d"), rows, orders.table_names)
    assert raised.value.learn is not None
    raised.value.learn("get_table_objects_by_name", reply)


def test_one_row_or_none_needs_no_order() -> None:
    memo = RowOrders()
    assert memo.arrange("s", {}, orders.table_names) == []
    assert memo.arrange("s", _rows(a=1), orders.table_names) == ["<a>"]


def test_several_rows_are_forwarded_once_then_arranged_in_hms_order() -> None:
    memo = RowOrders()
    rows = _rows(a=1, b=2, c=3)
    _learn(memo, rows, _tables_reply("c", "a", "b"))
    assert memo.learnt == 1
    assert memo.arrange(("tables", "d"), rows, orders.table_names) == ["<c>", "<a>", "<b>"]
    # other scope: not learnt
    with pytest.raises(Forward):
        memo.arrange(("tables", "e"), rows, orders.table_names)


@pytest.mark.parametrize(
    "changed",
    [_rows(a=1, b=2, c=4), _rows(a=1, b=2), _rows(a=1, b=2, c=3, d=5)],
    ids=["a new version", "a row fewer", "a row more"],
)
def test_any_change_of_the_rows_is_learnt_again(changed: dict[str, tuple[int, str]]) -> None:
    memo = RowOrders()
    _learn(memo, _rows(a=1, b=2, c=3), _tables_reply("c", "a", "b"))
    with pytest.raises(Forward):
        memo.arrange(("tables", "d"), changed, orders.table_names)


@pytest.mark.parametrize(
    "reply",
    [
        _tables_reply("c", "a"),  # HMS has fewer: the cache is behind
        _tables_reply("c", "a", "b", "z"),  # HMS has more
        _tables_reply("c", "a", "a"),  # a duplicate
        replies.exception("get_table_objects_by_name", 1, hms.MetaException(message="HMS says no")),
        b"\x80\x01\x00\x02garbage",
        b"",
    ],
    ids=["fewer", "more", "duplicate", "an error", "garbage", "empty"],
)
def test_a_reply_with_other_rows_or_none_teaches_nothing(reply: bytes) -> None:
    memo = RowOrders()
    rows = _rows(a=1, b=2, c=3)
    _learn(memo, rows, reply)
    assert memo.learnt == 0 and len(memo) == 0
    with pytest.raises(Forward):
        memo.arrange(("tables", "d"), rows, orders.table_names)


def test_the_memo_is_bounded_least_recently_used_first() -> None:
    memo = RowOrders(max_keys=2)
    first, second, third = _rows(a=1, b=1), _rows(a=2, b=2), _rows(a=3, b=3)
    for rows in (first, second):
        _learn(memo, rows, _tables_reply("b", "a"))
    memo.arrange(("tables", "d"), first, orders.table_names)  # used: kept
    _learn(memo, third, _tables_reply("a", "b"))
    assert len(memo) == 2
    assert memo.arrange(("tables", "d"), first, orders.table_names) == ["<b>", "<a>"]
    with pytest.raises(Forward):
        memo.arrange(("tables", "d"), second, orders.table_names)


def test_too_many_rows_are_never_remembered() -> None:
    memo = RowOrders(max_rows=2)
    _learn(memo, _rows(a=1, b=2, c=3), _tables_reply("c", "a", "b"))
    assert memo.learnt == 0


def test_function_rows_are_named_by_database_and_stored_name() -> None:
    functions = [hms.Function(functionName="Alpha", dbName="d"), hms.Function("b", "e")]
    result = svc.get_all_functions_result(success=hms.GetAllFunctionsResponse(functions))
    assert orders.function_names(result) == ["d.Alpha", "e.b"]
    request_style = svc.get_table_objects_by_name_req_result(
        success=hms.GetTablesResult(tables=[hms.Table(tableName="T")])
    )
    assert orders.table_names(request_style) == ["t"]


# -- the order catalogd published (TDatabase.table_order) ------------------------------

_PUBLISHED = [("c", 7), ("a", 5), ("b", 6)]


def test_a_published_order_of_exactly_these_rows_serves_the_first_call() -> None:
    memo = RowOrders()
    rows = _rows(a=5, b=6, c=7)
    assert memo.arrange(("tables", "d"), rows, orders.table_names, _PUBLISHED) == [
        "<c>",
        "<a>",
        "<b>",
    ]
    assert memo.published == 1
    assert memo.learnt == 0


@pytest.mark.parametrize(
    "published",
    [
        [("c", 7), ("a", 5), ("b", 99)],  # a table changed since catalogd learnt it
        [("c", 7), ("a", 5)],  # a table created since
        [("c", 7), ("a", 5), ("b", 6), ("z", 1)],  # a table dropped since
        [("c", 7), ("a", 5), ("a", 5)],  # not a set of the rows (b missing)
        [("C", 7), ("a", 5), ("b", 6)],  # not the cache's lower-case names
        [],
    ],
)
def test_a_published_order_of_other_rows_or_versions_is_not_used(
    published: list[tuple[str, int]],
) -> None:
    memo = RowOrders()
    with pytest.raises(Forward):
        memo.arrange(("tables", "d"), _rows(a=5, b=6, c=7), orders.table_names, published)
    assert memo.published == 0


def test_an_order_learnt_here_still_serves_when_the_published_one_is_stale() -> None:
    memo = RowOrders()
    rows = _rows(a=5, b=6, c=7)
    _learn(memo, rows, _tables_reply("b", "c", "a"))
    stale = [("a", 1), ("b", 2), ("c", 3)]
    assert memo.arrange(("tables", "d"), rows, orders.table_names, stale) == ["<b>", "<c>", "<a>"]
