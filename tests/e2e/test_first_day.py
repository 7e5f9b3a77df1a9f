"""An operator's first day (issue 23): misuse gets a clear answer at once, from the real
commands against a real catalogd (session HMS) and real sockets.

Each test drives ``catalogd`` or ``python -m subscriber`` as a process: a second
daemon on a data directory, taken ports, endpoints without ``tcp://``, the admin
client pointed at the subscriber port, a partition spec given as a list, help texts.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from polling import wait_until
from support.catalogd_process import CatalogdProcess
from support.databases import scratch_database

import idl
from catalogd.addresses import free_port
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.hms.embedded.jvm import MAIN_CLASS
from catalogd.hms.embedded.lifeline import holders
from subscriber.api import CatalogSubscriber
from subscriber.protocol.errors import InvalidRequestError

pytestmark = [pytest.mark.hms, pytest.mark.timeout(300)]
hms_thrift = idl.hive_metastore


def run(*args: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python -m ARGS`` (without CATALOGD_* variables); the result and its seconds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CATALOGD_")}
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, timeout=timeout, env=env
    )
    return result, time.monotonic() - started


@pytest.fixture(scope="module")
def db(hms: EmbeddedMetastore) -> str:
    name = f"day_{uuid.uuid4().hex[:6]}"
    with MetastoreClient(hms.uri) as client:
        client.raw.create_database(
            hms_thrift.Database(
                name=name,
                description="",
                locationUri=f"file:{hms.warehouse_dir}/{name}.db",
                parameters={},
            )
        )
        table = thrift_table(
            name,
            "events",
            f"file:{hms.warehouse_dir}/{name}.db/events",
            columns=[("id", "bigint")],
            partition_keys=[("region", "string")],
        )
        client.raw.create_table(table)
        client.raw.add_partitions(thrift_partitions(table, [("eu",), ("us",)]))
    return name


@pytest.fixture(scope="module")
def server(
    hms: EmbeddedMetastore, db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CatalogdProcess]:
    proc = CatalogdProcess(
        hms.uri, tmp_path_factory.mktemp("first-day"), extra=["--change-detection", "off"]
    ).start()
    proc.wait_loaded()
    yield proc
    proc.stop()


def serve(data_dir: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``catalogd serve`` on the embedded default (slow to start, unless refused first)."""
    args = ["--data-dir", str(data_dir), "--pub-bind", "tcp://127.0.0.1:*"]
    if "--bind" not in extra:
        args += ["--bind", f"tcp://127.0.0.1:{free_port()}"]
    if "--admin-bind" not in extra:
        args += ["--admin-bind", f"tcp://127.0.0.1:{free_port()}"]
    if "--web-bind" not in extra:
        args += ["--web-bind", "127.0.0.1:0"]
    return run("catalogd.cli", "serve", *args, *extra)


def test_a_second_catalogd_on_a_data_directory_is_refused_at_once(
    server: CatalogdProcess,
) -> None:
    assert server.proc is not None
    result, seconds = serve(server.data_dir)  # embedded HMS: would start a JVM
    assert result.returncode != 0
    assert (
        f"data directory {server.data_dir} is in use by another catalogd "
        f"(pid {server.proc.pid})" in result.stderr
    ), result.stderr
    assert "Hive Metastore" not in result.stderr  # refused before any HMS started
    assert "Traceback" not in result.stderr
    assert seconds < 15  # the interpreter's start-up; the refusal itself is milliseconds


