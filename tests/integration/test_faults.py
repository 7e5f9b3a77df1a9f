"""The server thread under hostile peers: real ZeroMQ on loopback, bounded in count and time.

Each case is one item of "never stalls, never lies": a peer that never reads,
decompression and list bombs, report floods, made-up reports, load requests for
names that do not exist. Counts are asserted, never timings.
"""

from __future__ import annotations

import dataclasses
import os
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq
from polling import wait_until

import idl
from catalogd.server.thread import CatalogServer, ServerConfig
from subscriber.api import CatalogSubscriber
from subscriber.protocol import codec

pytestmark = pytest.mark.timeout(60)
svc = idl.catalog_service


@pytest.fixture
def server() -> Iterator[CatalogServer]:
    config = ServerConfig(
        bind="tcp://127.0.0.1:*",
        pub_bind="tcp://127.0.0.1:*",
        heartbeat_interval_s=0.2,
        snapshot_chunk=1,
        report_ttl_s=1.0,
        max_subscribers=100,
    )
    loaded: list[tuple[str, str]] = []
    srv = CatalogServer(config, on_load_request=lambda db, t: loaded.append((db, t))).start()
    srv.loaded = loaded  # type: ignore[attr-defined]
    yield srv
    srv.close()


@pytest.fixture
def dealer(server: CatalogServer) -> Iterator[zmq.Socket]:
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVHWM, 1)
    sock.connect(server.endpoint)
    yield sock
    sock.close(linger=0)


def ask(sock: zmq.Socket, request: object, timeout_s: float = 10.0) -> object:
    sock.send(codec.pack(request))
    assert sock.poll(int(timeout_s * 1000)), "no answer"
    return codec.unpack(svc.TResponse, sock.recv())


def big_catalog(server: CatalogServer, tables: int = 3000, size: int = 8192) -> None:
    changes: dict[str, bytes | None] = {"DATABASE:a": b"a"}
    for t in range(tables):
        changes[f"TABLE:a.t{t}"] = os.urandom(size)  # incompressible: fills pipes
    server.commit(changes).result(30)


def test_a_peer_that_never_reads_costs_nothing_and_queues_little(
    server: CatalogServer, dealer: zmq.Socket
) -> None:
    big_catalog(server)
    for rid in range(50):
        dealer.send(codec.pack(svc.TRequest(request_id=rid, snapshot=svc.TSnapshotRequest())))
    wait_until(lambda: server.stats.snapshot_retries > 0, what="the peer's pipe to fill")
    assert server.stats.snapshot_jobs <= server.config.max_snapshot_jobs_per_peer
    before = server.stats.snapshot_retries
    with zmq.Context.instance().socket(zmq.DEALER) as other:
        other.setsockopt(zmq.LINGER, 0)
        other.connect(server.endpoint)
        for rid in range(20):  # others are served meanwhile
            assert ask(other, svc.TRequest(request_id=rid, hello=svc.THello())).welcome
    time.sleep(1.0)  # a measuring window, not a readiness wait
    # Parked with a backoff of up to 100 ms: a few tries per job per second, where
    # a busy loop tried hundreds of thousands of times.
    assert server.stats.snapshot_retries - before < 200


def test_a_decompression_bomb_is_refused_while_inflating(
    server: CatalogServer, dealer: zmq.Socket
) -> None:
    bomb = bytes((codec.FLAG_ZLIB,)) + zlib.compress(b"\0" * (64 << 20), 9)
    assert len(bomb) < server.config.max_request_bytes
    for _ in range(5):
        dealer.send(bomb)
    reply = codec.unpack(svc.TResponse, _recv(dealer))
    assert reply.status.code == svc.TStatusCode.ERROR
    assert "expands beyond" in reply.status.message
    wait_until(lambda: server.stats.garbage == 5, what="all five refused")


def test_a_list_bomb_is_refused(server: CatalogServer, dealer: zmq.Socket) -> None:
    names = [""] * 60_000  # 240 KB raw, a few hundred bytes compressed
    body = codec.pack(svc.TRequest(snapshot=svc.TSnapshotRequest(databases=names)))
    dealer.send(body)
    reply = codec.unpack(svc.TResponse, _recv(dealer))
    assert reply.status.code == svc.TStatusCode.ERROR
    assert "too many databases" in reply.status.message
    assert server.stats.snapshots == 0


