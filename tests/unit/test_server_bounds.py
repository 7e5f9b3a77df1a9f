"""Bounded work per request, pure parts: decoding limits, who may report, expiry, parking."""

from __future__ import annotations

import zlib

import pytest

import idl
from catalogd.core.catalog import Catalog
from catalogd.server import requests
from catalogd.server.config import ServerStats
from catalogd.server.members import Membership, Report, may_report
from catalogd.server.snapshots import PARK_MAX_S, PARK_MIN_S, SnapshotJob
from subscriber.protocol import codec
from subscriber.protocol.errors import ProtocolError

svc = idl.catalog_service
STATE = requests.ServerState(
    service_id="svc-1",
    pub_endpoint="tcp://127.0.0.1:1",
    heartbeat_interval_s=1.0,
    snapshot_chunk=10,
    max_catch_up_entries=1000,
)


def test_a_compressed_request_is_refused_while_inflating_past_the_bound() -> None:
    bomb = bytes((codec.FLAG_ZLIB,)) + zlib.compress(b"\0" * (32 << 20), 9)
    assert len(bomb) < 64 * 1024
    with pytest.raises(ProtocolError, match="expands beyond 262144"):
        requests.decode(bomb, max_inflated=256 * 1024, max_list_items=100)


def test_a_request_listing_too_many_databases_is_refused() -> None:
    many = svc.TRequest(snapshot=svc.TSnapshotRequest(databases=[""] * 101))
    with pytest.raises(ProtocolError, match="too many databases"):
        requests.decode(codec.pack(many), max_inflated=1 << 20, max_list_items=100)
    few = svc.TRequest(snapshot=svc.TSnapshotRequest(databases=["a"] * 100))
    assert requests.decode(codec.pack(few), max_inflated=1 << 20, max_list_items=100) == few


def test_a_load_request_for_an_unknown_table_is_notfound_and_not_forwarded() -> None:
    catalog = Catalog()
    catalog.commit({"DATABASE:a": b"a", "TABLE:a.t": b"t"})
    known = svc.TRequest(load_table=svc.TLoadTableRequest(db_name="A", tbl_name="T"))
    out = requests.answer(b"p", known, catalog, STATE, 0.0)
    assert out.load_request == ("a", "t") and out.counter == "load_requests"
    unknown = svc.TRequest(load_table=svc.TLoadTableRequest(db_name="a", tbl_name="nope"))
    out = requests.answer(b"p", unknown, catalog, STATE, 0.0)
    assert out.load_request is None and out.counter == "load_requests_unknown"
    assert out.response.status.code == svc.TStatusCode.NOTFOUND


def test_only_the_connection_that_joined_under_a_client_id_may_report_for_it() -> None:
    assert may_report(b"a", "c", "c", None, None, 0.0, 10.0)
    assert may_report(b"a", "c", "c", b"a", 0.0, 5.0, 10.0)
    assert not may_report(b"a", "c", None, None, None, 0.0, 10.0)  # never joined
    assert not may_report(b"a", "c", "other", None, None, 0.0, 10.0)
    assert not may_report(b"a", "c", "c", b"b", 1.0, 5.0, 10.0)  # b owns it, live
    assert may_report(b"a", "c", "c", b"b", 1.0, 12.0, 10.0)  # b went silent


def _report(client: str, applied: int, at: float) -> Report:
    return Report(client, applied, at)


def test_a_made_up_report_cannot_confirm_anything() -> None:
    stats = ServerStats()
    members = Membership(stats.subscribers, ttl_s=10.0, max_members=100)
    members.join(b"real", "driver-1", 0.0)
    assert members.report(b"real", _report("driver-1", 5, 1.0))
    assert not members.report(b"attacker", _report("driver-1", 10**9, 1.5))  # no hello
    members.join(b"attacker", "driver-1", 2.0)  # hello under a live subscriber's id
    assert not members.report(b"attacker", _report("driver-1", 10**9, 2.5))
    assert not members.report(b"attacker", _report("made-up", 10**9, 2.5))
    assert stats.subscribers == {"driver-1": (5, 1.0)}


def test_a_reconnected_subscriber_takes_over_its_id_once_the_old_connection_is_silent() -> None:
    stats = ServerStats()
    members = Membership(stats.subscribers, ttl_s=10.0, max_members=100)
    members.join(b"old", "d", 0.0)
    members.report(b"old", _report("d", 5, 1.0))
    members.join(b"new", "d", 20.0)
    assert members.report(b"new", _report("d", 7, 21.0))
    assert stats.subscribers == {"d": (7, 21.0)}


def test_reports_expire_and_their_number_is_bounded() -> None:
    stats = ServerStats()
    members = Membership(stats.subscribers, ttl_s=10.0, max_members=50)
    for i in range(1000):
        identity, client = b"%d" % i, f"c{i}"
        members.join(identity, client, float(i) / 100)
        members.report(identity, _report(client, 1, float(i) / 100))
    assert len(stats.subscribers) <= 50 and len(members.joined) <= 50
    assert "c999" in stats.subscribers  # the newest stay
    assert members.expire(100.0) == 50
    assert stats.subscribers == {} and members.owners == {}


def test_a_goodbye_forgets_the_subscriber() -> None:
    stats = ServerStats()
    members = Membership(stats.subscribers, ttl_s=10.0, max_members=10)
    members.join(b"a", "c", 0.0)
    members.report(b"a", _report("c", 3, 0.5))
    assert members.report(b"a", Report("c", None, 1.0))
    assert stats.subscribers == {} and members.joined == {}


def test_a_parked_job_backs_off_up_to_a_bound_and_resets_after_a_send() -> None:
    job = SnapshotJob(b"p", 1, iter([b"x"]))
    job.park(10.0)
    assert job.retry_at == 10.0 + PARK_MIN_S
    for _ in range(20):
        job.park(10.0)
    assert job.retry_at == 10.0 + PARK_MAX_S
    job.sent()
    job.park(11.0)
    assert job.retry_at == 11.0 + PARK_MIN_S
