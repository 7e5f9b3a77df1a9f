"""Load worker processes stop when asked, even when one is stuck (real spawned processes)."""

from __future__ import annotations

import functools
import os
import time

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
