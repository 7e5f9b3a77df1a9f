"""Broadcast over real ZeroMQ sockets on loopback: server and subscribers in-process.

The payloads here are opaque bytes (the protocol never looks inside them); the
end-to-end tests drive real catalog objects from a real HMS.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import zmq
from polling import wait_until

import idl
from catalogd.addresses import free_port
from catalogd.server.thread import CatalogServer, ServerConfig
from subscriber.api import CatalogSubscriber
from subscriber.protocol import codec, wire
from subscriber.protocol.errors import ForkedProcessError
from subscriber.protocol.keys import database_of

pytestmark = pytest.mark.timeout(120)


def make_server(port: int | None = None, **kw: object) -> CatalogServer:
    bind = f"tcp://127.0.0.1:{port}" if port else "tcp://127.0.0.1:*"
    beat = kw.pop("heartbeat_interval_s", 0.2)
    config = ServerConfig(bind=bind, pub_bind="tcp://127.0.0.1:*", heartbeat_interval_s=beat, **kw)  # type: ignore[arg-type]
    return CatalogServer(config).start()


@pytest.fixture
def server() -> Iterator[CatalogServer]:
    srv = make_server()
    yield srv
    srv.close()


def catalog_state(srv: CatalogServer, dbs: set[str] | None = None) -> dict[str, bytes | None]:
    snap = srv.submit(lambda c: c.snapshot()).result(10)
    return {
        e.key: e.payload for e in snap.entries if dbs is None or database_of(e.key) in dbs | {""}
    }


def cache_state(sub: CatalogSubscriber) -> dict[str, bytes | None]:
    return {e.key: e.payload for e in sub._machine.cache.view.entries()}


def populate(srv: CatalogServer, tables: int = 50, parts: int = 20) -> None:
    changes: dict[str, bytes | None] = {"PRINCIPAL:admin.ROLE": b"role"}
    for db in ("a", "b", "c"):
        changes[f"DATABASE:{db}"] = db.encode()
        for t in range(tables):
            changes[f"TABLE:{db}.t{t}"] = b"table-%d" % t
            for p in range(parts if t < 3 else 0):
                changes[f"HDFS_PARTITION:{db}.t{t}:dt={p}"] = os.urandom(40)
    srv.commit(changes).result(10)


def test_initial_sync_and_changes_equal_the_catalog(server: CatalogServer) -> None:
    populate(server)
    with CatalogSubscriber(server.endpoint) as sub:
        sub.wait_synced(20)
        assert sub.service_id == server.service_id
        assert cache_state(sub) == catalog_state(server)
        delta = server.commit(
            {"TABLE:a.t1": b"changed", "TABLE:b.t2": None, "HDFS_PARTITION:a.t0:dt=99": b"new"}
        ).result(10)
        sub.wait_for_version(delta.to_version, 10)
        assert cache_state(sub) == catalog_state(server)
        assert sub.lag_seconds == 0.0 and not sub.is_stale


def test_a_protocol_2_catalogds_two_frame_publications_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A catalogd of protocol 2 sends topic and body as two frames (one since protocol 3):
    a subscriber still follows it, deltas, commits and heartbeats alike."""

    class TwoFrames:  # what the server thread's PUB sends, as protocol 2 framed it
        def __init__(self, pub: zmq.Socket) -> None:
            self.pub = pub

        def send(self, frame: bytes, flags: int = 0, copy: bool = True) -> None:
            self.pub.send_multipart(list(wire.split_publication(frame)), flags, copy=copy)

    publish, heartbeat = CatalogServer._publish, CatalogServer._heartbeat
    monkeypatch.setattr(CatalogServer, "_publish", lambda s, p, d: publish(s, TwoFrames(p), d))
    monkeypatch.setattr(CatalogServer, "_heartbeat", lambda s, p: heartbeat(s, TwoFrames(p)))
    srv = make_server()
    try:
        populate(srv)
        with CatalogSubscriber(srv.endpoint) as sub:
            sub.wait_synced(20)  # the join waits for a heartbeat: read in two frames
            delta = srv.commit({"TABLE:a.t1": b"changed", "TABLE:b.t2": None}).result(10)
            sub.wait_for_version(delta.to_version, 10)
            assert cache_state(sub) == catalog_state(srv)
            assert sub.stats.garbage == 0
    finally:
        srv.close()


