"""A ``catalogd serve`` process to storm, and a heartbeat watcher that measures its stalls.

Used by ``bench/faults.py``. :class:`Catalogd` runs the daemon on fixed loopback
ports (so a restart after ``kill -9`` keeps its addresses) and reads its RSS;
:class:`Heartbeats` runs a separate process (so the storm's own GIL cannot skew
it) that subscribes to heartbeats: each gap beyond the interval is a stall of
catalogd's server thread, which alone publishes them.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from catalogd.addresses import free_port


class Catalogd:
    """``catalogd serve`` as a child process on fixed loopback ports."""

    def __init__(self, hms_uri: str, data_dir: Path, heartbeat_s: float) -> None:
        self.port, self.pub_port, self.admin_port = free_port(), free_port(), free_port()
        self.endpoint = f"tcp://127.0.0.1:{self.port}"
        self.admin = f"tcp://127.0.0.1:{self.admin_port}"
        self.pub = f"tcp://127.0.0.1:{self.pub_port}"
        self.command = [
            sys.executable, "-m", "catalogd.cli", "serve", "--hms", hms_uri,
            "--bind", self.endpoint, "--pub-bind", self.pub, "--admin-bind", self.admin,
            "--web-bind", "127.0.0.1:0",
            "--data-dir", str(data_dir), "--heartbeat-interval", str(heartbeat_s),
        ]  # fmt: skip
        self.log = data_dir / "catalogd.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        offset = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while b"initial catalog published" not in self.log.read_bytes()[offset:]:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"catalogd did not start:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.05)

    def rss(self) -> int:
        assert self.proc is not None
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"^VmRSS:\s+(\d+) kB", text, re.MULTILINE).group(1)) * 1024  # type: ignore[union-attr]

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(60)


HEARTBEAT_WATCHER = """
import json, sys, threading, time, zmq
pub, interval = sys.argv[1], float(sys.argv[2])
stalls, state = [], {"on": False, "last": None}
def watch():
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"h")
    sub.connect(pub)
    while True:
        if not sub.poll(200):
            continue
        frame = sub.recv()  # one frame: topic, then body
        now = time.monotonic()
        if frame[:1] == b"h" and state["on"]:
            if state["last"] is not None:
                stalls.append(max(0.0, now - state["last"] - interval))
            state["last"] = now
threading.Thread(target=watch, daemon=True).start()
for line in sys.stdin:
    if line.strip() == "start":
        stalls.clear()
        state.update(on=True, last=None)
    elif line.strip() == "stop":
        state["on"] = False
        print(json.dumps(stalls), flush=True)
"""


class Heartbeats:
    """A separate process receives the heartbeats (so this process's GIL cannot skew
    them); the gaps beyond the interval are the server thread's stalls."""

    def __init__(self, pub: str, interval_s: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HEARTBEAT_WATCHER, pub, str(interval_s)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def start(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("start\n")
        self.proc.stdin.flush()

    def stop(self) -> list[float]:
        """The stalls (seconds) seen since :meth:`start`."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()
        return list(json.loads(self.proc.stdout.readline()))

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
