"""Load worker processes stop when asked, even when one is stuck (real spawned processes)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from catalogd.freshness.load_workers import LoadWorkers
from subscriber.protocol.errors import MetastoreError

pytestmark = pytest.mark.timeout(60)


def test_close_kills_a_stuck_worker_within_its_timeout() -> None:
    # The worker's source factory never returns in time: a worker stuck as if on a
    # database that does not answer.
    workers = LoadWorkers(functools.partial(time.sleep, 60), 1).start()
    time.sleep(1.0)  # spawned, and inside the factory
    (pid,) = workers.pids()
    started = time.monotonic()
    workers.close(timeout=1.0)
    assert time.monotonic() - started < 5
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(MetastoreError, match="closed"):
        workers.table_payloads("db", "t")


def test_workers_never_run_the_daemons_main_script(tmp_path: Path) -> None:
    # multiprocessing runs the parent's main script again in every process it starts
    # (CPython 3.11's fork server skips the preload meant to do it once); the workers
    # need nothing from it, and a script's imports delayed a load's first task.
    ran = tmp_path / "ran"
    script = tmp_path / "daemon_script.py"
    script.write_text(
        "import functools, pathlib, time\n"
        "from catalogd.freshness.load_workers import LoadWorkers\n"
        "if __name__ != '__main__':\n"
        f"    pathlib.Path({str(ran)!r}).write_text(__name__)\n"
        "else:\n"
        "    with LoadWorkers(functools.partial(time.sleep, 0), 2).start() as workers:\n"
        "        assert len(workers.pids()) == 2\n"
        "        assert workers._executor().submit(abs, -3).result(timeout=30) == 3\n"
        "    print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert not ran.exists(), f"a worker ran the main script as {ran.read_text()}"
