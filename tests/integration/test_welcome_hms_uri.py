"""The HMS address catalogd reports in its welcome (issue 23 item 8), over real sockets:
``CatalogSubscriber.hms_uri`` follows the catalogd it synced with, and the sidecar
without ``--upstream`` refuses clearly when catalogd reports none."""

from __future__ import annotations

import logging
import subprocess
import sys
import time

import pytest

from catalogd.server.thread import CatalogServer, ServerConfig
from subscriber.api import CatalogSubscriber
from subscriber.metastore import cli
from subscriber.metastore.cli import NO_HMS
from subscriber.protocol.errors import InvalidRequestError

pytestmark = pytest.mark.timeout(60)


def start(hms_uri: str | None, port: str = "*") -> CatalogServer:
    config = ServerConfig(
        bind=f"tcp://127.0.0.1:{port}",
        pub_bind="tcp://127.0.0.1:*",
        heartbeat_interval_s=0.1,
        hms_uri=hms_uri,
    )
    server = CatalogServer(config)
    server.commit({"DATABASE:d": b"1"}).result(10)
    return server.start()


def test_hms_uri_is_none_until_synced_then_follows_the_catalogd() -> None:
    first = start("thrift://hms-a.example:9083")
    port = first.endpoint.rpartition(":")[2]
    sub = CatalogSubscriber(first.endpoint)
    assert sub.hms_uri is None  # not started: no welcome yet
    with sub:
        sub.wait_synced(20)
        assert sub.hms_uri == "thrift://hms-a.example:9083"
        first.close()
        # A restarted catalogd (new service id) reading no HMS: None once resynced to it.
        second = start(None, port)
        try:
            sub.wait_until(lambda: sub.service_id == second.service_id, 30, "the resync")
            assert sub.hms_uri is None
        finally:
            second.close()


def test_sidecar_without_upstream_refuses_when_catalogd_reports_no_hms() -> None:
    server = start(None)
    try:
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "subscriber", "metastore", "--catalogd", server.endpoint],
            capture_output=True,
            text=True,
            timeout=50,
        )
        assert result.returncode == 2, result.stderr
        assert NO_HMS in result.stderr and "Traceback" not in result.stderr
        assert time.monotonic() - started < 30
    finally:
        server.close()


def test_the_reported_hms_is_checked_and_a_remote_loopback_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    for reported, ok in (("thrift://127.0.0.1:9083", True), ("hms.example", False)):
        server = start(reported)
        try:
            with CatalogSubscriber(server.endpoint) as sub:
                sub.wait_synced(20)
                if not ok:
                    with pytest.raises(InvalidRequestError, match="'hms.example', not thrift://"):
                        cli._reported_upstream(sub, [server.endpoint])
                    continue
                with caplog.at_level(logging.WARNING, "subscriber.metastore"):
                    assert cli._reported_upstream(sub, [server.endpoint]) == reported
                    assert "loopback" not in caplog.text  # catalogd is on this host too
                    # Told by a catalogd on another host: its loopback is not ours.
                    cli._reported_upstream(sub, ["catalogd.example:26500"])
                    assert "is a loopback address on catalogd's host" in caplog.text
        finally:
            server.close()
