"""What an HMS client connection holds (subscriber.metastore.session) and the counters."""

from __future__ import annotations

import copy
import struct
from typing import Any

import idl
from catalogd.conversion import objects as convert
from catalogd.hms import builders
from subscriber.cache import build_view
from subscriber.metastore import framing, freshness
from subscriber.metastore.counters import EndpointStats, forward_reason
from subscriber.metastore.session import Session
from subscriber.metastore.writes import Target
from subscriber.protocol import codec
from subscriber.protocol.delta import Entry
from subscriber.reads import ObjectDecoder

I32, I64, STRING, STRUCT, LIST = 8, 10, 11, 12, 15


def _field(fid: int, ttype: int, payload: bytes) -> bytes:
    return struct.pack(">bh", ttype, fid) + payload


def _i64(fid: int, value: int) -> bytes:
    return _field(fid, I64, struct.pack(">q", value))


def _i64s(fid: int, values: list[int]) -> bytes:
    items = b"".join(struct.pack(">q", v) for v in values)
    return _field(fid, LIST, struct.pack(">bi", I64, len(values)) + items)


def _struct(fid: int, *fields: bytes) -> bytes:
    return _field(fid, STRUCT, b"".join(fields) + b"\x00")


def _args(*request_fields: bytes) -> bytes:
    """An ``<method>_args`` struct whose argument 1 is a request with these fields."""
    return _struct(1, *request_fields) + b"\x00"


def _ok(name: str, *success_fields: bytes) -> bytes:
    body = _struct(0, *success_fields) + b"\x00" if success_fields else b"\x00"
    return framing.reply(name, 1, body)


def _error(name: str, field_id: int) -> bytes:
    message = _field(1, STRING, struct.pack(">i", 2) + b"no")
    return framing.reply(name, 1, _struct(field_id, message) + b"\x00")


def _lock(session: Session, lockid: int, txnid: int | None = None) -> None:
    user = _field(3, STRING, struct.pack(">i", 1) + b"u")
    fields = [user] if txnid is None else [_i64(2, txnid), user]
    reply = _ok("lock", _i64(1, lockid), _field(2, I32, struct.pack(">i", 1)))
    session.observe("lock", _args(*fields), reply)


def test_a_lock_holds_until_unlocked() -> None:
    session = Session()
    assert not session.holding
    _lock(session, 41)
    assert session.holding and session.locks == {41: None}
    session.observe("check_lock", _args(_i64(1, 41)), _ok("check_lock", _i64(1, 41)))
    session.observe("unlock", _args(_i64(1, 41)), _error("unlock", 2))  # TxnOpenException
    assert session.holding
    session.observe("unlock", _args(_i64(1, 41)), _ok("unlock"))
    assert not session.holding


def test_a_refused_lock_holds_nothing_and_a_lost_answer_holds_for_good() -> None:
    session = Session()
    session.observe("lock", _args(), _error("lock", 1))
    assert not session.holding
    session.observe("lock", _args(), None)
    assert session.sticky and session.holding
    session.observe("unlock", _args(_i64(1, 1)), _ok("unlock"))
    assert session.holding


def test_transactions_and_their_locks_end_with_commit_or_abort() -> None:
    session = Session()
    session.observe("open_txns", _args(), _ok("open_txns", _i64s(1, [5, 6])))
    _lock(session, 9, txnid=5)
    assert session.txns == {5, 6} and session.locks == {9: 5}
    session.observe("commit_txn", _args(_i64(1, 5)), _ok("commit_txn"))
    assert session.txns == {6} and not session.locks and session.holding
    session.observe("abort_txns", _args(_i64s(1, [6])), _error("abort_txns", 1))
    assert not session.holding


def test_heartbeats_and_write_ids_name_what_the_client_holds() -> None:
    session = Session()
    session.observe("heartbeat", _args(_i64(1, 3), _i64(2, 4)), _ok("heartbeat"))
    assert session.locks == {3: None} and session.txns == {4}
    session = Session()
    session.observe("heartbeat_txn_range", _args(_i64(1, 10), _i64(2, 12)), _ok("x", _i64s(1, [])))
    assert session.txns == {10, 11, 12}
    session = Session()
    db = _field(1, STRING, struct.pack(">i", 1) + b"d")
    session.observe("allocate_table_write_ids", _args(db, _i64s(3, [7])), _ok("x", _i64s(1, [])))
    assert session.txns == {7}


