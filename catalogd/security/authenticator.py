"""The ZAP handler: which public key may connect to which socket, and under what name.

:class:`KeyAuthenticator` is a pyzmq :class:`~zmq.auth.base.Authenticator` (its
ZAP request handling and reply format) run on a thread of its own,
``catalogd-zap``, configured per ZAP *domain*:

* ``subscribers`` -- the subscriber ROUTER and the PUB socket: keys in the
  subscriber key directory;
* ``admin`` -- the admin endpoint: keys in the admin key directory only, so a
  subscriber key can never run an admin command.

A key's User-Id (what the application reads from each message,
``frame.get("User-Id")``) is its file name, not the Z85 key, so the audit log and
``admin status`` show names. Each socket sets its domain (``zap_domain``); a
socket with an unknown domain admits nobody.

The thread creates, binds, polls and closes its ``inproc://zeromq.zap.01`` socket
itself (pyzmq's ``ThreadAuthenticator`` creates and closes it in the caller's
thread and polls it through asyncio's file-descriptor watching, i.e. two threads
and libzmq's edge-triggered ``ZMQ_FD`` on one socket); :meth:`stop` asks it to
close over an inproc pipe and joins it, so when :meth:`stop` returns the ZAP
socket is closed by the thread that used it. Stop it after the sockets it guards
are closed, before the context is ended (:func:`catalogd.security.contexts.end`).

Failed authentications (an unknown key) are counted per domain and logged with
the peer's address, at most one line per address every ``log_every_s`` seconds
(a scanner cannot fill the journal). A client with the wrong server key, or none,
fails the CURVE handshake before ZAP is asked; libzmq drops it without telling
the application (see :mod:`subscriber.curve` for what the client sees).

Thread-safety: :meth:`reload` runs on the caller's thread and replaces each
domain's dictionary in one assignment, which the ZAP thread reads whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import zmq
import zmq.auth
from zmq.auth.base import Authenticator

from catalogd.security.keys import load_directory

log = logging.getLogger(__name__)

SUBSCRIBERS = "subscribers"
ADMIN = "admin"


ZAP_ENDPOINT = "inproc://zeromq.zap.01"


class KeyAuthenticator(Authenticator):
    """ZAP for catalogd's sockets. See the module docstring.

    Args:
        context: the context of the sockets it guards (one ZAP handler per context).
        directories: ZAP domain -> directory of allowed public keys.
        log_every_s: at most one failure line per peer address in this many seconds.
        clock: monotonic seconds (for the log rate limit).
        on_refused: called on the ZAP thread as ``(domain, address, key name, reason)``
            for each failure that is logged (so under the same rate limit); the key
            name is the one it has in any directory (a subscriber key knocking on
            the admin socket), else ``"unknown key ABCDEFGH…"`` (the public key's
            first characters). Must not raise; should be quick.
    """

    def __init__(
        self,
        context: zmq.Context,
        directories: Mapping[str, Path],
        *,
        log_every_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        on_refused: Callable[[str, str, str, str], None] | None = None,
    ) -> None:
        super().__init__(context, log=logging.getLogger(__name__ + ".zap"))
        self.directories = dict(directories)
        self.failures: dict[str, int] = dict.fromkeys(self.directories, 0)
        """ZAP domain -> failed authentications so far (read from anywhere)."""
        self._names: dict[str, dict[bytes, str]] = {}
        self._log_every_s = log_every_s
        self._clock = clock
        self._last_logged: dict[str, float] = {}
        self._lock = threading.Lock()  # reload() callers, not the ZAP thread
        self._request: tuple[str, str, bytes] = ("", "", b"")  # (domain, address, key)
        self._on_refused = on_refused
        self._thread: threading.Thread | None = None
        self._stopper: zmq.Socket | None = None  # the caller's end of the stop pipe
        self._stop_endpoint = f"inproc://catalogd-zap-stop-{id(self):x}"

    def start(self, timeout: float = 10.0) -> None:
        """Load every directory, then start answering ZAP requests (on ``catalogd-zap``).

        Raises:
            ConfigError: a directory cannot be read.
            zmq.ZMQError: the ZAP endpoint cannot be bound (another handler on this
                context), or the thread did not start within ``timeout``.
        """
        self.reload()
        stopper = self.context.socket(zmq.PAIR)
        stopper.setsockopt(zmq.LINGER, 0)
        stopper.bind(self._stop_endpoint)
        started = threading.Event()
        failure: list[zmq.ZMQError] = []
        thread = threading.Thread(
            target=self._run, args=(started, failure), name="catalogd-zap", daemon=True
        )
        thread.start()
        if not started.wait(timeout) or failure:
            stopper.close(linger=0)
            thread.join(timeout)
            raise failure[0] if failure else zmq.ZMQError(zmq.ETIMEDOUT, "ZAP thread not started")
        self._thread, self._stopper = thread, stopper

    def stop(self, timeout: float = 10.0) -> None:
        """Make the ZAP thread close its socket and end; joins it. Idempotent."""
        stopper, self._stopper = self._stopper, None
        if stopper is None:
            return
        with contextlib.suppress(zmq.ZMQError):  # the thread is gone already
            stopper.send(b"stop", zmq.NOBLOCK)
        if self._thread is not None:
            self._thread.join(timeout)
        stopper.close(linger=0)

    def is_alive(self) -> bool:
        """Is the ZAP thread running?"""
        return self._thread is not None and self._thread.is_alive()

    def _run(self, started: threading.Event, failure: list[zmq.ZMQError]) -> None:
        """The ZAP thread: its sockets are created, used and closed here."""
        zap = self.context.socket(zmq.REP)
        stop = self.context.socket(zmq.PAIR)
        loop = asyncio.new_event_loop()  # handle_zap_message is a coroutine that never waits
        try:
            zap.setsockopt(zmq.LINGER, 0)
            stop.setsockopt(zmq.LINGER, 0)
            try:
                zap.bind(ZAP_ENDPOINT)
                stop.connect(self._stop_endpoint)
            except zmq.ZMQError as exc:
                failure.append(exc)
                return
            self.zap_socket = zap
            poller = zmq.Poller()
            poller.register(zap, zmq.POLLIN)
            poller.register(stop, zmq.POLLIN)
            started.set()
            while True:
                ready = dict(poller.poll())
                if stop in ready:
                    return
                if zap in ready:
                    self._answer(loop, zap.recv_multipart())
        except zmq.ContextTerminated:
            return  # the context is ending: close and go
        finally:
            self.zap_socket = None  # type: ignore[assignment]
            zap.close(linger=0)
            stop.close(linger=0)
            loop.close()
            started.set()

    def _answer(self, loop: asyncio.AbstractEventLoop, msg: list[bytes]) -> None:
        """Answer one ZAP request; a failure answers 500, so the REP socket stays in step."""
        try:
            loop.run_until_complete(self.handle_zap_message(msg))
        except Exception:  # noqa: BLE001 - the ZAP thread must keep answering
            log.exception("ZAP request failed")
            if len(msg) > 1:
                with contextlib.suppress(zmq.ZMQError):  # EFSM: the reply went out already
                    super()._send_zap_reply(msg[1], b"500", b"Internal error")

    def reload(self) -> dict[str, set[str]]:
        """Re-read every directory (on SIGHUP). Returns domain -> names no longer allowed.

        Raises:
            ConfigError: a directory cannot be read (nothing is changed then).
        """
        with self._lock:
            loaded = {domain: load_directory(path) for domain, path in self.directories.items()}
            removed: dict[str, set[str]] = {}
            for domain, keys in loaded.items():
                old = self._names.get(domain, {})
                gone = {name for key, name in old.items() if key not in keys}
                if gone:
                    removed[domain] = gone
                self._names[domain] = keys
                self.certs[domain] = dict.fromkeys(keys, True)
            return removed

    def allowed(self, domain: str) -> list[str]:
        """The names of the keys allowed in ``domain`` now."""
        return sorted(self._names.get(domain, {}).values())

    # -- the ZAP thread ---------------------------------------------------------------

    async def handle_zap_message(self, msg: list[bytes]) -> None:
        # Remember whom we are answering, for curve_user_id and _send_zap_reply
        # (pyzmq does not pass them on). One request at a time on this thread.
        if len(msg) >= 4:
            self._request = (
                msg[2].decode("utf-8", "replace"),
                msg[3].decode("utf-8", "replace"),
                msg[6] if len(msg) == 7 and msg[5] == b"CURVE" else b"",
            )
        await super().handle_zap_message(msg)

    def curve_user_id(self, client_public_key: bytes) -> str:
        """The User-Id of an allowed key: its file name in the domain's directory."""
        z85 = zmq.utils.z85.encode(client_public_key)
        return self._names.get(self._request[0], {}).get(z85, "unnamed")

    def _send_zap_reply(
        self, request_id: bytes, status_code: bytes, status_text: bytes, user_id: Any = "anonymous"
    ) -> None:
        if status_code != b"200":
            self._failed(status_text.decode("utf-8", "replace"))
        super()._send_zap_reply(request_id, status_code, status_text, user_id)

    def _failed(self, reason: str) -> None:
        domain, address, key = self._request
        self.failures[domain] = self.failures.get(domain, 0) + 1
        now = self._clock()
        if now - self._last_logged.get(address, -1e18) < self._log_every_s:
            return
        if len(self._last_logged) > 10_000:  # bounded: forget old addresses
            self._last_logged.clear()
        self._last_logged[address] = now
        log.warning(
            "authentication failed on the %s sockets from %s: %s (%d failures so far; "
            "at most one line per address every %gs)",
            domain,
            address or "an unknown address",
            reason,
            self.failures[domain],
            self._log_every_s,
        )
        if self._on_refused is not None:
            try:
                self._on_refused(domain, address, self._name_anywhere(key), reason)
            except Exception:  # noqa: BLE001 - the ZAP thread must keep answering
                log.exception("the on_refused hook failed")

    def _name_anywhere(self, key: bytes) -> str:
        z85 = zmq.utils.z85.encode(key) if len(key) == 32 else b""
        for names in self._names.values():
            if z85 in names:
                return names[z85]
        return f"unknown key {z85[:8].decode()}…" if z85 else "no key"
