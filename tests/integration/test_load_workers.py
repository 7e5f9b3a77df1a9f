"""Load worker processes stop when asked, even when one is stuck (real spawned processes)."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from polling import wait_until

from catalogd.loading import workers as load_workers
from catalogd.loading.workers import LoadWorkers
from subscriber.protocol.errors import MetastoreError

pytestmark = pytest.mark.timeout(60)


def test_close_kills_a_stuck_worker_within_its_timeout() -> None:
    # The worker's source factory never returns in time: a worker stuck as if on a
    # database that does not answer.
    workers = LoadWorkers(functools.partial(time.sleep, 60), 1).start()
    # Spawned (from the fork server: slow under load), then inside the factory.
    wait_until(lambda: len(_pids(workers)) == 1, what="the worker process")
    (pid,) = _pids(workers)
    started = time.monotonic()
    workers.close(timeout=1.0)
    assert time.monotonic() - started < 5
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(MetastoreError, match="closed"):
        workers.table_payloads("db", "t")


@pytest.mark.parametrize("stdin", [False, True])
def test_workers_never_run_the_daemons_main_script(tmp_path: Path, stdin: bool) -> None:
    # multiprocessing runs the parent's main script again in every process it starts
    # (CPython 3.11's fork server skips the preload meant to do it once); the workers
    # need nothing from it, and a script's imports delayed a load's first task. A
    # thread runs, as in a running daemon: the workers come from the fork server.
    # Read from stdin (``python -``), the script has a ``__file__`` (``<stdin>``) that
    # names no file: a worker that tried to run it would die.
    ran = tmp_path / "ran"
    script = tmp_path / "daemon_script.py"
    script.write_text(
        "import functools, os, pathlib, threading, time\n"
        "from catalogd.loading.workers import LoadWorkers\n"
        "if __name__ != '__main__':\n"
        f"    pathlib.Path({str(ran)!r}).write_text(__name__)\n"
        "else:\n"
        "    environ = dict(os.environ)\n"
        "    threading.Thread(target=threading.Event().wait, daemon=True).start()\n"
        "    with LoadWorkers(functools.partial(time.sleep, 0), 2).start() as workers:\n"
        "        assert not workers.forked\n"
        "        assert workers._executor().submit(abs, -3).result(timeout=30) == 3\n"
        "        deadline = time.monotonic() + 30\n"
        "        while len(workers._worker_pool().processes()) < 2:\n"
        "            assert time.monotonic() < deadline, 'the second worker never started'\n"
        "            time.sleep(0.05)\n"
        "    assert dict(os.environ) == environ, 'the environment was changed'\n"
        "    print('ok')\n"
    )
    command = [sys.executable, "-"] if stdin else [sys.executable, str(script)]
    done = subprocess.run(
        command,
        input=script.read_text() if stdin else None,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert not ran.exists(), f"a worker ran the main script as {ran.read_text()}"


@pytest.mark.parametrize("fork", [True, False])
def test_workers_forked_from_this_process_or_by_the_fork_server(
    fork: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Forked from the caller when it may (first thing in the daemon: no imports to
    # redo), else from the fork server; either way they work, and a forked worker does
    # not keep the caller's SIGTERM handler (it must die when told to).
    monkeypatch.setattr(load_workers, "can_fork", lambda: fork)
    caught: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, _: caught.append(signum))
    try:
        with LoadWorkers(functools.partial(time.sleep, 0), 2).start() as workers:
            assert workers.forked is fork
            assert workers._executor().submit(abs, -3).result(timeout=30) == 3
            pid = workers._executor().submit(os.getpid).result(timeout=30)
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.05)
            assert not _alive(pid), "a worker survived SIGTERM"
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert caught == []


def _pids(workers: LoadWorkers) -> list[int]:
    """The worker processes started so far (the pool keeps them, to kill stuck ones)."""
    return [p.pid for p in workers._worker_pool().processes() if p.pid is not None]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:  # a zombie is not alive
            return stat.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone since the kill: reaped meanwhile
        return False
