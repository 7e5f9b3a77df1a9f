"""catalogd under a (simulated) systemd: notify protocol, reload, graceful stop, metrics."""

from __future__ import annotations

import contextlib
import signal
import socket
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from polling import wait_until
from support.catalogd_process import CatalogdProcess

import idl
from catalogd.addresses import free_port
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.api import CatalogSubscriber
from subscriber.cache import ChangeEvent

pytestmark = [pytest.mark.hms, pytest.mark.timeout(300)]
hms_thrift = idl.hive_metastore


class NotifySocket:
    """The manager's end of sd_notify: a unix datagram socket collecting messages."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.1)
        self.messages: list[str] = []

    def collect_until(self, predicate, timeout: float) -> None:  # noqa: ANN001
        deadline = time.monotonic() + timeout
        while not predicate(self.messages):
            if time.monotonic() > deadline:
                raise AssertionError(f"notify messages so far: {self.messages}")
            with contextlib.suppress(TimeoutError):
                self.messages.append(self.sock.recv(4096).decode())

    def close(self) -> None:
        self.sock.close()


def has(prefix: str):  # noqa: ANN201
    return lambda msgs: any(m.startswith(prefix) or f"\n{prefix}" in m for m in msgs)


def test_notify_sequence_reload_and_graceful_stop(hms: EmbeddedMetastore, tmp_path: Path) -> None:
    notify = NotifySocket(tmp_path / "notify.sock")
    config = tmp_path / "catalogd.toml"
    config.write_text('[log]\nlevel = "INFO"\n[detector]\npoll_interval_s = 5.0\n')
    proc = CatalogdProcess(
        hms.uri,
        tmp_path / "catalogd",
        extra=["--config", str(config), "--change-detection", "off"],
        env={"NOTIFY_SOCKET": str(notify.path), "WATCHDOG_USEC": "2000000"},
    )
    try:
        proc.start()
        notify.collect_until(has("READY=1"), 30)
        ready_at = next(i for i, m in enumerate(notify.messages) if "READY=1" in m)
        notify.collect_until(lambda msgs: sum("WATCHDOG=1" in m for m in msgs) >= 2, 10)
        assert any(m.startswith("STATUS=version") or "STATUS=version" in m for m in notify.messages)
        with CatalogSubscriber(proc.endpoint) as sub:
            sub.wait_synced(30)
            heartbeats: list[ChangeEvent] = []
            sub.add_listener(heartbeats.append)
            # SIGHUP: re-read the file; a live key changes, a restart key is named.
            config.write_text(
                '[log]\nlevel = "DEBUG"\n[detector]\npoll_interval_s = 2.0\n'
                "[loader]\npool_size = 2\n"
            )
            assert proc.proc is not None
            proc.proc.send_signal(signal.SIGHUP)
            notify.collect_until(has("RELOADING=1"), 10)
            reloading = next(m for m in notify.messages if "RELOADING=1" in m)
            assert "MONOTONIC_USEC=" in reloading
            notify.collect_until(
                lambda msgs: (
                    msgs[-1].startswith("READY=1")
                    or any("READY=1" in m for m in msgs[msgs.index(reloading) + 1 :])
                ),
                10,
            )
            log_text = proc.log_path.read_text()
            assert "reloaded configuration" in log_text and "loader.pool_size" in log_text
            # Background table loads publish until every table is loaded; the stop
            # below must publish nothing new, so start from a fully loaded catalog.
            proc.wait_loaded()
            code, status, out = proc.admin("status")
            assert code == 0, out
            sub.wait_for_version(status["detail"]["version"], 30)
            last_version = sub.version
            started = time.monotonic()
            proc.proc.send_signal(signal.SIGTERM)
            notify.collect_until(has("STOPPING=1"), 10)
            code = proc.proc.wait(20)
            assert code == 0
            assert time.monotonic() - started < 20
            assert sub.version == last_version  # the final heartbeat announced nothing new
        assert (
            notify.messages.index(next(m for m in notify.messages if "STOPPING=1" in m)) > ready_at
        )
        assert "stopped" in proc.log_path.read_text()
    finally:
        proc.kill()
        notify.close()


def test_metrics_move_with_subscribers_and_admin_commands(
    hms: EmbeddedMetastore, tmp_path: Path
) -> None:
    port = free_port()
    proc = CatalogdProcess(
        hms.uri,
        tmp_path / "catalogd",
        extra=["--metrics-bind", f"127.0.0.1:{port}", "--change-detection", "off"],
    ).start()
    try:
        proc.wait_loaded()

        def scrape() -> dict[str, float]:
            text = (
                urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10)
                .read()
                .decode()
            )
            values = {}
            for line in text.splitlines():
                if line and not line.startswith("#"):
                    name, _, value = line.rpartition(" ")
                    values[name] = float(value)
            return values

        before = scrape()
        assert before["catalogd_catalog_version"] > 0
        with CatalogSubscriber(proc.endpoint) as sub:
            sub.wait_synced(30)
            with MetastoreClient(hms.uri) as client:  # something for invalidate to publish
                db = f"metrics_{uuid.uuid4().hex[:6]}"
                client.raw.create_database(
                    hms_thrift.Database(
                        name=db, description="", locationUri=f"file:/tmp/{db}", parameters={}
                    )
                )
            code, answer, out = proc.admin("invalidate")
            assert code == 0, out
            version = answer["version"]
            sub.wait_for_version(version, 30)
            # The supervision loop copies the stats once a second.
            wait_until(
                lambda: scrape().get("catalogd_catalog_version", 0) >= version, what="metrics"
            )
            after = scrape()
        assert after["catalogd_catalog_version"] >= version
        assert after['catalogd_admin_commands_total{command="invalidate",outcome="ok"}'] == 1
        assert (
            after["catalogd_snapshot_requests_total"]
            >= before.get("catalogd_snapshot_requests_total", 0) + 1
        )
        assert after["catalogd_published_bytes_total"] > before.get(
            "catalogd_published_bytes_total", 0
        )
        assert any(k.startswith("catalogd_hms_calls_total") for k in after)
        assert any(
            k.startswith("catalogd_subscriber_lag") or k.startswith("catalogd_subscribers")
            for k in after
        )
    finally:
        proc.stop()
