"""Only known keys read the catalog or change it: real CURVE sockets on loopback.

The set-up is the daemon's own (``Security.open`` over a ``Config``, the server
and admin sockets on its context, the daemon's audit hooks over a real SQLite
state store); only the admin handlers are small stand-ins, so no HMS is needed.
Waits poll a real condition; "receives nothing" is checked against a control
peer that does receive in the same window.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import zmq
import zmq.auth
from polling import wait_until

import idl
from catalogd.addresses import free_port
from catalogd.admin import audit
from catalogd.admin.barrier import SubscriberBarrier
from catalogd.admin.client import AdminClient
from catalogd.admin.endpoint import AdminResult, AdminServer
from catalogd.config import Config, ConfigError, ListenConfig, SecurityConfig
from catalogd.metrics import Metrics
from catalogd.security.keys import generate
from catalogd.security.runtime import Security
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.state.store import StateStore
from subscriber import curve
from subscriber.api import CatalogSubscriber
from subscriber.protocol import codec
from subscriber.protocol.errors import AuthenticationError

pytestmark = pytest.mark.timeout(60)
svc = idl.catalog_service
Cmd = svc.TAdminCommand
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Keys:
    own: Path  # every pair, as generated
    subscribers: Path
    admin: Path

    def secret(self, name: str) -> Path:
        return self.own / f"{name}.key_secret"

    @property
    def server(self) -> Path:
        return self.own / "server.key"


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    own = tmp_path / "own"
    for name in ("server", "alice", "bob", "root", "ops", "mallory"):
        generate(name, own)
    subscribers, admin = tmp_path / "subscribers", tmp_path / "admin"
    subscribers.mkdir()
    admin.mkdir()
    for name in ("alice", "bob"):
        shutil.copy(own / f"{name}.key", subscribers)
    shutil.copy(own / "root.key", admin)
    shutil.copy(own / "ops.key", admin)
    return Keys(own, subscribers, admin)


@dataclass
class Daemon:
    security: Security
    server: CatalogServer
    admin: AdminServer
    store: StateStore


@pytest.fixture(params=["curve", "plain"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def start(keys: Keys | None, tmp_path: Path) -> Iterator[Daemon]:
    sec = (
        SecurityConfig(keys.own / "server.key_secret", keys.subscribers, keys.admin)
        if keys
        else SecurityConfig()
    )
    config = Config(
        server=ListenConfig(bind="tcp://127.0.0.1:*", admin_bind="tcp://127.0.0.1:*"),
        security=sec,
    )
    security = Security.open(config)
    store = StateStore.open(f"sqlite:///{tmp_path / 'state.db'}")
    security.on_refused = lambda *args: audit.record_refusal(store, *args)
    server = CatalogServer(
        ServerConfig(
            bind="tcp://127.0.0.1:*",
            pub_bind="tcp://127.0.0.1:*",
            heartbeat_interval_s=0.2,
            curve=security.server_curve,
        ),
        context=security.context,
    )
    server.commit({"DATABASE:a": b"a"}).result()
    server.start()
    barrier = SubscriberBarrier(lambda: dict(server.stats.subscribers), dead_after_s=5)

    def invalidate(request: Any) -> AdminResult:
        return AdminResult(server.commit({"DATABASE:x": os.urandom(8)}).result(10).to_version)

    metrics = Metrics()
    admin = AdminServer(
        "tcp://127.0.0.1:*",
        {Cmd.STATUS: lambda request: AdminResult(None, {"up": True}), Cmd.INVALIDATE: invalidate},
        barrier,
        on_done=lambda req, resp, s: audit.admin_done(metrics, store, req, resp, s),
        context=security.context,
        curve=security.admin_curve,
    ).start()
    security.on_revoked = {"subscribers": server.drop_connections, "admin": admin.drop_connections}
    try:
        yield Daemon(security, server, admin, store)
    finally:
        admin.close()
        server.close()
        security.close()
        store.close()


@pytest.fixture
def secure(keys: Keys, tmp_path: Path) -> Iterator[Daemon]:
    yield from start(keys, tmp_path)


@pytest.fixture
def either(mode: str, keys: Keys, tmp_path: Path) -> Iterator[Daemon]:
    yield from start(keys if mode == "curve" else None, tmp_path)


def subscriber(d: Daemon, keys: Keys, name: str | None, server_key: Path | None = None) -> Any:
    if name is None:
        return CatalogSubscriber(d.server.endpoint, client_id="nokey").start()
    return CatalogSubscriber(
        d.server.endpoint,
        client_id=name,
        server_key=server_key or keys.server,
        client_key=keys.secret(name),
    ).start()


def test_allowed_subscriber_syncs_others_get_nothing_and_are_told_why(
    secure: Daemon, keys: Keys
) -> None:
    alice = subscriber(secure, keys, "alice")
    strangers = {
        "unknown key": subscriber(secure, keys, "mallory"),
        "no key": subscriber(secure, keys, None),
        "wrong server key": subscriber(secure, keys, "bob", server_key=keys.own / "root.key"),
    }
    try:
        alice.wait_synced(20)
        version = secure.server.commit({"DATABASE:b": b"b"}).result(10).to_version
        alice.wait_for_version(version, 20)
        wait_until(lambda: all(s.last_error for s in strangers.values()), 20, "refusals")
        for why, sub in strangers.items():
            assert not sub.is_synced, why
            assert sub.version == 0, why
            assert isinstance(sub.last_error, AuthenticationError), why
        assert "refused this client's key" in str(strangers["unknown key"].last_error)
        assert "catalogd requires CURVE keys" in str(strangers["no key"].last_error)
        assert "wrong server key" in str(strangers["wrong server key"].last_error)
        assert alice.last_error is None
        assert secure.security.failures()["subscribers"] >= 1
        wait_until(lambda: "alice" in secure.server.stats.subscribers, 10, "alice's report")
        assert secure.server.subscriber_keys()["alice"] == "alice"
    finally:
        for sub in (alice, *strangers.values()):
            sub.close()


def raw_sub(d: Daemon, keys: Keys, name: str) -> zmq.Socket:
    sock = d.security.context.socket(zmq.SUB)  # type: ignore[union-attr]
    sock.setsockopt(zmq.LINGER, 0)
    curve.apply(sock, curve.client_keys(keys.server, keys.secret(name)))
    sock.setsockopt(zmq.SUBSCRIBE, b"")
    sock.connect(d.server.pub_endpoint)
    return sock


def test_the_publisher_sends_nothing_to_a_key_it_does_not_know(secure: Daemon, keys: Keys) -> None:
    allowed, stranger = raw_sub(secure, keys, "alice"), raw_sub(secure, keys, "mallory")
    try:
        assert allowed.poll(10_000), "the allowed key gets heartbeats"
        for _ in range(5):  # five more heartbeats reach the allowed key meanwhile
            allowed.recv_multipart()
            assert allowed.poll(10_000)
            assert not stranger.poll(0)
    finally:
        allowed.close(0)
        stranger.close(0)


def test_admin_key_works_subscriber_key_is_refused_both_audited_by_key_name(
    secure: Daemon, keys: Keys
) -> None:
    endpoint = secure.admin.endpoint
    root = AdminClient(
        endpoint, timeout_s=10, keys=curve.client_keys(keys.server, keys.secret("root"))
    )
    answer = root.call(Cmd.INVALIDATE, requester="someone-else")
    assert answer.status.code == svc.TStatusCode.OK
    alice = AdminClient(
        endpoint, timeout_s=10, keys=curve.client_keys(keys.server, keys.secret("alice"))
    )
    with pytest.raises(AuthenticationError, match="refused this client's key"):
        alice.call(Cmd.INVALIDATE, requester="root")
    with pytest.raises(AuthenticationError):
        AdminClient(endpoint, timeout_s=10).call(Cmd.STATUS)  # no key at all
    wait_until(lambda: len(secure.store.audit(10)) >= 2, 10, "both audit records")
    records = {r.requester: r for r in secure.store.audit(10)}
    assert records["root"].outcome == "ok" and records["root"].command == "invalidate"
    assert records["alice"].outcome.startswith("refused")
    assert "someone-else" not in records
    assert secure.security.failures()["admin"] >= 1


def test_revocation_cuts_a_live_subscriber_off_and_it_cannot_reconnect(
    secure: Daemon, keys: Keys
) -> None:
    alice, bob = subscriber(secure, keys, "alice"), subscriber(secure, keys, "bob")
    try:
        alice.wait_synced(20)
        bob.wait_synced(20)
        (keys.subscribers / "alice.key").unlink()
        # What the daemon does on SIGHUP (catalogd.supervision.supervise).
        assert secure.security.reload() == {"subscribers": {"alice"}}
        wait_until(lambda: alice.last_error is not None, 20, "alice to be refused")
        version = secure.server.commit({"DATABASE:c": b"c"}).result(10).to_version
        bob.wait_for_version(version, 20)  # bob reconnects by himself and catches up
        wait_until(lambda: alice.is_stale, 20, "alice to go stale")
        assert alice.version < version
        assert isinstance(alice.last_error, AuthenticationError)
        assert "alice" not in secure.security.status()["subscriber_keys"]
    finally:
        alice.close()
        bob.close()


def test_a_world_readable_secret_key_is_refused_with_a_clear_message(
    keys: Keys, tmp_path: Path
) -> None:
    secret = keys.own / "server.key_secret"
    assert secret.stat().st_mode & 0o777 == 0o600
    _, material = zmq.auth.load_certificate(secret)
    secret.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600") as caught:
        list(start(keys, tmp_path))
    assert material.decode() not in str(caught.value)


def test_non_loopback_bind_without_keys_refuses_to_start(tmp_path: Path) -> None:
    port = free_port()
    (tmp_path / "none.toml").write_text("")
    result = subprocess.run(
        [sys.executable, "-m", "catalogd.cli", "serve", "--data-dir", str(tmp_path)]
        + ["--bind", f"tcp://0.0.0.0:{port}", "--config", str(tmp_path / "none.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CATALOGD_CONFIG": ""},
    )
    assert result.returncode == 2, result.stderr
    for words in ("--insecure", "--server-key", "--subscriber-keys", "--admin-keys"):
        assert words in result.stderr
    assert not (tmp_path / "hms").exists()  # refused before anything started


# -- hostile bytes, with CURVE on and off


def raw_tcp(endpoint: str, payload: bytes) -> None:
    host, _, port = endpoint.split("://", 1)[1].rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        conn.sendall(payload)
    # closing mid-message is the "half message"


ZMTP_GREETING = b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00")
HOSTILE = [
    os.urandom(4096),  # not ZMTP at all
    ZMTP_GREETING[:7],  # half a greeting
    ZMTP_GREETING + b"\x00" + b"\x00" * 31,  # a greeting, then half a command
    ZMTP_GREETING + b"\x06" + (2**62).to_bytes(8, "big"),  # a frame claiming 4 EiB
]


def test_garbage_oversized_and_half_messages_are_dropped_and_nothing_breaks(
    either: Daemon, keys: Keys, mode: str
) -> None:
    d = either
    for endpoint in (d.server.endpoint, d.server.pub_endpoint, d.admin.endpoint):
        for payload in HOSTILE:
            raw_tcp(endpoint, payload)
    client_keys = curve.client_keys(keys.server, keys.secret("alice")) if mode == "curve" else None
    # An authenticated peer sending junk: counted and dropped.
    ctx = d.security.context or zmq.Context.instance()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    curve.apply(dealer, client_keys)
    dealer.connect(d.server.endpoint)
    before = d.server.stats.garbage
    dealer.send_multipart([b"\x00junk", b"two frames"])
    dealer.send(b"\x99not thrift")
    dealer.send(b"x" * (d.server.config.max_request_bytes + 1))  # oversized: ZMQ drops it
    wait_until(lambda: d.server.stats.garbage >= before + 2, 10, "the junk to be counted")
    dealer.close(0)
    admin_keys = curve.client_keys(keys.server, keys.secret("root")) if mode == "curve" else None
    admin_dealer = ctx.socket(zmq.DEALER)
    admin_dealer.setsockopt(zmq.LINGER, 0)
    curve.apply(admin_dealer, admin_keys)
    admin_dealer.connect(d.admin.endpoint)
    admin_dealer.send_multipart([b"a", b"b", b"c", b"d"])
    admin_dealer.send(b"\x99not thrift")
    wait_until(lambda: d.admin.garbage >= 2, 10, "admin junk to be counted")
    admin_dealer.close(0)
    # Still serving: a subscriber syncs, admin answers.
    sub = CatalogSubscriber(
        d.server.endpoint,
        server_key=keys.server if mode == "curve" else None,
        client_key=keys.secret("bob") if mode == "curve" else None,
    ).start()
    try:
        sub.wait_synced(20)
    finally:
        sub.close()
    admin = AdminClient(d.admin.endpoint, timeout_s=10, keys=admin_keys)
    assert admin.call(Cmd.STATUS).status.code == svc.TStatusCode.OK
    assert len(d.server._members.joined) <= 2  # bounded: only real joins are remembered


def test_a_report_counts_only_from_the_key_that_joined_under_that_client_id(
    secure: Daemon, keys: Keys
) -> None:
    alice = subscriber(secure, keys, "alice")
    try:
        alice.wait_synced(20)
        wait_until(lambda: "alice" in secure.server.stats.subscribers, 10, "alice's report")
        ctx = secure.security.context
        assert ctx is not None
        bob = ctx.socket(zmq.DEALER)
        bob.setsockopt(zmq.LINGER, 0)
        curve.apply(bob, curve.client_keys(keys.server, keys.secret("bob")))
        bob.connect(secure.server.endpoint)
        refused = secure.server.stats.reports_refused
        forged = svc.TSubscriberReport(
            client_id="alice", service_id=secure.server.service_id, applied_version=10**9
        )
        bob.send(codec.pack(svc.TRequest(report=forged)))
        wait_until(lambda: secure.server.stats.reports_refused > refused, 10, "the forged report")
        assert secure.server.stats.subscribers["alice"][0] < 10**9
        assert secure.server.subscriber_keys()["alice"] == "alice"
        bob.close(0)
    finally:
        alice.close()


@pytest.mark.parametrize(
    ("flags", "says"),
    [([], "requires CURVE keys"), (["mallory"], "refused this client's key")],
)
def test_watch_says_why_it_cannot_sync(
    secure: Daemon, keys: Keys, flags: list[str], says: str
) -> None:
    args = [sys.executable, "-m", "subscriber", "watch", secure.server.endpoint]
    if flags:
        args += ["--server-key", str(keys.server), "--key", str(keys.secret(flags[0]))]
    result = subprocess.run(
        [*args, "--sync-timeout", "3"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 3 and says in result.stderr


def test_revoking_an_admin_key_cuts_its_open_connection(secure: Daemon, keys: Keys) -> None:
    def dealer(name: str) -> zmq.Socket:
        sock = secure.security.context.socket(zmq.DEALER)  # type: ignore[union-attr]
        sock.setsockopt(zmq.LINGER, 0)
        curve.apply(sock, curve.client_keys(keys.server, keys.secret(name)))
        sock.connect(secure.admin.endpoint)
        return sock

    status = codec.pack(svc.TAdminRequest(command=Cmd.STATUS))
    root, ops = dealer("root"), dealer("ops")
    try:
        root.send(status)
        assert root.poll(10_000), "root is an admin"
        root.recv_multipart()
        (keys.admin / "root.key").unlink()
        assert secure.security.reload() == {"admin": {"root"}}
        wait_until(lambda: secure.security.failures()["admin"] >= 1, 10, "root's reconnect refused")
        # On the connection root held open; with no authenticated pipe left a
        # blocking send would wait forever, so try without blocking.
        with contextlib.suppress(zmq.Again):
            root.send(status, zmq.DONTWAIT)
        ops.send(status)
        assert ops.poll(10_000), "the other admin key still works"
        assert not root.poll(1000)
    finally:
        root.close(0)
        ops.close(0)
