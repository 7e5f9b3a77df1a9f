"""The HMS endpoint against a real HMS, without Spark: answers, forwarding, staleness.

A catalog loaded from the session HMS is served by an in-process catalogd to a
subscriber whose endpoint forwards to that HMS. The HMS is only read here.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from polling import wait_until
from support.hms_diff import endpoint_over, loaded

import idl
from catalogd.addresses import free_port
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.server.thread import CatalogServer
from subscriber.metastore import MetastoreEndpoint, framing

pytestmark = [pytest.mark.hms, pytest.mark.timeout(120)]

svc = idl.hive_metastore.ThriftHiveMetastore


@pytest.fixture
def served(hms: EmbeddedMetastore) -> Iterator[tuple[CatalogServer, MetastoreEndpoint]]:
    with endpoint_over(loaded(hms.uri), hms.uri, max_lag_s=0.5) as served:
        yield served


def _raw_call(uri: str, message: bytes) -> bytes:
    host, _, port = uri.removeprefix("thrift://").rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(message)
        buf = bytearray()
        while (end := framing.message_end(buf)) is None:
            chunk = sock.recv(65536)
            assert chunk, "connection closed before the reply"
            buf += chunk
        return bytes(buf[:end])


def test_answers_equal_hms_and_unknown_methods_pass_through(
    hms: EmbeddedMetastore, served: tuple[CatalogServer, MetastoreEndpoint]
) -> None:
    _, endpoint = served
    with MetastoreClient(hms.uri) as direct, MetastoreClient(endpoint.uri) as via:
        assert via.get_all_databases() == direct.get_all_databases()
        assert via.get_database("default") == direct.get_database("default")
        groups = ["g1", "g2"]
        assert via.call("set_ugi", "alice", list(groups)) == direct.call(
            "set_ugi", "alice", list(groups)
        )
    # fb303's getVersion is in no IDL of ours: forwarded byte for byte.
    message = framing.header_bytes("getVersion", framing.CALL, 5) + b"\x00"
    assert _raw_call(endpoint.uri, message) == _raw_call(hms.uri, message)
    stats = endpoint.stats.snapshot()
    assert stats["served"]["get_all_databases"] == 1
    assert stats["forwarded"]["getVersion"] == 1


def test_reads_are_forwarded_once_the_cache_is_too_stale(
    hms: EmbeddedMetastore, served: tuple[CatalogServer, MetastoreEndpoint]
) -> None:
    server, endpoint = served
    with MetastoreClient(endpoint.uri, retries=0) as via:
        expected = via.get_all_databases()
        server.close()  # catalogd gone: no more heartbeats, the cache ages
        wait_until(lambda: _stale_answer(via, endpoint), timeout=30, what="a forwarded read")
        assert via.get_all_databases() == expected  # HMS's own answer
    assert endpoint.stats.snapshot()["served"]["get_all_databases"] >= 1


def _stale_answer(client: MetastoreClient, endpoint: MetastoreEndpoint) -> Any:
    client.get_all_databases()
    return endpoint.stats.snapshot()["forwarded_stale"].get("get_all_databases", 0) > 0


def test_sidecar_serves_and_logs_its_counters(
    hms: EmbeddedMetastore, served: tuple[CatalogServer, MetastoreEndpoint]
) -> None:
    server, _ = served
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "subscriber",
            "metastore",
            "--catalogd",
            server.endpoint,
            "--upstream",
            hms.uri,
            "--listen",
            f"127.0.0.1:{port}",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if "serving thrift://" in line:
                break
        with MetastoreClient(f"thrift://127.0.0.1:{port}", retries=0) as client:
            assert "default" in client.get_all_databases()
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, "".join(lines) + rest
    assert "get_all_databases served=1" in rest


def test_a_large_message_is_framed_about_once(
    hms: EmbeddedMetastore,
    served: tuple[CatalogServer, MetastoreEndpoint],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """4 MiB in one call (a huge unknown field, forwarded): the connection's thread
    walks it a few times, not once per 64 KiB chunk (64 times)."""
    _, endpoint = served
    walks = []
    real = framing.message_end

    def spy(buf, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if threading.current_thread().name.startswith("catalogd-hms-conn"):
            walks.append(len(buf))
        return real(buf, *args, **kwargs)

    monkeypatch.setattr(framing, "message_end", spy)
    big = b"\x0b\x00\x63" + (4 << 20).to_bytes(4, "big") + b"x" * (4 << 20)
    message = framing.header_bytes("getVersion", framing.CALL, 7) + big + b"\x00"
    assert _raw_call(endpoint.uri, message) == _raw_call(
        hms.uri, b"".join([framing.header_bytes("getVersion", framing.CALL, 7), b"\x00"])
    )
    assert 0 < len(walks) <= 16, len(walks)
