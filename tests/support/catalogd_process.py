"""Run ``catalogd serve`` as a real process for end-to-end tests: :class:`CatalogdProcess`
starts it on free loopback ports, waits for its first published version, runs
``catalogd admin`` against it and stops or kills it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from catalogd.addresses import free_port

READY = re.compile(r"initial catalog published: version (\d+).*service id (\w+)")
LOADED = "background load done"
STANDBY = re.compile(r"standby: catalog loaded: version (\d+); service id (\w+)")


class CatalogdProcess:
    """``catalogd serve`` in a subprocess, logging to a file; started and stopped explicitly.

    ``hms_uri=""`` runs the embedded default (an HMS in ``data_dir/hms``, on a free port
    unless ``extra`` gives ``--embedded-hms-port``).
    """

    def __init__(
        self,
        hms_uri: str,
        data_dir: Path,
        *,
        port: int | None = None,
        extra: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.hms_uri = hms_uri
        self.data_dir = data_dir
        self._own_port = port is None  # chosen here: another free one on a bind race
        self.port = port or free_port()
        self.endpoint = f"tcp://127.0.0.1:{self.port}"
        self.admin_port = free_port()
        self.admin_endpoint = f"tcp://127.0.0.1:{self.admin_port}"
        self.web_port = free_port()
        self.web_url = f"http://127.0.0.1:{self.web_port}"
        self.extra = extra or []
        self.env = {**os.environ, **(env or {})}
        self.log_path = data_dir / "catalogd.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.version = 0
        self.service_id = ""
        self._offset = 0

    def start(self, timeout: float = 60.0, *, standby: bool = False) -> CatalogdProcess:
        """Start and wait until it serves (``standby``: until it is a loaded HA standby).

        A port chosen here (``free_port``) may be taken by another process before
        catalogd binds it (seen beside other work: the web port, bound after the
        embedded HMS's ~10 s start); then it starts again on new ports, twice at most.
        """
        for _ in range(2):
            try:
                return self._start(timeout, standby)
            except AssertionError as exc:
                exited = self.proc is not None and self.proc.poll() is not None
                if not exited or "already in use" not in str(exc):
                    raise
            if self._own_port:
                self.port = free_port()
                self.endpoint = f"tcp://127.0.0.1:{self.port}"
            self.admin_port, self.web_port = free_port(), free_port()
            self.admin_endpoint = f"tcp://127.0.0.1:{self.admin_port}"
            self.web_url = f"http://127.0.0.1:{self.web_port}"
        return self._start(timeout, standby)

    def _start(self, timeout: float, standby: bool) -> CatalogdProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self._offset = offset
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        cmd = [
            sys.executable,
            "-m",
            "catalogd.cli",
            "serve",
            *(["--hms", self.hms_uri] if self.hms_uri else []),
            "--bind",
            self.endpoint,
            "--pub-bind",
            "tcp://127.0.0.1:*",
            "--data-dir",
            str(self.data_dir),
            "--heartbeat-interval",
            "0.2",
            "--admin-bind",
            self.admin_endpoint,
            *self.extra,
        ]
        if "--web-bind" not in self.extra:
            cmd += ["--web-bind", f"127.0.0.1:{self.web_port}"]  # never the default port
        if not self.hms_uri and "--embedded-hms-port" not in self.extra:
            cmd += ["--embedded-hms-port", "0"]  # tests: a free port, never the default
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        log.close()
        self._wait_for(STANDBY if standby else READY, timeout)
        return self

    def wait_active(self, timeout: float = 60.0) -> CatalogdProcess:
        """HA: wait until this (standby) process took over and serves."""
        self._wait_for(READY, timeout)
        return self

    def _wait_for(self, pattern: re.Pattern[str], timeout: float) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log_path.read_bytes()[self._offset :].decode(errors="replace")
            match = pattern.search(text)
            if match:
                self.version, self.service_id = int(match.group(1)), match.group(2)
                return
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"catalogd exited with {self.proc.returncode}:\n{text[-3000:]}"
                )
            time.sleep(0.05)
        self.kill()
        raise AssertionError(f"catalogd not ready in {timeout}s:\n{self.log_tail()}")

    def wait_loaded(self, timeout: float = 60.0) -> None:
        """Block until the background load of every table is done."""
        deadline = time.monotonic() + timeout
        while LOADED not in self.log_path.read_text(errors="replace"):
            if time.monotonic() > deadline:
                raise AssertionError(f"tables not loaded in {timeout}s:\n{self.log_tail()}")
            time.sleep(0.05)

    def admin(self, *args: str, timeout: float = 120) -> tuple[int, dict, str]:
        """Run ``catalogd admin --json ARGS`` against this process: (exit code, answer, output)."""
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "catalogd.cli",
                "admin",
                "--endpoint",
                self.admin_endpoint,
                "--json",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        text = result.stdout.strip()
        answer = json.loads(text) if text.startswith("{") else {}
        return result.returncode, answer, result.stderr + result.stdout

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_bytes()[-chars:].decode(errors="replace")

    def kill(self) -> None:
        """SIGKILL: no goodbye, no final heartbeat."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode
