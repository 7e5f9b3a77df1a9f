"""systemd's notify protocol for a ``Type=notify`` service: a thin wrapper over ``sdnotify``.

What the daemon tells systemd (one datagram per call):

* ``ready(status)`` -- ``READY=1`` once the initial catalog is published, and again when
  a reload is done; systemd arms the watchdog after the first one;
* ``watchdog()`` -- ``WATCHDOG=1`` from the loop that proves the daemon alive, every
  :meth:`Notifier.watchdog_interval_s` (half of ``WatchdogSec=``);
* ``reloading(status)`` -- ``RELOADING=1`` with ``MONOTONIC_USEC=`` (which
  ``Type=notify-reload`` units, systemd >= 253, require and older ones ignore);
* ``stopping(status)`` -- ``STOPPING=1`` when a graceful stop begins;
* ``status(text)`` -- ``STATUS=``, one line for ``systemctl status``.

``sdnotify`` sends. What it cannot be told, this module adds: the address comes from
the mapping the caller passes (nothing below ``__main__`` reads ``os.environ``, while
``SystemdNotifier()`` reads it and connects with no timeout), a send blocks at most
``timeout_s``, and a failed send is logged, not raised. Without ``NOTIFY_SOCKET`` every
method is a no-op, so the daemon runs the same with and without systemd.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Mapping

import sdnotify

__all__ = ["Notifier"]

log = logging.getLogger(__name__)


class _Sender(sdnotify.SystemdNotifier):  # type: ignore[misc]
    """``sdnotify``'s sender on a socket connected to ``address`` (``@name``: abstract)."""

    def __init__(self, address: str, timeout_s: float) -> None:
        self.debug = True  # raise send errors: Notifier logs them
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.settimeout(timeout_s)
        try:
            self.socket.connect("\0" + address[1:] if address.startswith("@") else address)
        except OSError:
            self.socket.close()
            raise


class Notifier:
    """The service's side of systemd's notify protocol.

    Args:
        environ: the process environment (pass ``os.environ``); read once, here, for
            ``NOTIFY_SOCKET``, ``WATCHDOG_USEC`` and ``WATCHDOG_PID``.
        pid: this process's id, to match ``WATCHDOG_PID`` (default ``os.getpid()``).
        timeout_s: longest a single send may block.

    Methods never raise: a message that cannot be sent is dropped and logged (at
    WARNING once per kind of failure, then at DEBUG), and the next one connects
    afresh. Thread-safe.
    """

    def __init__(
        self, environ: Mapping[str, str], *, pid: int | None = None, timeout_s: float = 1.0
    ) -> None:
        self._address = environ.get("NOTIFY_SOCKET") or None
        self._watchdog_s = _watchdog_interval(environ, os.getpid() if pid is None else pid)
        self._timeout_s = timeout_s
        self._sender: _Sender | None = None
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """True when started by systemd with a notify socket."""
        return self._address is not None

    def ready(self, status: str | None = None) -> None:
        self._send("READY=1", status)

    def status(self, text: str) -> None:
        self._send(None, text)

    def watchdog(self) -> None:
        self._send("WATCHDOG=1", None)

    def reloading(self, status: str | None = None) -> None:
        now_us = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self._send(f"RELOADING=1\nMONOTONIC_USEC={now_us}", status)

    def stopping(self, status: str | None = None) -> None:
        self._send("STOPPING=1", status)

    def watchdog_interval_s(self) -> float | None:
        """Half the watchdog timeout, or None when systemd watches no watchdog for us."""
        return self._watchdog_s if self.enabled else None

    def close(self) -> None:
        """Close the socket; a later message opens a new one. Idempotent."""
        with self._lock:
            self._drop()

    def __enter__(self) -> Notifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, state: str | None, status: str | None) -> None:
        if self._address is None:
            return
        lines = [state] if state else []
        if status is not None:
            lines.append("STATUS=" + " ".join(status.split()))  # one line, as systemd shows it
        # systemd reads UTF-8 and sdnotify encodes Latin-1: UTF-8 bytes as Latin-1
        # characters go out unchanged.
        message = "\n".join(lines).encode("utf-8").decode("latin-1")
        with self._lock:
            try:
                if self._sender is None:
                    self._sender = _Sender(self._address, self._timeout_s)
                self._sender.notify(message)
            except OSError as exc:
                self._drop()
                kind = type(exc).__name__
                level = logging.DEBUG if kind in self._warned else logging.WARNING
                self._warned.add(kind)
                log.log(level, "cannot notify systemd at %s: %s", self._address, exc)

    def _drop(self) -> None:
        sender, self._sender = self._sender, None
        if sender is not None:
            sender.socket.close()


def _watchdog_interval(environ: Mapping[str, str], pid: int) -> float | None:
    """Half of ``WATCHDOG_USEC`` in seconds when it is meant for ``pid``, else None."""
    try:
        usec = int(environ.get("WATCHDOG_USEC", ""))
        owner = environ.get("WATCHDOG_PID")
        if owner is not None and int(owner) != pid:
            return None  # set for another process (we were started by one)
    except ValueError:
        return None
    return usec / 2 / 1_000_000 if usec > 0 else None
