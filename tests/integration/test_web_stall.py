"""The web page never stalls the server thread: 50 HTTP clients fetch the page of a
100,000-partition table in a loop while replica subscribers sync the whole catalog and
a partition changes every 100 ms; the server thread's stall (heartbeat gaps seen by a
separate process, as ``bench/faults.py`` measures it) stays <= 100 ms (plus the idle
noise of the same run on a shared machine). Runs
``bench/web_bench.py`` (its render times are checked against 100 ms too)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(600)

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_fifty_clients_on_a_100k_partition_page_do_not_stall_the_server() -> None:
    result = subprocess.run(
        [sys.executable, "web_bench.py", "--tables", "100", "--seconds", "10"],
        cwd=BENCH,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    print(result.stdout)
    line = next(x for x in result.stdout.splitlines() if x.startswith("[{"))
    rows = {row["measure"]: row for row in json.loads(line)}
    stall = rows["server-thread stall max under web storm"]
    idle_max = float(stall["note"].split("idle max ")[1].split(" ms")[0])
    # The target is 100 ms; on a machine shared with other work the same run's idle
    # baseline (no load from this test at all) shows the scheduler's own noise, which
    # is allowed on top of it.
    assert stall["value"] <= 100 + idle_max, stall
    assert float(stall["note"].split("p99 ")[1].split(" ms")[0]) <= 100, stall
    assert "0 errors" in stall["note"], stall
    table_page = next(
        row for name, row in rows.items() if name.startswith("render /catalog/sales/")
    )
    assert table_page["value"] <= 100, table_page
