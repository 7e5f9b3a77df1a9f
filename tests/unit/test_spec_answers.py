"""``get_partitions_pspec`` from a cache view (pure): HMS 2.3's shapes, and what is
forwarded instead (tests/integration/test_hms_endpoint_specs.py checks the shapes
against a real HMS)."""

from __future__ import annotations

from typing import Any

import pytest

import idl
from catalogd.conversion import objects as convert
from catalogd.hms import builders
from subscriber.cache import build_view
from subscriber.metastore.answers import CacheAnswers, Forward
from subscriber.metastore.spec_answers import GROUPING_PARAMETER, java_short, sd_group_key
from subscriber.protocol import codec
from subscriber.protocol.delta import Entry
from subscriber.reads import ObjectDecoder

pytestmark = pytest.mark.timeout(30)

hms = idl.hive_metastore
svc = hms.ThriftHiveMetastore


def _cache(grouping: str | None, locations: dict[str, str], fmts: dict[str, str] | None = None):
    params = {} if grouping is None else {GROUPING_PARAMETER: grouping}
    table = builders.thrift_table(
        "db", "t", "/w/t", columns=[("c", "string")], partition_keys=[("p", "string")],
        parameters=params, fmt="text",
    )  # fmt: skip
    parts = []
    for value, location in locations.items():
        fmt = (fmts or {}).get(value, "text")
        sd = builders.thrift_table("db", "t", location, columns=[("c", "string")], fmt=fmt).sd
        parts.append(
            hms.Partition(
                values=[value],
                dbName="db",
                tableName="t",
                createTime=5,
                lastAccessTime=0,
                parameters={"v": value},
                sd=sd,
            )  # fmt: skip
        )
    objects = {**convert.database_objects(hms.Database(name="db", locationUri="/w")),
               **convert.table_objects(table, parts)}  # fmt: skip
    view = build_view("svc", 3, [Entry(k, 3, p) for k, p in convert.encode_all(objects).items()])
    answers = CacheAnswers(ObjectDecoder())
    answers.upstream_reads_catalogs = False  # HMS 2.3
    return answers, view, table, parts


def _pspec(answers: CacheAnswers, view: Any, max_parts: int = -1, db: str = "db") -> Any:
    args = svc.get_partitions_pspec_args(db_name=db, tbl_name="T", max_parts=max_parts)
    result = answers.answer(view, "get_partitions_pspec", args)
    return codec.decode(svc.get_partitions_pspec_result, result).success


def test_java_short_casts_as_java_does() -> None:
    assert [java_short(v) for v in (-1, 0, 100, 32767, 32768, 65536, 65537, 100000)] == [
        -1, 0, 100, 32767, -32768, 0, 1, -31072,
    ]  # fmt: skip


def test_ungrouped_is_one_spec_of_whole_partitions_named_as_asked_lower_cased() -> None:
    answers, view, _, parts = _cache(None, {"b": "/w/t/p=b", "a": "/elsewhere/p=a"})
    (spec,) = _pspec(answers, view, db="DB")
    assert (spec.dbName, spec.tableName, spec.rootPath) == ("db", "t", "/w/t")
    assert spec.sharedSDPartitionSpec is None and spec.catName is None
    assert spec.partitionList.partitions == [parts[1], parts[0]]  # by name, as get_partitions


@pytest.mark.parametrize(("max_parts", "count"), [(0, 0), (1, 1), (-5, 2), (65536, 0), (65537, 1)])
def test_max_parts_is_a_java_short_then_as_get_partitions(max_parts: int, count: int) -> None:
    answers, view, _, _ = _cache(None, {"b": "/w/t/p=b", "a": "/w/t/p=a"})
    (spec,) = _pspec(answers, view, max_parts)
    assert len(spec.partitionList.partitions) == count


def test_grouped_shares_the_first_sd_and_lists_outsiders_apart() -> None:
    locations = {"b": "/w/t/p=b", "a": "/w/t/p=a", "o": "/x/p=o", "pre": "/w/t2/p=pre"}
    answers, view, _, parts = _cache("True", locations)
    shared, rest = _pspec(answers, view)
    assert (shared.dbName, shared.tableName, shared.rootPath) == ("db", "t", "/w/t")
    rows = shared.sharedSDPartitionSpec.partitions
    # by name: a, b, pre ("/w/t2" starts with "/w/t": HMS's string prefix test)
    assert [(r.values, r.relativePath) for r in rows] == [
        (["a"], "/p=a"), (["b"], "/p=b"), (["pre"], "2/p=pre"),
    ]  # fmt: skip
    assert rows[0].createTime == 5 and rows[0].parameters == {"v": "a"}
    assert shared.sharedSDPartitionSpec.sd.location == "/w/t"
    assert shared.sharedSDPartitionSpec.sd.inputFormat == parts[1].sd.inputFormat
    assert rest.rootPath is None and rest.partitionList.partitions == [parts[2]]


def test_grouping_with_no_partitions_is_an_empty_list() -> None:
    answers, view, _, _ = _cache("true", {})
    assert _pspec(answers, view) == []


def test_two_sd_groups_are_forwarded_one_is_served() -> None:
    answers, view, _, _ = _cache("true", {"a": "/w/t/p=a", "b": "/w/t/p=b"}, {"b": "orc"})
    with pytest.raises(Forward, match="HashMap"):
        _pspec(answers, view)
    assert len(_pspec(answers, view, 1)) == 1  # one partition selected: one group


