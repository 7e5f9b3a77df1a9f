"""systemd's notify protocol, received on a real unix datagram socket standing in for systemd."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from catalogd.notify import Notifier


class FakeManager:
    """The receiving end systemd would own: a bound unix datagram socket."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + address[1:] if address.startswith("@") else address)
        self.sock.settimeout(5.0)

    def receive(self) -> bytes:
        return self.sock.recv(4096)

    def pending(self) -> bool:
        self.sock.setblocking(False)
        try:
            self.sock.recv(4096, socket.MSG_PEEK)
            return True
        except BlockingIOError:
            return False
        finally:
            self.sock.settimeout(5.0)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    # Short path: unix socket addresses are limited to 107 bytes.
    with tempfile.TemporaryDirectory(prefix="sdn") as name:
        yield Path(name)


@pytest.fixture
def manager(socket_dir: Path) -> Iterator[FakeManager]:
    fake = FakeManager(str(socket_dir / "notify"))
    yield fake
    fake.close()


def test_lifecycle_messages_arrive_in_order(manager: FakeManager) -> None:
    with Notifier({"NOTIFY_SOCKET": manager.address}) as notifier:
        assert notifier.enabled
        notifier.ready("version 12: 3 databases, 40 tables")
        notifier.watchdog()
        notifier.status("loading")
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        notifier.reloading("reloading configuration")
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        notifier.ready()
        notifier.stopping()

    assert manager.receive() == b"READY=1\nSTATUS=version 12: 3 databases, 40 tables"
    assert manager.receive() == b"WATCHDOG=1"
    assert manager.receive() == b"STATUS=loading"
    reloading = manager.receive().split(b"\n")
    assert reloading[0] == b"RELOADING=1"
    assert reloading[1].startswith(b"MONOTONIC_USEC=")
    assert before <= int(reloading[1].split(b"=")[1]) <= after
    assert reloading[2] == b"STATUS=reloading configuration"
    assert manager.receive() == b"READY=1"
    assert manager.receive() == b"STOPPING=1"
    assert not manager.pending()


def test_status_is_one_line_of_utf8(manager: FakeManager) -> None:
    with Notifier({"NOTIFY_SOCKET": manager.address}) as notifier:
        notifier.status("table caf\u00e9.\u8868 loaded\nnext line")
    assert manager.receive() == "STATUS=table caf\u00e9.\u8868 loaded next line".encode()


def test_abstract_namespace_address() -> None:
    fake = FakeManager(f"@catalogd-test-{os.getpid()}-{time.monotonic_ns()}")
    try:
        with Notifier({"NOTIFY_SOCKET": fake.address}) as notifier:
            notifier.ready()
        assert fake.receive() == b"READY=1"
    finally:
        fake.close()


def test_without_notify_socket_everything_is_a_no_op() -> None:
    notifier = Notifier({"WATCHDOG_USEC": "30000000"})
    assert not notifier.enabled
    assert notifier.watchdog_interval_s() is None
    notifier.ready("x")
    notifier.watchdog()
    notifier.reloading()
    notifier.stopping()
    notifier.close()
    notifier.close()


@pytest.mark.parametrize(
    ("env", "interval"),
    [
        ({"WATCHDOG_USEC": "30000000"}, 15.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4242"}, 15.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4243"}, None),  # another process's
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({}, None),
    ],
)
def test_watchdog_interval_is_half_the_timeout(
    manager: FakeManager, env: dict[str, str], interval: float | None
) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": manager.address, **env}, pid=4242)
    assert notifier.watchdog_interval_s() == interval


def test_lost_manager_is_logged_once_and_later_reached_again(
    socket_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    address = str(socket_dir / "gone")
    notifier = Notifier({"NOTIFY_SOCKET": address})
    with caplog.at_level(logging.DEBUG, logger="catalogd.notify"):
        notifier.watchdog()  # nobody listening: dropped, not raised
        notifier.watchdog()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert address in warnings[0].getMessage()

    fake = FakeManager(address)  # the manager is back
    try:
        notifier.watchdog()
        assert fake.receive() == b"WATCHDOG=1"
    finally:
        notifier.close()
        fake.close()


@pytest.mark.skipif(shutil.which("systemd-notify") is None, reason="systemd-notify missing")
def test_same_datagrams_as_libsystemd(manager: FakeManager) -> None:
    """systemd's own client (libsystemd's sd_notify) is the reference for the bytes."""
    env = {**os.environ, "NOTIFY_SOCKET": manager.address}
    with Notifier({"NOTIFY_SOCKET": manager.address}) as notifier:
        for theirs, ours in [
            (["--ready", "--status=version 7: 2 databases"],
             lambda: notifier.ready("version 7: 2 databases")),
            (["WATCHDOG=1"], notifier.watchdog),
            (["STOPPING=1"], notifier.stopping),
        ]:  # fmt: skip
            subprocess.run(["systemd-notify", "--no-block", *theirs], env=env, check=True,
                           timeout=30)  # fmt: skip
            expected = manager.receive()
            ours()
            assert manager.receive() == expected