def test_subscriber_started_before_catalogd() -> None:
    port = free_port()
    sub = CatalogSubscriber(f"tcp://127.0.0.1:{port}").start()
    try:
        time.sleep(0.5)  # let it try (and fail) to reach nobody
        assert not sub.is_synced
        srv = make_server(port)
        try:
            populate(srv, tables=5)
            sub.wait_synced(20)
            wait_until(lambda: sub.version == srv.submit(lambda c: c.version).result(), what="sync")
            assert cache_state(sub) == catalog_state(srv)
        finally:
            srv.close()
    finally:
        sub.close()


def test_restarted_catalogd_is_resynced_with_its_new_service_id() -> None:
    port = free_port()
    first = make_server(port)
    populate(first, tables=5)
    sub = CatalogSubscriber(f"tcp://127.0.0.1:{port}").start()
    try:
        sub.wait_synced(20)
        old_id = sub.service_id
        first.close()
        wait_until(lambda: sub.is_stale, what="stale after silence")
        assert cache_state(sub)  # reads still answer while stale
        second = make_server(port)
        try:
            second.commit({"DATABASE:fresh": b"1", "TABLE:fresh.t": b"2"}).result(10)
            wait_until(lambda: sub.service_id == second.service_id, what="new service id")
            wait_until(lambda: cache_state(sub) == catalog_state(second), what="resync")
            assert sub.service_id != old_id and not sub.is_stale
            assert sub.stats.service_ids[-2:] == [old_id, second.service_id]
        finally:
            second.close()
    finally:
        sub.close()


def test_burst_into_a_tiny_hwm_is_detected_and_repaired() -> None:
    server = make_server(pub_hwm=10)
    populate(server, tables=5)
    with CatalogSubscriber(server.endpoint, rcvhwm=2) as sub:
        sub.wait_synced(20)
        sub.add_listener(lambda event: time.sleep(0.0005))  # a slow consumer
        last = None
        for i in range(10_000):
            last = server.commit({f"TABLE:a.burst{i % 500}": b"v%d" % i})
        assert last is not None
        version = last.result(30).to_version
        sub.wait_for_version(version, 60)
        wait_until(lambda: cache_state(sub) == catalog_state(server), what="repair")
        assert sub.gaps > 0, "a 2-message HWM under a 10,000-delta burst must drop"
    server.close()


def test_filtered_subscriber_gets_only_its_databases_and_detects_loss() -> None:
    # The consumer stalls until everything is published (well within its 3-heartbeat
    # stale limit), and a's payloads do not compress: the burst overflows the kernel's
    # socket buffers and both HWMs whatever the scheduling, so parts are lost for sure.
    server = make_server(pub_hwm=10, heartbeat_interval_s=2.0)
    populate(server, tables=5)
    seen: list[str] = []
    published = threading.Event()

    def slow(event: object) -> None:
        seen.append(event.key)  # type: ignore[attr-defined]
        published.wait(5)

    with CatalogSubscriber(server.endpoint, databases=["a"], rcvhwm=2) as sub:
        sub.wait_synced(20)
        assert cache_state(sub) == catalog_state(server, {"a"})
        sub.add_listener(slow)
        last = None
        for i in range(3000):
            db = "abc"[i % 3]
            payload = os.urandom(2048) if db == "a" else b"v%d" % i
            last = server.commit({f"TABLE:{db}.f{i % 100}": payload})
        assert last is not None
        version = last.result(30).to_version
        published.set()
        sub.wait_for_version(version, 60)
        wait_until(lambda: cache_state(sub) == catalog_state(server, {"a"}), what="repair")
        assert sub.gaps > 0
        assert {database_of(k) for k in seen} <= {"a", ""}
        assert sub.list_databases() == ["a"]
    server.close()


def test_publisher_filters_by_topic_prefix(server: CatalogServer) -> None:
    """Bytes of other databases never reach a filtered SUB (filtering at the publisher)."""
    ctx = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    try:
        for prefix in wire.subscriptions(["a"]):
            sub.setsockopt(zmq.SUBSCRIBE, prefix)
        sub.connect(server.pub_endpoint)
        wait_until(lambda: sub.poll(50) != 0, what="subscription live")
        server.commit({"TABLE:a.x": b"1", "TABLE:ab.y": b"2", "TABLE:b.z": b"3"}).result(10)
        topics = set()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            if sub.poll(50):
                topics.add(wire.split_publication(sub.recv())[0])  # one frame each
        assert wire.delta_topic("a") in topics
        assert not {wire.delta_topic("ab"), wire.delta_topic("b")} & topics
    finally:
        sub.close(linger=0)


