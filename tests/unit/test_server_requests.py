"""The server's pure request handling and snapshot chunking, without sockets or threads."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import idl
from catalogd.core.catalog import Catalog
from catalogd.server import requests
from catalogd.server.config import ServerStats
from catalogd.server.members import Membership
from catalogd.server.snapshots import SnapshotJob, snapshot_frames
from catalogd.server.sockets import advertised_endpoint
from subscriber.protocol import codec, wire
from subscriber.protocol.errors import ProtocolError
from subscriber.protocol.keys import database_of

svc = idl.catalog_service
OK = svc.TStatusCode.OK
NOTFOUND = svc.TStatusCode.NOTFOUND

STATE = requests.ServerState(
    service_id="svc-1",
    pub_endpoint="tcp://catalogd.example:26501",
    heartbeat_interval_s=0.25,
    snapshot_chunk=3,
    max_catch_up_entries=1000,
)


def populated() -> Catalog:
    catalog = Catalog(max_tombstones=2)
    changes: dict[str, bytes | None] = {"PRINCIPAL:admin.ROLE": b"role"}
    for db in ("a", "b"):
        changes[f"DATABASE:{db}"] = db.encode()
        for t in range(4):
            changes[f"TABLE:{db}.t{t}"] = b"table-%d" % t
    catalog.commit(changes)
    return catalog


def answer(
    request: Any, catalog: Catalog, state: requests.ServerState = STATE, now: float = 0.0
) -> requests.Outcome:
    return requests.answer(b"peer", request, catalog, state, now)


def sent(out: requests.Outcome) -> Any:
    """The response ``out`` says to send now."""
    assert out.response is not None
    return out.response


def decoded(frames: list[bytes]) -> list[Any]:
    return [codec.unpack(svc.TResponse, f) for f in frames]


def test_hello_is_answered_with_a_welcome() -> None:
    catalog = populated()
    out = answer(svc.TRequest(request_id=7, hello=svc.THello(client_id="c")), catalog)
    assert out.counter is None and out.snapshot is None and out.join == "c"
    assert sent(out).request_id == 7 and sent(out).status.code == OK
    welcome = sent(out).welcome
    assert welcome.service_id == "svc-1"
    assert welcome.pub_endpoint == "tcp://catalogd.example:26501"
    assert welcome.version == catalog.version
    assert welcome.heartbeat_interval_ms == 250
    assert welcome.oldest_catch_up_version == catalog.floor
    assert welcome.protocol_version == svc.PROTOCOL_VERSION
    assert welcome.hms_uri is None  # the state names no HMS: the field stays unset


def test_a_hello_in_an_older_protocol_is_refused_with_the_reason() -> None:
    catalog = populated()
    for spoken in (1, svc.PROTOCOL_VERSION - 1):
        older = svc.THello(client_id="c", protocol_version=spoken)
        out = answer(svc.TRequest(request_id=3, hello=older), catalog)
        assert out.join is None and sent(out).welcome is None
        assert out.counter == "hellos_refused"
        assert sent(out).status.code == svc.TStatusCode.ERROR
        assert "upgrade the subscriber" in sent(out).status.message
    current = svc.THello(client_id="c", protocol_version=svc.PROTOCOL_VERSION)
    assert sent(answer(svc.TRequest(request_id=4, hello=current), catalog)).welcome is not None


def hello(databases: list[str] | None, state: requests.ServerState, catalog: Catalog) -> Any:
    request = svc.TRequest(request_id=1, hello=svc.THello(client_id="c", databases=databases))
    return sent(answer(request, catalog, state)).welcome


def test_a_small_selection_comes_whole_in_the_welcome() -> None:
    catalog = populated()  # 1 global object, 5 in each of a and b
    state = dataclasses.replace(STATE, welcome_snapshot_entries=6, welcome_snapshot_bytes=1000)
    welcome = hello(["a"], state, catalog)
    entries = wire.entries_from_thrift(welcome.snapshot)
    expected = [e for e in catalog.live_entries() if database_of(e.key) in ("", "a")]
    assert entries == tuple(expected)  # the snapshot a request would stream, in version order
    assert welcome.version == catalog.version
    assert hello(["nothing-here"], state, catalog).snapshot == [
        wire.entry_to_thrift(catalog.get("PRINCIPAL:admin.ROLE"))  # type: ignore[arg-type]
    ]
    assert hello(["a", "b"], state, catalog).snapshot is None  # 11 entries: too many
    assert hello(None, state, catalog).snapshot is None
    empty = Catalog()
    assert hello(None, state, empty).snapshot == []  # empty, not absent: nothing to ask for
    assert hello(["a"], state, empty).snapshot == []


def test_the_welcome_snapshot_is_bounded_in_bytes_and_off_by_default() -> None:
    catalog = populated()
    state = dataclasses.replace(STATE, welcome_snapshot_entries=100, welcome_snapshot_bytes=20)
    assert hello(["a"], state, catalog).snapshot is None  # 5 payloads over 20 bytes
    state = dataclasses.replace(state, welcome_snapshot_bytes=10_000)
    assert len(hello(None, state, catalog).snapshot) == len(catalog)
    assert hello(None, STATE, catalog).snapshot is None  # ServerState's default: 0 entries
    assert hello(None, STATE, Catalog()).snapshot == []


def test_the_welcome_names_the_hms_catalogd_reads() -> None:
    state = dataclasses.replace(STATE, hms_uri="thrift://127.0.0.1:26503")
    out = answer(svc.TRequest(request_id=1, hello=svc.THello(client_id="c")), populated(), state)
    welcome = codec.unpack(svc.TResponse, codec.pack(sent(out))).welcome
    assert wire.parse_welcome(welcome).hms_uri == "thrift://127.0.0.1:26503"


def test_the_advertised_pub_endpoint_takes_the_advertise_host() -> None:
    assert advertised_endpoint("tcp://0.0.0.0:26501", None) == "tcp://0.0.0.0:26501"
    assert advertised_endpoint("tcp://0.0.0.0:26501", "cat.example") == "tcp://cat.example:26501"


def test_catch_up_comes_from_the_delta_log() -> None:
    catalog = populated()
    before = catalog.version
    catalog.commit({"TABLE:a.t0": b"changed", "TABLE:b.t1": None})
    request = svc.TRequest(request_id=1, catch_up=svc.TCatchUpRequest(from_version=before))
    out = answer(request, catalog)
    assert out.counter == "catch_ups" and sent(out).status.code == OK
    delta = wire.delta_from_thrift(sent(out).delta)
    assert (delta.from_version, delta.to_version) == (before, catalog.version)
    assert {e.key: e.payload for e in delta.entries} == {
        "TABLE:a.t0": b"changed",
        "TABLE:b.t1": None,
    }
    assert sent(out).delta.service_id == "svc-1"


def test_catch_up_is_filtered_by_database() -> None:
    catalog = populated()
    before = catalog.version
    catalog.commit({"TABLE:a.t0": b"changed", "TABLE:b.t0": b"changed", "PRINCIPAL:r.ROLE": b"r"})
    catch_up = svc.TCatchUpRequest(from_version=before, databases=["b"])
    out = answer(svc.TRequest(request_id=1, catch_up=catch_up), catalog)
    keys = {e.key for e in wire.delta_from_thrift(sent(out).delta).entries}
    assert keys == {"TABLE:b.t0", "PRINCIPAL:r.ROLE"}


def test_catch_up_past_the_delta_log_needs_a_snapshot() -> None:
    catalog = populated()
    start = catalog.version
    for t in range(4):  # four tombstones, two kept: the floor moves past ``start``
        catalog.commit({f"TABLE:a.t{t}": None})
    assert catalog.floor > start
    request = svc.TRequest(request_id=2, catch_up=svc.TCatchUpRequest(from_version=start))
    out = answer(request, catalog)
    assert out.counter == "catch_ups_refused"
    assert sent(out).request_id == 2 and sent(out).status.code == NOTFOUND
    assert sent(out).delta is None


def test_a_catch_up_too_large_needs_a_snapshot() -> None:
    catalog = populated()
    state = requests.ServerState("svc-1", "tcp://h:1", 1.0, 3, max_catch_up_entries=2)
    request = svc.TRequest(catch_up=svc.TCatchUpRequest(from_version=0))
    out = answer(request, catalog, state)
    assert out.counter == "catch_ups_refused" and sent(out).status.code == NOTFOUND
    assert "take a snapshot" in sent(out).status.message


def test_a_snapshot_request_becomes_a_streaming_job() -> None:
    catalog = populated()
    request = svc.TRequest(request_id=3, snapshot=svc.TSnapshotRequest())
    out = answer(request, catalog)
    assert out.response is None and out.counter == "snapshots"
    assert isinstance(out.snapshot, SnapshotJob)
    assert (out.snapshot.identity, out.snapshot.request_id) == (b"peer", 3)


def test_snapshot_chunks_cover_every_entry_and_end_with_a_terminator() -> None:
    catalog = populated()
    catalog.commit({"TABLE:a.t3": None})  # a tombstone is not part of a snapshot
    live = {e.key: e.payload for e in catalog.live_entries()}
    frames = list(
        snapshot_frames(catalog, service_id="svc-1", request_id=9, databases=None, chunk_size=3)
    )
    *chunks, end = decoded(frames)
    assert [c.chunk.seq for c in chunks] == list(range(len(chunks)))
    assert all(len(c.chunk.entries) <= 3 and c.chunk.service_id == "svc-1" for c in chunks)
    got = [e for c in chunks for e in wire.entries_from_thrift(c.chunk.entries)]
    assert {e.key: e.payload for e in got} == live and len(got) == len(live)
    assert all(r.request_id == 9 and r.status.code == OK for r in [*chunks, end])
    assert end.chunk is None
    term = end.snapshot_end
    assert (term.service_id, term.version, term.count, term.chunks) == (
        "svc-1",
        catalog.version,
        len(live),
        len(chunks),
    )


def test_snapshot_entries_are_captured_when_requested() -> None:
    catalog = populated()
    version, count = catalog.version, len(catalog)
    frames = snapshot_frames(catalog, service_id="s", request_id=None, databases=None, chunk_size=4)
    catalog.commit({"TABLE:a.new": b"later"})
    end = decoded(list(frames))[-1].snapshot_end
    assert (end.version, end.count) == (version, count)


def test_snapshot_is_filtered_by_database_keeping_global_objects() -> None:
    catalog = populated()
    frames = snapshot_frames(catalog, service_id="s", request_id=1, databases=["b"], chunk_size=2)
    *chunks, end = decoded(list(frames))
    keys = {e.key for c in chunks for e in wire.entries_from_thrift(c.chunk.entries)}
    assert {database_of(k) for k in keys} == {"b", ""}
    assert "PRINCIPAL:admin.ROLE" in keys and end.snapshot_end.count == len(keys)


def test_an_empty_snapshot_is_just_the_terminator() -> None:
    frames = snapshot_frames(Catalog(), service_id="s", request_id=1, databases=None, chunk_size=5)
    (end,) = decoded(list(frames))
    assert (end.snapshot_end.count, end.snapshot_end.chunks) == (0, 0)


def test_a_snapshot_job_repeats_an_unsent_frame() -> None:
    job = SnapshotJob(b"peer", 1, iter([b"one", b"two"]))
    assert job.next_frame() == b"one"
    assert job.next_frame() == b"one"  # not sent (the peer's pipe was full): again
    job.sent()
    assert job.next_frame() == b"two"
    job.sent()
    assert job.next_frame() is None


def test_a_priority_load_request_is_forwarded_as_a_value() -> None:
    load = svc.TLoadTableRequest(db_name="a", tbl_name="t1")
    out = answer(svc.TRequest(request_id=4, load_table=load), populated())
    assert out.load_request == ("a", "t1") and out.counter == "load_requests"
    assert sent(out).request_id == 4 and sent(out).status.code == OK


def test_reports_are_recorded_and_goodbyes_forget_the_subscriber() -> None:
    catalog, stats = populated(), ServerStats()
    members = Membership(stats.subscribers, ttl_s=10.0, max_members=100)

    def report(client: str, service: str, applied: int, now: float) -> requests.Outcome:
        msg = svc.TSubscriberReport(client_id=client, service_id=service, applied_version=applied)
        out = answer(svc.TRequest(report=msg), catalog, now=now)
        assert out.response is None  # reports are one-way
        requests.record(stats, out, members, client.encode(), now)
        return out

    for client in ("c1", "c2"):
        hello = answer(svc.TRequest(hello=svc.THello(client_id=client)), catalog)
        requests.record(stats, hello, members, client.encode(), 99.0)
    report("c1", "svc-1", 5, 100.0)
    report("c2", "svc-1", 7, 101.0)
    assert stats.subscribers == {"c1": (5, 100.0), "c2": (7, 101.0)}
    assert report("c1", "old-service", 9, 102.0).report is None  # from before a restart
    assert stats.subscribers["c1"] == (5, 100.0)
    report("c1", "svc-1", -1, 103.0)
    assert stats.subscribers == {"c2": (7, 101.0)}


def test_counters_are_recorded() -> None:
    stats = ServerStats()
    members = Membership(stats.subscribers, ttl_s=10.0, max_members=100)
    for counter in ("snapshots", "catch_ups", "catch_ups"):
        out = requests.Outcome(counter=counter)  # type: ignore[arg-type]
        requests.record(stats, out, members, b"peer", 0.0)
    assert (stats.snapshots, stats.catch_ups, stats.garbage) == (1, 2, 0)


def test_a_request_without_a_command_is_malformed() -> None:
    with pytest.raises(ProtocolError) as raised:
        answer(svc.TRequest(request_id=5), populated())
    out = requests.malformed(raised.value)
    assert out.counter == "garbage" and sent(out).status.code == svc.TStatusCode.ERROR
    assert sent(out).status.message.startswith("malformed request:")


def test_request_handling_and_snapshots_load_no_io_threads_or_clock() -> None:
    """The pure server modules, imported in a fresh interpreter, load no zmq, socket,
    thread or clock module beyond what ``idl`` (thriftpy2) already loads."""
    code = (
        "import json, sys\n"
        "import idl\n"
        "base = set(sys.modules)\n"
        "import catalogd.server.requests, catalogd.server.snapshots, catalogd.server.config\n"
        "import catalogd.server.members\n"
        "print(json.dumps(sorted(set(sys.modules) - base)))\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, check=True, capture_output=True, text=True
    )
    loaded = json.loads(out.stdout.splitlines()[-1])
    io = {"zmq", "socket", "threading", "_thread", "time", "datetime", "select", "selectors"}
    assert [m for m in loaded if m.split(".")[0] in io] == []
    assert "catalogd.server.thread" not in loaded


def test_a_hello_records_the_databases_its_subscriber_follows() -> None:
    stats = ServerStats()
    members = Membership(stats.subscribers, ttl_s=10, max_members=10)
    state = requests.ServerState("svc", "tcp://h:1", 1.0, 10, 10)
    for peer, dbs in ((b"p1", None), (b"p2", [f"db{i}" for i in range(10, 0, -1)])):
        hello = idl.catalog_service.THello(client_id=peer.decode(), databases=dbs)
        outcome = requests.answer(
            peer, idl.catalog_service.TRequest(hello=hello), Catalog(), state, 0
        )
        requests.record(stats, outcome, members, peer, 0)
    assert members.follows["p1"] == "all"
    assert members.follows["p2"] == "db1, db10, db2, db3, db4, db5, db6, db7 and 2 more"
    members.expire(100)
    assert members.follows == {}
