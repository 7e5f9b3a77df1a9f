"""Every HMS method has a class; every write family names every object it touches.

Arguments are real encoded argument structs (what a client sends after the message
header), built with the generated IDL.
"""

from __future__ import annotations

from typing import Any

import pytest

import idl
from subscriber.metastore import methods
from subscriber.metastore.methods import Kind, kind
from subscriber.metastore.writes import (
    ALL_DATABASES,
    MAX_INVALIDATE,
    Target,
    resolve,
    touched,
)
from subscriber.protocol import codec

hms = idl.hive_metastore
svc = hms.ThriftHiveMetastore


def _touched(method: str, **args: Any) -> tuple[Target, ...]:
    return touched(method, codec.encode(getattr(svc, f"{method}_args")(**args)))


def _table(db: str, name: str) -> Any:
    return hms.Table(dbName=db, tableName=name, sd=hms.StorageDescriptor(cols=[]))


def _part(db: str, table: str, values: list[str]) -> Any:
    return hms.Partition(dbName=db, tableName=table, values=values)


def _stats(db: str, table: str) -> Any:
    desc = hms.ColumnStatisticsDesc(isTblLevel=True, dbName=db, tableName=table)
    return hms.ColumnStatistics(statsDesc=desc, statsObj=[])


T = Target


def test_every_declared_method_has_a_class() -> None:
    declared = methods.declared()
    assert len(declared) > 290  # HMS 2.3 + 3.1 + 4.x + fb303
    unclassified = {m for m in declared if kind(m) is Kind.UNKNOWN}
    assert not unclassified
    # The explicit lists name only declared methods (no typo hides a method).
    for listed in (methods.SESSION, methods.LOCK, methods.READ, methods.WRITE):
        assert listed <= declared, listed - declared


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("get_table", Kind.READ),
        ("get_table_req", Kind.READ),
        ("get_partitions_by_filter", Kind.READ),
        ("list_privileges", Kind.READ),
        ("partition_name_to_vals", Kind.READ),
        ("get_next_notification", Kind.READ),
        ("set_ugi", Kind.SESSION),
        ("shutdown", Kind.SESSION),
        ("get_config_value", Kind.SESSION),
        ("get_delegation_token", Kind.SESSION),
        ("getStatus", Kind.SESSION),
        ("lock", Kind.LOCK),
        ("check_lock", Kind.LOCK),
        ("unlock", Kind.LOCK),
        ("open_txns", Kind.LOCK),
        ("commit_txn", Kind.LOCK),
        ("heartbeat", Kind.LOCK),
        ("show_locks", Kind.LOCK),
        ("alter_table_with_environment_context", Kind.WRITE),
        ("exchange_partitions", Kind.WRITE),
        ("truncate_table", Kind.WRITE),
        ("markPartitionForEvent", Kind.WRITE),
        ("scheduled_query_poll", Kind.WRITE),
        ("no_such_method", Kind.UNKNOWN),
    ],
)
def test_classes(name: str, expected: Kind) -> None:
    assert kind(name) is expected
    assert methods.is_write(name) == (expected in (Kind.WRITE, Kind.UNKNOWN))


def test_table_ddl() -> None:
    assert _touched("create_table", tbl=_table("Sales", "Orders")) == (T("sales", "orders"),)
    assert _touched(
        "create_table_with_constraints",
        tbl=_table("s", "t"),
        primaryKeys=[hms.SQLPrimaryKey(table_db="s", table_name="t", column_name="a")],
        foreignKeys=[],
    ) == (T("s", "t"),)
    assert _touched("drop_table", dbname="s", name="T", deleteData=True) == (T("s", "t"),)
    assert _touched("truncate_table", dbName="s", tableName="t", partNames=["a=1"]) == (
        T("s", "t"),
    )


def test_a_rename_names_both_tables() -> None:
    renamed = _touched(
        "alter_table_with_environment_context",
        dbname="s",
        tbl_name="t1",
        new_tbl=_table("s", "t2"),
        environment_context=hms.EnvironmentContext(properties={}),
    )
    assert renamed == (T("s", "t1"), T("s", "t2"))
    # PyIceberg renames across databases with alter_table and a new dbName/tableName.
    moved = _touched("alter_table", dbname="a", tbl_name="t", new_tbl=_table("B", "u"))
    assert moved == (T("a", "t"), T("b", "u"))
    req = hms.AlterTableRequest(dbName="@hive#a", tableName="t", table=_table("a", "v"))
    assert _touched("alter_table_req", req=req) == (T("a", "t"), T("a", "v"))
    assert _touched("alter_table_with_cascade", dbname="a", tbl_name="t", new_tbl=None) == (
        T("a", "t"),
    )


def test_an_exchange_names_source_and_destination() -> None:
    args = dict(
        partitionSpecs={"p": "1"},
        source_db="src",
        source_table_name="s",
        dest_db="dst",
        dest_table_name="d",
    )
    for method in ("exchange_partition", "exchange_partitions"):
        assert _touched(method, **args) == (T("src", "s"), T("dst", "d"))


