"""``get_table_objects_by_name_req``'s table patterns and projections as HMS 4.0.1
answers them (the facts in ``subscriber/metastore/table_requests.py``; the answers
themselves are compared with a running HMS 4.0.1 in
``tests/integration/test_hms_endpoint_requests.py``)."""

from __future__ import annotations

import pytest

import idl
from subscriber.metastore.shapes import Forward
from subscriber.metastore.table_requests import PROJECTED_FIELDS, partial_table, table_pattern

hms = idl.hive_metastore
NAMES = ["a_b", "axb", "events", "ext", "v", "ice_a", "t9"]


@pytest.mark.parametrize(
    ("pattern", "matched"),
    [
        (".*", NAMES),
        ("*", NAMES),
        ("a_b", ["a_b"]),  # "_" is itself
        ("A_*", ["a_b"]),  # case-insensitive
        ("a.b", ["a_b", "axb"]),  # "." any one character
        ("ev*|V", ["events", "v"]),
        ("e", []),  # whole names only
        ("", []),
    ],
)
def test_table_patterns_match_as_measured_on_hms_4(pattern: str, matched: list[str]) -> None:
    matches = table_pattern(pattern)
    assert [n for n in NAMES if matches(n)] == matched


@pytest.mark.parametrize(
    "pattern", ["e%", "[ae].*", "a+", "(a)", "a\\b", "é*", "|".join(["a"] * 3000)]
)
def test_unmeasured_pattern_characters_are_forwarded(pattern: str) -> None:
    with pytest.raises(Forward):
        table_pattern(pattern)


def test_a_projected_table_is_the_bare_one_hms_fills() -> None:
    view = hms.Table(
        tableName="v", dbName="d", owner="o", ownerType=hms.PrincipalType.ROLE,
        createTime=5, tableType="VIRTUAL_VIEW", viewOriginalText="select 1",
        parameters={"k": "v"}, writeId=7, id=3,
    )  # fmt: skip
    got = partial_table(view, PROJECTED_FIELDS)
    assert got == hms.Table(
        tableName="v", dbName="d", owner="o", ownerType=hms.PrincipalType.ROLE,
        createTime=0, lastAccessTime=0, retention=0, tableType="MANAGED_TABLE",
        rewriteEnabled=False, writeId=0, id=0,
    )  # fmt: skip
    names_only = partial_table(view, frozenset({"tableName"}))
    assert (names_only.dbName, names_only.owner) == (None, None)
    assert names_only.ownerType == hms.PrincipalType.USER  # HMS's default, not the table's
