"""The embedded HMS under faults: its parent killed, an orphan left behind, its JVM killed.

Real JVMs (HMS 2.3 from the pyspark wheel), each started in a child Python
process or in the test, on loopback; bounded by wait_until deadlines.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from polling import wait_until

from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.hms.embedded.bind import LOOPBACK, listening_addresses
from catalogd.hms.embedded.jvm import MAIN_CLASS
from catalogd.hms.embedded.lifeline import _alive, find_stale
from catalogd.hms.embedded.supervisor import MetastoreSupervisor

pytestmark = [pytest.mark.hms, pytest.mark.timeout(240)]
ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import sys
from catalogd.hms.embedded import EmbeddedMetastore
hms = EmbeddedMetastore(sys.argv[1], cache_dir=sys.argv[2], die_with_parent=sys.argv[3] == "1")
hms.start()
print(hms._proc.pid, flush=True)
sys.stdin.read()  # until killed
"""


def start_in_child(data_dir: Path, cache_dir: Path, die_with_parent: bool) -> tuple[int, int]:
    """Start an HMS from a child Python; kill -9 that child; return (child pid, HMS pid)."""
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data_dir), str(cache_dir), str(int(die_with_parent))],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ) as child:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line, "the child did not start its HMS"
        hms_pid = int(line)
        assert _alive(hms_pid)
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    return child.pid, hms_pid


@pytest.fixture
def reaped() -> Iterator[list[int]]:
    """Pids to kill at the end whatever happens (a failing test must not leak JVMs)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_the_hms_dies_with_a_killed_parent(
    tmp_path: Path, hms_cache_dir: Path, reaped: list[int]
) -> None:
    _, hms_pid = start_in_child(tmp_path / "hms", hms_cache_dir, die_with_parent=True)
    reaped.append(hms_pid)
    wait_until(lambda: not _alive(hms_pid), timeout=60, what="the orphaned HMS to exit")


def test_a_stale_hms_is_found_and_stopped_on_start(
    tmp_path: Path, hms_cache_dir: Path, reaped: list[int]
) -> None:
    data_dir = tmp_path / "hms"
    _, hms_pid = start_in_child(data_dir, hms_cache_dir, die_with_parent=False)
    reaped.append(hms_pid)
    assert [h.pid for h in find_stale(data_dir.resolve(), MAIN_CLASS)] == [hms_pid]
    with EmbeddedMetastore(data_dir, cache_dir=hms_cache_dir) as metastore:
        assert metastore.stale_stopped == [hms_pid] and not _alive(hms_pid)
        with MetastoreClient(metastore.uri) as client:
            assert "default" in client.get_all_databases()


def test_a_dead_jvm_is_restarted_on_the_same_port_and_reported(
    tmp_path: Path, hms_cache_dir: Path
) -> None:
    with EmbeddedMetastore(tmp_path / "hms", cache_dir=hms_cache_dir) as metastore:
        uri = metastore.uri
        supervisor = MetastoreSupervisor(metastore, check_interval_s=0.1, min_backoff_s=0.1)
        with supervisor:
            assert metastore._proc is not None
            os.kill(metastore._proc.pid, signal.SIGKILL)
            wait_until(lambda: supervisor.restarts == 1, timeout=120, what="a restart")
            report = supervisor.report()
            assert report["state"] == "running" and report["last_exit_code"] == -signal.SIGKILL
            assert metastore.uri == uri and metastore.running
            with MetastoreClient(uri) as client:
                assert "default" in client.get_all_databases()


def test_the_embedded_hms_listens_on_loopback_only(hms: EmbeddedMetastore) -> None:
    # HMS 2.3 alone would listen on every interface (00000000): the bind agent's doing.
    assert listening_addresses(hms.port) == {LOOPBACK}


def test_a_second_hms_on_the_same_derby_database_says_who_holds_it(
    tmp_path: Path, hms_cache_dir: Path
) -> None:
    """Derby's XSDB6 comes early in hms.log, under a long stack trace: still found."""
    from subscriber.protocol.errors import MetastoreUnavailableError

    data_dir = tmp_path / "hms"
    with EmbeddedMetastore(data_dir, cache_dir=hms_cache_dir) as first:
        assert first._proc is not None
        second = EmbeddedMetastore(data_dir, cache_dir=hms_cache_dir)
        with pytest.raises(MetastoreUnavailableError) as refused:
            second.start()
        second.stop()
        message = str(refused.value)
        assert "in use by another running Hive Metastore" in message, message[-2000:]
        assert f"pid {first._proc.pid}" in message