def test_garbage_on_the_router_is_counted_and_survived(server: CatalogServer) -> None:
    populate(server, tables=2)
    ctx = zmq.Context.instance()
    dealer = ctx.socket(zmq.DEALER)
    raw = socket.create_connection(("127.0.0.1", int(server.endpoint.rsplit(":", 1)[1])))
    try:
        dealer.connect(server.endpoint)
        dealer.send(os.urandom(100))  # not a packed TRequest
        dealer.send_multipart([b"a", b"b", b"c"])  # wrong frame count
        dealer.send(b"\x01" + os.urandom(50))  # claims zlib, is not
        dealer.send(codec.pack(idl.catalog_service.TRequest()))
        dealer.send(b"x" * (2 << 20))  # beyond MAXMSGSIZE: libzmq drops the peer
        raw.sendall(os.urandom(4096))  # not even ZMTP
        wait_until(lambda: server.stats.garbage >= 3, what="garbage counted")
        with CatalogSubscriber(server.endpoint) as sub:
            sub.wait_synced(20)
            assert cache_state(sub) == catalog_state(server)
    finally:
        dealer.close(linger=0)
        raw.close()


def test_garbage_sent_to_a_subscriber_is_counted_and_survived() -> None:
    """A rogue 'catalogd' welcomes the subscriber and then speaks nonsense."""
    ctx = zmq.Context.instance()
    router = ctx.socket(zmq.ROUTER)
    pub = ctx.socket(zmq.PUB)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    pub_port = pub.bind_to_random_port("tcp://127.0.0.1")
    svc = idl.catalog_service
    stop = threading.Event()

    def rogue() -> None:
        while not stop.is_set():
            if router.poll(20):
                identity, *_ = router.recv_multipart()
                welcome = svc.TWelcome(
                    service_id="rogue",
                    pub_endpoint=f"tcp://127.0.0.1:{pub_port}",
                    version=0,
                    heartbeat_interval_ms=200,
                )
                router.send_multipart(
                    [
                        identity,
                        codec.pack(svc.TResponse(status=svc.TStatus(code=0), welcome=welcome)),
                    ]
                )
                router.send_multipart([identity, os.urandom(64)])
                router.send_multipart([identity, b"1", b"2"])
            pub.send_multipart([b"h", os.urandom(30)])
            pub.send_multipart([b"dx\0", b"\x00" + os.urandom(300)])
            pub.send_multipart([b"c", b"\x01" + os.urandom(20), b"extra"])
            pub.send_multipart([b"zz", b""])
            pub.send(b"h")  # a topic without a body
            pub.send_multipart([b"dx\0", b"\x00", b"\x00" + os.urandom(30)])  # a frame too many
            pub.send(b"dx" + os.urandom(50).replace(b"\0", b""))  # a topic without its end
            pub.send(b"dx\0\x00" + os.urandom(300))  # protocol 3's one frame, garbage inside
            pub.send(b"h\x00" + os.urandom(30))

    thread = threading.Thread(target=rogue, daemon=True)
    thread.start()
    sub = CatalogSubscriber(f"tcp://127.0.0.1:{port}").start()
    try:
        wait_until(lambda: sub.stats.garbage > 20, what="garbage counted")
        assert sub._transport._thread.is_alive()
        assert sub.version == 0
    finally:
        stop.set()
        thread.join(5)
        sub.close()
        router.close(linger=0)
        pub.close(linger=0)


def test_listener_that_raises_never_kills_the_thread(server: CatalogServer) -> None:
    with CatalogSubscriber(server.endpoint) as sub:
        good: list[str] = []

        def bad(event: object) -> None:
            raise RuntimeError("listener bug")

        sub.add_listener(bad)
        sub.add_listener(lambda e: good.append(e.key))
        sub.wait_synced(20)
        delta = server.commit({"TABLE:a.l": b"1"}).result(10)
        sub.wait_for_version(delta.to_version, 10)
        wait_until(lambda: "TABLE:a.l" in good, what="second listener called")
        assert sub._transport._thread.is_alive()


def test_forked_child_gets_a_clear_error(server: CatalogServer) -> None:
    with CatalogSubscriber(server.endpoint) as sub:
        sub.wait_synced(20)
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: must refuse, not reuse the parent's sockets
            try:
                sub.version  # noqa: B018
                os.write(write_fd, b"no error")
            except ForkedProcessError:
                os.write(write_fd, b"ForkedProcessError")
            finally:
                os._exit(0)
        os.close(write_fd)
        os.waitpid(pid, 0)
        assert os.read(read_fd, 100) == b"ForkedProcessError"
        os.close(read_fd)
        assert sub.version > 0 or sub.is_synced