@pytest.mark.parametrize("flag", ["--bind", "--admin-bind", "--pub-bind"])
def test_a_taken_port_is_named_by_its_flag_before_anything_slow(tmp_path: Path, flag: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result, seconds = serve(tmp_path / "data", flag, f"tcp://127.0.0.1:{port}")
    assert result.returncode != 0
    assert f"{flag} 127.0.0.1:{port} is already in use" in result.stderr, result.stderr
    assert "another catalogd may be running" in result.stderr
    assert "Hive Metastore" not in result.stderr and "Traceback" not in result.stderr
    assert seconds < 15


def test_admin_takes_host_port_and_refuses_other_schemes(server: CatalogdProcess) -> None:
    admin = f"127.0.0.1:{server.admin_port}"
    result, _ = run("catalogd.cli", "admin", "--endpoint", admin, "status")
    assert result.returncode == 0, result.stderr
    assert "service id" in result.stdout
    result, seconds = run("catalogd.cli", "admin", "--endpoint", "thrift://127.0.0.1:1", "status")
    assert result.returncode == 2, result.stderr
    assert "tcp://HOST:PORT" in result.stderr and "Traceback" not in result.stderr
    assert seconds < 15
    # stats compute checks its --endpoint the same way, before starting Spark
    bad = ["compute", "a.b", "--hms", "thrift://127.0.0.1:1", "--endpoint", "thrift://x:1"]
    result, seconds = run("catalogd.cli", "stats", *bad)
    assert result.returncode == 2 and "tcp://HOST:PORT" in result.stderr, result.stderr
    assert seconds < 15


def test_admin_at_the_subscriber_port_says_so(server: CatalogdProcess) -> None:
    result, seconds = run(
        "catalogd.cli", "admin", "--endpoint", server.endpoint, "--timeout", "20", "status"
    )
    assert result.returncode != 0
    assert "subscriber endpoint" in result.stderr and "26502" in result.stderr, result.stderr
    assert seconds < 15


def test_admin_where_nothing_listens_says_so_within_seconds() -> None:
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    result, seconds = run("catalogd.cli", "admin", "--endpoint", endpoint, "status")
    assert result.returncode == 3
    assert f"nothing answered at {endpoint}" in result.stderr, result.stderr
    assert "--admin-bind" in result.stderr
    assert seconds < 20  # not the 60 s request timeout


def test_cache_pool_list_when_empty(server: CatalogdProcess) -> None:
    result, _ = run(
        "catalogd.cli", "admin", "--endpoint", server.admin_endpoint, "cache-pool", "list"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "no cache pools"


def test_subscriber_takes_host_port_and_refuses_garbage(server: CatalogdProcess, db: str) -> None:
    with CatalogSubscriber(f"127.0.0.1:{server.port}") as sub:
        sub.wait_synced(30)
        assert db in sub.list_databases()
        sub.get_table(f"{db}.events", load=True)
        assert len(sub.list_partitions(f"{db}.events", {"region": "eu"})) == 1
        with pytest.raises(InvalidRequestError, match="a partition spec is a mapping"):
            sub.list_partitions(f"{db}.events", ["eu"])  # type: ignore[arg-type]
    for bad in ("thrift://127.0.0.1:9083", "127.0.0.1", "127.0.0.1:99999", ""):
        with pytest.raises(InvalidRequestError, match="tcp://HOST:PORT"):
            CatalogSubscriber(bad)


def test_watch_and_metastore_take_endpoints_alike(server: CatalogdProcess) -> None:
    for args in (
        ["watch", "thrift://127.0.0.1:1"],
        ["metastore", "--catalogd", "thrift://127.0.0.1:1", "--upstream", "thrift://h:9083"],
    ):
        result, seconds = run("subscriber", *args)
        assert result.returncode == 2, (args, result.stderr)
        assert "tcp://HOST:PORT" in result.stderr and "Traceback" not in result.stderr
        assert seconds < 15
    # No --upstream: the HMS catalogd reports (tests/e2e/test_sidecar_upstream.py).
    # Both: HOST:PORT, several as separate arguments or comma-separated.
    help_watch = run("subscriber", "watch", "--help")[0].stdout
    help_metastore = run("subscriber", "metastore", "--help")[0].stdout
    for text in (" ".join(help_watch.split()), " ".join(help_metastore.split())):
        assert "HOST:PORT" in text and "spaces or commas" in text


def test_watch_says_where_it_stands_between_changes(server: CatalogdProcess) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "subscriber", "watch", f"127.0.0.1:{server.port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]
        assert lines[0].startswith("# synced to tcp://127.0.0.1:"), lines
        assert lines[1].startswith("# synced at version "), lines
        assert lines[1].strip().endswith("waiting for changes"), lines
    finally:
        proc.terminate()
        proc.wait(15)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()


def test_help_describes_every_command_with_named_placeholders() -> None:
    top = run("subscriber", "--help")[0].stdout
    assert "watch" in top and "metastore" in top
    assert "HMS Thrift endpoint" in top  # the description covers both commands
    for args in (["serve", "--help"], ["config", "show", "--help"], ["dump", "--help"]):
        text = run("catalogd.cli", *args)[0].stdout
        assert "VALUE" not in text, args
    serve_help = run("catalogd.cli", "serve", "--help")[0].stdout
    for flag in ("--data-dir DIR", "--bind URI", "--poll-interval SECONDS", "--hms URI"):
        assert flag in serve_help, flag


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_during_start_up_stops_at_once(tmp_path: Path, signum: int) -> None:
    """Sent while the embedded HMS starts: no waiting for it, nothing published, no JVM left."""
    data_dir = tmp_path / "data"
    log_path = tmp_path / "serve.log"
    args = ["--data-dir", str(data_dir), "--pub-bind", "tcp://127.0.0.1:*"]
    args += ["--bind", f"tcp://127.0.0.1:{free_port()}"]
    args += ["--admin-bind", f"tcp://127.0.0.1:{free_port()}", "--demo"]
    args += ["--embedded-hms-port", "0"]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "catalogd.cli", "serve", *args], stdout=log, stderr=log
        )
    try:
        wait_until(
            lambda: "starting the embedded Hive Metastore" in log_path.read_text(),
            timeout=60,
            what="the embedded HMS to start starting",
        )
        time.sleep(0.5)  # inside the HMS start, which takes seconds
        sent = time.monotonic()
        proc.send_signal(signum)
        assert proc.wait(30) == 0
        seconds = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    text = log_path.read_text()
    assert "stopped during start-up" in text, text[-2000:]
    assert "initial catalog published" not in text and "Traceback" not in text
    assert seconds < 10, seconds  # the JVM's stop, not its start and the first publish
    assert holders((data_dir / "hms").resolve(), MAIN_CLASS) == []


