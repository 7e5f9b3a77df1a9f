"""Catalog-qualified names of Hive 3/4 clients (subscriber/metastore/catalogs.py)."""

from __future__ import annotations

import pytest

import idl
from subscriber.metastore.catalogs import split, unqualify
from subscriber.metastore.shapes import Forward

hms = idl.hive_metastore
svc = hms.ThriftHiveMetastore


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("sales", (None, "sales")),
        ("@hive#sales", ("hive", "sales")),
        ("@hive#", ("hive", None)),
        ("@hive#!", ("hive", "")),
        ("@spark#a#b", ("spark", "a#b")),
    ],
)
def test_split_reads_names_as_hms_does(value: str, expected: tuple[str | None, str | None]) -> None:
    assert split(value) == expected


def test_a_marker_without_a_catalog_is_hms_s_error() -> None:
    with pytest.raises(hms.MetaException, match="catalog marker"):
        split("@sales")


def test_old_calls_get_plain_database_names() -> None:
    args = svc.get_table_args(dbname="@HIVE#sales", tbl_name="t")
    unqualify("get_table", args)
    assert args.dbname == "sales"
    db = svc.get_database_args(name="@hive#sales")
    unqualify("get_database", db)
    assert db.name == "sales"
    every = svc.get_databases_args(pattern="@hive#")
    unqualify("get_databases", every)
    assert every.pattern is None  # every database
    some = svc.get_databases_args(pattern="@hive#s*")
    unqualify("get_databases", some)
    assert some.pattern == "s*"
    plain = svc.get_partitions_args(db_name="sales", tbl_name="t", max_parts=-1)
    unqualify("get_partitions", plain)
    assert plain.db_name == "sales"


def test_another_catalog_or_no_database_goes_to_hms() -> None:
    with pytest.raises(Forward, match="catalog 'spark'"):
        unqualify("get_table", svc.get_table_args(dbname="@spark#sales", tbl_name="t"))
    with pytest.raises(Forward, match="without a database"):
        unqualify("get_all_tables", svc.get_all_tables_args(db_name="@hive#"))


def test_request_structs_honour_the_catalog_and_refuse_what_the_cache_cannot() -> None:
    req = svc.get_table_req_args(req=hms.GetTableRequest(dbName="s", tblName="t", catName="hive"))
    unqualify("get_table_req", req)
    neutral = hms.GetTableRequest(dbName="s", tblName="t", engine="hive", id=-1)
    unqualify("get_table_req", svc.get_table_req_args(req=neutral))
    for extra in (
        {"catName": "spark"},
        {"validWriteIdList": "t:1:9223372036854775807::"},
        {"processorCapabilities": ["HIVEFULLACIDREAD"]},
        {"getColumnStats": True},
        {"dbName": "@hive#s"},  # HMS takes a request's dbName as written
    ):
        request = hms.GetTableRequest(**{"dbName": "s", "tblName": "t", **extra})
        with pytest.raises(Forward):
            unqualify("get_table_req", svc.get_table_req_args(req=request))