@pytest.mark.parametrize(
    ("reads_catalogs", "serves_requests"), [(None, None), (True, None), (None, False)]
)
def test_forwarded_until_the_upstream_version_is_known(
    reads_catalogs: bool | None, serves_requests: bool | None
) -> None:
    answers, view, _, _ = _cache(None, {"a": "/w/t/p=a"})
    answers.upstream_reads_catalogs = reads_catalogs
    answers.upstream_serves_requests = serves_requests
    with pytest.raises(Forward):
        _pspec(answers, view)


def test_hms_3_names_the_spec_by_the_database_as_asked_and_its_catalog() -> None:
    answers, view, _, _ = _cache(None, {"a": "/w/t/p=a"})
    answers.upstream_reads_catalogs, answers.upstream_serves_requests = True, False
    (spec,) = _pspec(answers, view, db="DB")
    assert (spec.catName, spec.dbName, spec.tableName) == ("hive", "DB", "t")
    (spec,) = _pspec(answers, view, db="@hive#Db")
    assert (spec.catName, spec.dbName) == ("hive", "Db")
    with pytest.raises(Forward, match="spelt"):
        _pspec(answers, view, db="@HIVE#db")  # HMS 3.1 answers catName "HIVE"
    answers.upstream_serves_requests = True  # HMS 4: both lower-cased
    (spec,) = _pspec(answers, view, db="@hive#Db")
    assert (spec.catName, spec.dbName) == ("hive", "db")


def test_sd_group_key_is_finer_than_hms_string_key() -> None:
    sd = builders.thrift_table("db", "t", "/l", columns=[("c", "string")]).sd
    other = builders.thrift_table("db", "t", "/m", columns=[("c", "string")]).sd
    assert sd_group_key(sd) == sd_group_key(other)  # the location is not part of it
    other.cols = [hms.FieldSchema(name="c", type="string", comment="null")]
    sd.cols = [hms.FieldSchema(name="c", type="string", comment=None)]
    assert sd_group_key(sd) != sd_group_key(other)  # one key in HMS: forwarded, never merged
    sd.serdeInfo = None
    with pytest.raises(Forward):
        sd_group_key(sd)


# -- get_partition_values ---------------------------------------------------------------


def _values_cache() -> tuple[CacheAnswers, Any]:
    table = builders.thrift_table(
        "db", "v", "/w/v", columns=[("c", "string")],
        partition_keys=[("p", "string"), ("q", "int")],
    )  # fmt: skip
    parts = builders.thrift_partitions(table, [["a", "2"], ["b", "2"], ["a", "10"], ["a/b", "1"]])
    objects = {**convert.database_objects(hms.Database(name="db", locationUri="/w")),
               **convert.table_objects(table, parts)}  # fmt: skip
    view = build_view("svc", 3, [Entry(k, 3, p) for k, p in convert.encode_all(objects).items()])
    answers = CacheAnswers(ObjectDecoder())
    answers.upstream_reads_catalogs = True  # HMS 3.1 (2.3.10 answers the same)
    return answers, view


def _values(answers: CacheAnswers, view: Any, **fields: Any) -> list[list[str]]:
    fields = {"dbName": "db", "tblName": "v", "partitionKeys": [hms.FieldSchema(name="p")],
              **fields}  # fmt: skip
    args = svc.get_partition_values_args(request=hms.PartitionValuesRequest(**fields))
    result = answers.answer(view, "get_partition_values", args)
    response = codec.decode(svc.get_partition_values_result, result).success
    return [row.row for row in response.partitionValues]


def test_filtered_values_are_every_value_of_each_match_by_name() -> None:
    answers, view = _values_cache()
    assert _values(answers, view, filter='p = "a"') == [["a", "10"], ["a", "2"]]
    assert _values(answers, view, filter="q = 2", maxParts=1) == [["a", "2"]]
    assert _values(answers, view, filter="q = 2", maxParts=0) == []
    descending = _values(answers, view, filter='p != "x"', ascending=False)
    # by the escaped name, "p=a%2Fb/q=1" last: Java's reverse String order
    assert descending == [["b", "2"], ["a", "2"], ["a", "10"], ["a/b", "1"]]


@pytest.mark.parametrize(
    "fields",
    [
        {},  # no filter: HMS's database row order
        {"filter": ""},
        {"filter": 'p like "a.*"'},
        {"filter": 'p = "a"', "ascending": False, "maxParts": 1},  # cut descending
        {"filter": 'p = "a"', "maxParts": 1 << 20},
        {"filter": 'p = "a"', "catName": "other"},
        {"filter": 'p = "a"', "partitionKeys": []},
        {"filter": 'p = "a"', "tblName": "nosuch"},
        {"filter": 'p = "a"', "tblName": " v"},
    ],
)
def test_values_hms_would_answer_otherwise_are_forwarded(fields: dict[str, Any]) -> None:
    answers, view = _values_cache()
    with pytest.raises(Forward):
        _values(answers, view, **fields)


def test_values_are_forwarded_until_the_upstream_is_known() -> None:
    answers, view = _values_cache()
    answers.upstream_reads_catalogs = None
    with pytest.raises(Forward):
        _values(answers, view, filter='p = "a"')
