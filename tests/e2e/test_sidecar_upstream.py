"""``python -m subscriber metastore`` without ``--upstream`` (issue 23 item 8): catalogd on
its embedded HMS reports that HMS's address in the welcome, the sidecar forwards to it,
and a write through the sidecar reaches that HMS (and is read back through the sidecar).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from polling import wait_until
from support.catalogd_process import CatalogdProcess

import idl
from catalogd.addresses import free_port
from catalogd.hms.client import MetastoreClient
from subscriber.api import CatalogSubscriber

pytestmark = [pytest.mark.hms, pytest.mark.timeout(300)]
hms = idl.hive_metastore


def test_the_sidecar_forwards_to_the_hms_catalogd_reports(tmp_path: Path) -> None:
    server = CatalogdProcess("", tmp_path / "data", extra=["--change-detection", "off"])
    server.start(180)
    sidecar = None
    try:
        found = re.search(r"embedded Hive Metastore listening at (thrift://\S+)", server.log_tail())
        assert found, server.log_tail()
        hms_uri = found.group(1)
        with CatalogSubscriber(server.endpoint) as sub:
            sub.wait_synced(30)
            assert sub.hms_uri == hms_uri

        listen = f"127.0.0.1:{free_port()}"
        log_path = tmp_path / "sidecar.log"
        with open(log_path, "wb") as log:
            sidecar = subprocess.Popen(
                [sys.executable, "-m", "subscriber", "metastore"]
                + ["--catalogd", server.endpoint, "--listen", listen],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

        def log_text() -> str:
            return log_path.read_text(errors="replace")

        def serving() -> bool:
            assert sidecar is not None and sidecar.poll() is None, log_text()
            return "serving thrift://" in log_text()

        wait_until(serving, 60, "the sidecar to serve")
        assert f"no --upstream: forwarding to {hms_uri}" in log_text()

        name = f"side_{uuid.uuid4().hex[:6]}"
        with MetastoreClient(f"thrift://{listen}") as through:
            through.raw.create_database(
                hms.Database(
                    name=name,
                    description="",
                    locationUri=f"file:{tmp_path}/{name}.db",
                    parameters={},
                )
            )
            assert through.raw.get_database(name).name == name  # read back through it
        with MetastoreClient(hms_uri) as direct:
            assert direct.raw.get_database(name).name == name  # the write reached that HMS
    finally:
        if sidecar is not None:
            sidecar.send_signal(signal.SIGTERM)
            assert sidecar.wait(30) == 0
        assert server.stop() == 0
