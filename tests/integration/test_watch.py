"""`python -m subscriber watch`: prints each applied change with its version."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from polling import wait_until

from catalogd.server.thread import CatalogServer, ServerConfig

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def server() -> Iterator[CatalogServer]:
    srv = CatalogServer(
        ServerConfig(
            bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*", heartbeat_interval_s=0.2
        )
    )
    srv.commit(
        {"DATABASE:a": b"d", "TABLE:a.t": b"t", "DATABASE:b": b"d", "TABLE:b.u": b"u"}
    ).result()
    srv.start()
    yield srv
    srv.close()


def test_watch_prints_changes_of_followed_databases(server: CatalogServer) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "subscriber", "watch", server.endpoint, "--databases", "a"],
        stdout=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True
    )  # type: ignore[union-attr]
    reader.start()
    try:
        wait_until(lambda: any(line.startswith("# synced") for line in lines), what="synced line")
        delta = server.commit(
            {"TABLE:a.t": b"t2", "TABLE:b.u": b"u2", "TABLE:a.new": b"n"}
        ).result()
        wait_until(lambda: any("TABLE:a.new" in line for line in lines), what="change lines")
        changes = [line.split() for line in lines if not line.startswith("#")]
        assert ["updated", "TABLE:a.t"] in [c[1:] for c in changes]
        assert [str(delta.to_version), "added", "TABLE:a.new"] in changes
        assert not any("TABLE:b.u" in line for line in lines)  # not followed
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0
        reader.join(5)
        proc.stdout.close()  # type: ignore[union-attr]