def test_the_state_is_bounded() -> None:
    session = Session(cap=3)
    for lockid in range(4):
        _lock(session, lockid)
    assert session.sticky and not session.locks  # holds for good, keeps nothing
    session = Session(cap=3)
    session.observe("open_txns", _args(), _ok("open_txns", _i64s(1, list(range(10)))))
    assert session.sticky and not session.txns
    session = Session(cap=3)
    session.observe("heartbeat_txn_range", _args(_i64(1, 0), _i64(2, 10**12)), _ok("x"))
    assert session.sticky and not session.txns


def test_garbage_holds_for_good_and_other_methods_are_ignored() -> None:
    session = Session()
    session.observe("get_table", b"\xff", _ok("get_table"))
    assert not session.holding
    session.observe("check_lock", b"\x0c\x00\x01\x0a", _ok("check_lock"))  # truncated
    assert session.sticky


def test_counters_keep_the_old_shape_and_give_reasons() -> None:
    stats = EndpointStats()
    stats.add("served", "get_table")
    stats.forwarded("get_table", "locked")
    stats.forwarded("get_table", "stale")
    stats.forwarded("alter_table", "write")
    assert stats.snapshot()["forwarded"] == {"get_table": 1, "alter_table": 1}
    assert stats.snapshot()["forwarded_stale"] == {"get_table": 1}
    assert stats.by_method()["get_table"] == {"served": 1, "locked": 1, "stale": 1}
    assert stats.total("locked") == 1 and stats.total("served") == 1
    line = stats.summary()
    assert line.startswith("served 1, forwarded 3 (write 1, locked 1, stale 1)")
    assert "get_table locked=1 served=1 stale=1" in line
    assert forward_reason("no_such_method_anywhere") == "unknown"
    assert forward_reason("alter_table") == "write"
    assert forward_reason("get_all_databases") == "not_cached"


def _table_view() -> tuple[Any, Any]:
    table = builders.thrift_table("sales", "orders", "/w/orders", columns=[("id", "int")])
    table.parameters = {"metadata_location": "/w/orders/metadata/1.json"}
    entries = [
        Entry(k, 3, p) for k, p in convert.encode_all(convert.table_objects(table, [])).items()
    ]
    return build_view("svc", 3, entries), table


def _get_table_reply(table: Any = None, missing: bool = False) -> bytes:
    svc = idl.hive_metastore.ThriftHiveMetastore
    if missing:
        result = svc.get_table_result(o2=idl.hive_metastore.NoSuchObjectException(message="x"))
    else:
        result = svc.get_table_result(success=table)
    return framing.reply("get_table", 1, codec.encode(result, check=False))


def test_a_forwarded_get_table_shows_whether_the_cache_is_behind() -> None:
    view, table = _table_view()
    svc = idl.hive_metastore.ThriftHiveMetastore
    args = svc.get_table_args(dbname="Sales", tbl_name="Orders")
    decode = ObjectDecoder()
    assert freshness.behind(view, decode, "get_table", args, _get_table_reply(table)) == []
    newer = copy.deepcopy(table)
    newer.parameters = {"metadata_location": "/w/orders/metadata/2.json"}
    target = [Target("sales", "orders")]
    assert freshness.behind(view, decode, "get_table", args, _get_table_reply(newer)) == target
    gone = _get_table_reply(missing=True)
    assert freshness.behind(view, decode, "get_table", args, gone) == target
    other = svc.get_table_args(dbname="sales", tbl_name="new")
    assert freshness.behind(view, decode, "get_table", other, gone) == []
    assert freshness.behind(view, decode, "get_table", other, _get_table_reply(newer)) == [
        Target("sales", "new")
    ]
    listed = svc.get_table_objects_by_name_args(dbname="sales", tbl_names=["orders", "nosuch"])
    reply = framing.reply(
        "get_table_objects_by_name",
        1,
        codec.encode(svc.get_table_objects_by_name_result(success=[newer]), check=False),
    )
    assert freshness.behind(view, decode, "get_table_objects_by_name", listed, reply) == target
    assert freshness.behind(view, decode, "get_table", args, b"\x80\x01garbage") == []
