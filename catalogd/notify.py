"""Telling systemd how the daemon is doing (the ``sd_notify`` protocol), via ``sdnotify``.

Messages go as one datagram each to the unix socket named by ``NOTIFY_SOCKET``
(a path, or ``@name`` in the abstract namespace). Without that variable every
method is a no-op, so the daemon runs the same with and without systemd.

What systemd expects of a ``Type=notify`` service, and so of the caller:

* ``ready()`` once the service is usable (here: the initial catalog is published);
* ``watchdog()`` more often than ``WatchdogSec=`` from the loop that proves the
  daemon alive; :meth:`Notifier.watchdog_interval_s` gives a safe period. systemd
  arms the watchdog when start-up completes (after ``READY=1``);
* ``reloading()`` when a reload starts, then ``ready()`` again when it is done:
  systemd shows the unit as "reloading" in between;
* ``stopping()`` when a stop starts;
* ``status(text)`` any time: one line shown by ``systemctl status``.

Why not ``sdnotify.SystemdNotifier()`` as is: its constructor reads
``os.environ`` itself and connects a blocking socket with no timeout. Here the
address comes from the mapping the caller passes (nothing below ``__main__`` reads
the environment; tests need no process-wide variables) and a send blocks at most
``timeout_s``; ``sdnotify``'s ``notify`` still does the sending. ``RELOADING=1``
goes out in one datagram with ``MONOTONIC_USEC=`` (CLOCK_MONOTONIC, microseconds),
which ``Type=notify-reload`` units (systemd >= 253) require and older ones ignore;
``sdnotify`` sends such a multi-line message unchanged.
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
    """``sdnotify``'s sender, connected to the address given, not one read from os.environ."""

    def __init__(self, address: str, timeout_s: float) -> None:
        self.debug = True  # raise send errors; Notifier decides what to do with them
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
        timeout_s: longest a single send may block (systemd reads promptly; this
            bounds a wedged manager).

    Methods never raise: a message that cannot be sent is logged (once per kind
    of failure at WARNING, then at DEBUG) and dropped, as systemd itself would
    rather the service kept running. Thread-safe (one ``send`` per message).
    """

    def __init__(
        self, environ: Mapping[str, str], *, pid: int | None = None, timeout_s: float = 1.0
    ) -> None:
        self._address = environ.get("NOTIFY_SOCKET") or None
        self._watchdog_s = _watchdog_interval(environ, os.getpid() if pid is None else pid)
        self._timeout_s = timeout_s
        self._sender: _Sender | None = None
        self._warned: set[str] = set()
        self._lock = threading.Lock()  # one sender, created on first use

    @property
    def enabled(self) -> bool:
        """True when started by systemd with a notify socket."""
        return self._address is not None

    def ready(self, status: str | None = None) -> None:
        """``READY=1``: start-up (or a reload) is complete; optionally a status line too."""
        self._send("READY=1", status)

    def status(self, text: str) -> None:
        """``STATUS=text``: free-form one-line state for ``systemctl status``."""
        self._send(None, text)

    def watchdog(self) -> None:
        """``WATCHDOG=1``: the main loop is alive; call every :meth:`watchdog_interval_s`."""
        self._send("WATCHDOG=1", None)

    def reloading(self, status: str | None = None) -> None:
        """``RELOADING=1`` with ``MONOTONIC_USEC``; follow with :meth:`ready` when done."""
        now_us = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self._send(f"RELOADING=1\nMONOTONIC_USEC={now_us}", status)

    def stopping(self, status: str | None = None) -> None:
        """``STOPPING=1``: a graceful stop has begun."""
        self._send("STOPPING=1", status)

    def extend_timeout(self, seconds: float) -> None:
        """``EXTEND_TIMEOUT_USEC``: start-up, reload or stop needs ``seconds`` more from now."""
        self._send(f"EXTEND_TIMEOUT_USEC={max(1, int(seconds * 1_000_000))}", None)

    def watchdog_interval_s(self) -> float | None:
        """Half the watchdog timeout, or None when systemd watches no watchdog for us."""
        return self._watchdog_s if self.enabled else None

    def close(self) -> None:
        """Close the socket; later messages open a new one. Idempotent."""
        with self._lock:
            self._close_sender()

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
        # systemd reads UTF-8; sdnotify encodes as Latin-1, so hand it the UTF-8 bytes
        # as Latin-1 characters and they go out unchanged.
        message = "\n".join(lines).encode("utf-8").decode("latin-1")
        with self._lock:
            try:
                if self._sender is None:
                    self._sender = _Sender(self._address, self._timeout_s)
                self._sender.notify(message)
                return
            except OSError as exc:
                self._close_sender()
                error = exc
        kind = type(error).__name__
        level = logging.DEBUG if kind in self._warned else logging.WARNING
        self._warned.add(kind)
        log.log(level, "cannot notify systemd at %s: %s", self._address, error)

    def _close_sender(self) -> None:
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