def test_the_embedded_hms_keeps_its_port_and_says_where(tmp_path: Path) -> None:
    """A configured port (default 26503; tests pick a free one) survives a restart, is
    logged and shown by ``admin status``; taken, a free port is used and warned about."""
    port = free_port()
    uri = f"thrift://127.0.0.1:{port}"
    data_dir = tmp_path / "data"
    for _ in range(2):  # the same address after a restart
        proc = CatalogdProcess("", data_dir, extra=["--embedded-hms-port", str(port)]).start(180)
        try:
            assert f"embedded Hive Metastore listening at {uri}" in proc.log_tail(100_000)
            result, _ = run("catalogd.cli", "admin", "--endpoint", proc.admin_endpoint, "status")
            assert re.search(rf"^HMS\s+{re.escape(uri)}, healthy", result.stdout, re.M), (
                result.stdout
            )
        finally:
            assert proc.stop() == 0
    with socket.create_server(("127.0.0.1", 0)) as taken:
        busy = taken.getsockname()[1]
        proc = CatalogdProcess("", data_dir, extra=["--embedded-hms-port", str(busy)]).start(180)
        try:
            assert f"port {busy} (hms.embedded_port, --embedded-hms-port) is taken" in (
                proc.log_tail(100_000)
            )
        finally:
            assert proc.stop() == 0


@pytest.mark.postgres
def test_two_catalogd_on_one_shared_state_store_without_ha(
    hms: EmbeddedMetastore, tmp_path: Path
) -> None:
    """The second is refused, naming the store and --ha; once the first is killed -9
    (no goodbye), the store is free again."""
    with scratch_database("postgresql", "first_day") as url:
        first = CatalogdProcess(hms.uri, tmp_path / "a", extra=["--state-db", url]).start()
        try:
            result, seconds = run(
                "catalogd.cli",
                "serve",
                "--hms",
                hms.uri,
                "--state-db",
                url,
                "--data-dir",
                str(tmp_path / "b"),
                "--bind",
                f"tcp://127.0.0.1:{free_port()}",
                "--pub-bind",
                "tcp://127.0.0.1:*",
                "--admin-bind",
                f"tcp://127.0.0.1:{free_port()}",
            )
            assert result.returncode != 0
            assert "is in use by another catalogd" in result.stderr, result.stderr[-2000:]
            assert "--ha" in result.stderr and "Traceback" not in result.stderr
            assert "initial catalog published" not in result.stderr
            assert seconds < 30
        finally:
            first.kill()
        second = CatalogdProcess(hms.uri, tmp_path / "b", extra=["--state-db", url]).start()
        assert second.stop() == 0


def test_dump_shows_progress_on_stderr(server: CatalogdProcess, hms: EmbeddedMetastore) -> None:
    """Not a terminal here: plain lines (rate, ETA), stdout left to the result."""
    result, _ = run("catalogd.cli", "dump", "--hms", hms.uri, "--json", "--progress-interval", "0")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("loading: ")]
    assert lines, result.stderr
    assert re.fullmatch(r"loading: [\d,]+/[\d,]+ tables \(\d+%\), [\d,]+ tables/s.*", lines[0])
    assert "\r" not in result.stderr
    assert all(line.startswith("{") for line in result.stdout.splitlines())


@pytest.mark.spark
def test_stats_compute_shows_its_phases_on_a_terminal(hms: EmbeddedMetastore, db: str) -> None:
    """Under a pseudo-terminal: each phase on stderr (and Spark's progress bar is on)."""
    import pty

    parent, child = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "catalogd.cli", "stats", "compute", f"{db}.events"]
            + ["--hms", hms.uri, "--master", "local[1]", "--no-refresh", "--json"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=child,
            env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        )
        os.close(child)
        child = -1
        seen = b""
        while True:
            try:
                chunk = os.read(parent, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        out, _ = proc.communicate(timeout=240)
    finally:
        os.close(parent)
        if child >= 0:
            os.close(child)
    text = seen.decode(errors="replace")
    assert proc.returncode == 0, text[-3000:]
    assert "stats: starting Spark (local[1])" in text
    assert f"stats: computing statistics of {db}.events" in text
    assert out.decode().strip().startswith("{")  # stdout: the result only