def test_a_report_flood_is_bounded_and_expires(server: CatalogServer) -> None:
    ctx = zmq.Context.instance()
    socks = []
    try:
        for i in range(150):  # more connections than max_subscribers
            sock = ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(server.endpoint)
            socks.append(sock)
            hello = svc.TRequest(hello=svc.THello(client_id=f"fake-{i}"))
            report = svc.TSubscriberReport(
                client_id=f"fake-{i}", service_id=server.service_id, applied_version=1
            )
            sock.send(codec.pack(hello))
            sock.send(codec.pack(svc.TRequest(report=report)))
        for i in range(2000):  # reports with ids nobody joined under
            report = svc.TSubscriberReport(
                client_id=f"ghost-{i}", service_id=server.service_id, applied_version=1
            )
            socks[0].send(codec.pack(svc.TRequest(report=report)))
        wait_until(lambda: server.stats.reports_refused >= 2000, what="ghost reports refused")
        assert len(server.stats.subscribers) <= server.config.max_subscribers
        wait_until(lambda: not server.stats.subscribers, what="silent reports to expire")
    finally:
        for sock in socks:
            sock.close(linger=0)


def test_a_made_up_report_does_not_confirm_a_version(server: CatalogServer) -> None:
    server.commit({"DATABASE:a": b"a"}).result(10)
    with CatalogSubscriber(server.endpoint, client_id="driver-1") as sub:
        sub.wait_synced(20)
        wait_until(lambda: "driver-1" in server.stats.subscribers, what="a real report")
        with zmq.Context.instance().socket(zmq.DEALER) as liar:
            liar.setsockopt(zmq.LINGER, 0)
            liar.connect(server.endpoint)
            ask(liar, svc.TRequest(hello=svc.THello(client_id="driver-1")))
            report = svc.TSubscriberReport(
                client_id="driver-1", service_id=server.service_id, applied_version=10**12
            )
            for _ in range(3):
                liar.send(codec.pack(svc.TRequest(report=report)))
            wait_until(lambda: server.stats.reports_refused >= 3, what="lies refused")
        assert server.stats.subscribers["driver-1"][0] < 10**12


def test_load_requests_for_unknown_tables_are_notfound_and_not_queued(
    server: CatalogServer, dealer: zmq.Socket
) -> None:
    server.commit({"DATABASE:a": b"a", "TABLE:a.t": b"t"}).result(10)
    for i in range(200):
        load = svc.TLoadTableRequest(db_name="a", tbl_name=f"nope{i}")
        reply = ask(dealer, svc.TRequest(request_id=i, load_table=load))
        assert reply.status.code == svc.TStatusCode.NOTFOUND  # type: ignore[attr-defined]
    reply = ask(dealer, svc.TRequest(load_table=svc.TLoadTableRequest(db_name="a", tbl_name="t")))
    assert reply.status.code == svc.TStatusCode.OK  # type: ignore[attr-defined]
    assert server.loaded == [("a", "t")]  # type: ignore[attr-defined]
    assert server.stats.load_requests_unknown == 200


def _recv(sock: zmq.Socket, timeout_s: float = 10.0) -> bytes:
    assert sock.poll(int(timeout_s * 1000)), "no answer"
    return sock.recv()


def test_the_state_file_is_private_and_the_audit_log_escapes_names(tmp_path: Path) -> None:
    from catalogd.admin import audit
    from catalogd.metrics import Metrics
    from catalogd.state.schema import private_sqlite_file
    from catalogd.state.store import StateStore, sqlite_url

    url = sqlite_url(str(tmp_path / "data" / "state.db"))
    private_sqlite_file(url)
    with StateStore.open(url) as store:
        assert (tmp_path / "data" / "state.db").stat().st_mode & 0o777 == 0o600
        request = svc.TAdminRequest(
            command=svc.TAdminCommand.INVALIDATE,
            db_name="db\nforged",
            tbl_name="t\x00",
            requester="eve\r\nroot",
        )
        response = svc.TAdminResponse(
            status=svc.TStatus(code=svc.TStatusCode.NOTFOUND, message="no db\nforged.t\x00")
        )
        audit.admin_done(Metrics(), store, request, response, 0.01)
        (record,) = store.audit(1)
    text = repr(dataclasses.asdict(record))
    assert record.requester == "eve\\r\\nroot"
    assert "\x00" not in text and "\n" not in str(record.args) and "\n" not in record.outcome