def test_partition_writes() -> None:
    p = _part("s", "t", ["1"])
    assert _touched("add_partitions", new_parts=[p, _part("s", "u", ["2"])]) == (
        T("s", "t"),
        T("s", "u"),
    )
    spec = hms.PartitionSpec(dbName="s", tableName="t", rootPath="/w")
    assert _touched("add_partitions_pspec", new_parts=[spec]) == (T("s", "t"),)
    assert _touched("append_partition", db_name="s", tbl_name="t", part_vals=["1"]) == (
        T("s", "t"),
    )
    assert _touched(
        "append_partition_by_name_with_environment_context",
        db_name="s",
        tbl_name="t",
        part_name="p=1",
        environment_context=None,
    ) == (T("s", "t"),)
    drop = hms.DropPartitionsRequest(
        dbName="s", tblName="t", parts=hms.RequestPartsSpec(names=["p=1"])
    )
    assert _touched("drop_partitions_req", req=drop) == (T("s", "t"),)
    assert _touched("rename_partition", db_name="s", tbl_name="t", part_vals=["1"], new_part=p) == (
        T("s", "t"),
    )
    assert _touched("alter_partitions", db_name="s", tbl_name="t", new_parts=[p]) == (T("s", "t"),)
    assert _touched(
        "alter_partitions_with_environment_context",
        db_name="s",
        tbl_name="t",
        new_parts=[p],
        environment_context=None,
    ) == (T("s", "t"),)
    assert _touched(
        "drop_partition_by_name", db_name="s", tbl_name="t", part_name="p=1", deleteData=False
    ) == (T("s", "t"),)


def test_statistics_writes() -> None:
    assert _touched("update_table_column_statistics", stats_obj=_stats("s", "t")) == (T("s", "t"),)
    assert _touched("update_partition_column_statistics", stats_obj=_stats("s", "t")) == (
        T("s", "t"),
    )
    assert _touched("delete_table_column_statistics", db_name="s", tbl_name="t", col_name="c") == (
        T("s", "t"),
    )
    assert _touched(
        "delete_partition_column_statistics",
        db_name="s",
        tbl_name="t",
        part_name="p=1",
        col_name="c",
    ) == (T("s", "t"),)
    request = hms.SetPartitionsStatsRequest(colStats=[_stats("s", "t"), _stats("s", "u")])
    assert _touched("set_aggr_stats_for", request=request) == (T("s", "t"), T("s", "u"))


def test_database_and_function_ddl_name_the_database() -> None:
    db = hms.Database(name="Sales", description="", locationUri="/w", parameters={})
    assert _touched("create_database", database=db) == (T("sales"),)
    assert _touched("alter_database", dbname="sales", db=db) == (T("sales"),)
    assert _touched("drop_database", name="sales", deleteData=True, cascade=True) == (T("sales"),)
    func = hms.Function(functionName="f", dbName="Fn", className="C")
    assert _touched("create_function", func=func) == (T("fn"),)
    assert _touched("alter_function", dbName="fn", funcName="f", newFunc=func) == (T("fn"),)
    assert _touched("drop_function", dbName="fn", funcName="f") == (T("fn"),)


def test_grants_name_their_objects() -> None:
    ref = hms.HiveObjectRef(objectType=hms.HiveObjectType.TABLE, dbName="s", objectName="T")
    bag = hms.PrivilegeBag(
        privileges=[
            hms.HiveObjectPrivilege(
                hiveObject=ref, principalName="u", principalType=hms.PrincipalType.USER
            ),
            hms.HiveObjectPrivilege(
                hiveObject=hms.HiveObjectRef(objectType=hms.HiveObjectType.DATABASE, dbName="d"),
            ),
        ]
    )
    # ... and the principals and grants (a privileges reload: issue 22 point 4).
    assert _touched("grant_privileges", privileges=bag) == (T("s", "t"), T("d"), T(""))


def test_role_writes_touch_the_grants() -> None:
    for name, args in (
        ("create_role", {"role": hms.Role(roleName="r")}),
        ("drop_role", {"role_name": "r"}),
        ("grant_role", {"role_name": "r", "principal_name": "u", "principal_type": 1}),
        ("revoke_role", {"role_name": "r", "principal_name": "u", "principal_type": 1}),
    ):
        assert _touched(name, **args) == (T(""),), name


def test_non_writes_and_writes_to_nothing_cached_touch_nothing() -> None:
    assert _touched("get_table", dbname="s", tbl_name="t") == ()
    assert _touched("lock", rqst=hms.LockRequest(component=[], user="u", hostname="h")) == ()


def test_an_unknown_method_is_a_write_to_what_it_names() -> None:
    body = codec.encode(svc.drop_table_args(dbname="Sales", name="orders"))
    guesses = touched("drop_table_v9", body)
    assert guesses == (T("sales", guess=True), T("orders", guess=True))
    assert resolve(guesses, {"sales", "other", ""}) == (T("sales", guess=True),)
    # Naming no cached database: a bounded invalidate of the cached databases.
    assert touched("drop_table_v9", b"\x00") == (ALL_DATABASES,)
    many = {f"db{i:03}" for i in range(100)}
    everything = resolve(guesses, many)
    assert len(everything) == MAX_INVALIDATE
    assert everything[0] == T("db000", guess=True)
    assert resolve([ALL_DATABASES], {"a", ""}) == (T("a", guess=True),)
    # Garbage never raises: what could be read counts.
    assert touched("drop_table_v9", b"\x0b\x00\x01\x00\x00") == (ALL_DATABASES,)


def test_an_undecodable_write_still_invalidates() -> None:
    assert touched("create_table", b"\x0c\x00\x01") == (ALL_DATABASES,)


def test_a_catalog_prefixed_database_name() -> None:
    assert _touched("drop_function", dbName="@hive#Fn", funcName="f") == (T("fn"),)
    assert _touched("drop_function", dbName="@hive#", funcName="f") == ()
