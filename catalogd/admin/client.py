"""A client for catalogd's admin endpoint (used by ``catalogd admin`` and tests)."""

from __future__ import annotations

import getpass
import json
import time
from typing import Any

import zmq
from zmq.utils.monitor import recv_monitor_message

import idl
from catalogd.addresses import DEFAULT_ADMIN_PORT, DEFAULT_PORT
from subscriber import curve
from subscriber.curve import ClientKeys
from subscriber.protocol import codec
from subscriber.protocol.errors import ProtocolError, UnavailableError

svc = idl.catalog_service

CONNECT_TIMEOUT_S = 5.0
"""How long a request waits for a TCP connection before saying nothing listens."""
_WHERE = (
    f"Admin commands go to catalogd's admin endpoint (--admin-bind, default "
    f"tcp://127.0.0.1:{DEFAULT_ADMIN_PORT}), not its subscriber endpoint "
    f"(--bind, default port {DEFAULT_PORT})."
)


class AdminClient:
    """Sends one admin request at a time and waits for its answer.

    Args:
        endpoint: catalogd's admin address, e.g. ``tcp://127.0.0.1:26502``.
        timeout_s: how long to wait for an answer (add the sync timeout when
            using ``sync``).
        keys: CURVE keys (:func:`subscriber.curve.client_keys`) when catalogd
            uses them; catalogd then records the key's name as the requester.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        timeout_s: float = 60.0,
        context: zmq.Context | None = None,
        keys: ClientKeys | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self.keys = keys
        self._context = context or zmq.Context.instance()

    def call(self, command: int, **fields: Any) -> Any:
        """Send ``TAdminRequest(command, **fields)``; return the ``TAdminResponse``.

        HA: a standby answers UNAVAILABLE naming the active's admin endpoint; the
        command is then sent there (at most twice more; ``endpoint`` is updated).

        Raises:
            AuthenticationError: catalogd refused the key (or the server key is wrong).
            UnavailableError: nothing listens at the endpoint (said within
                :data:`CONNECT_TIMEOUT_S`), or no answer within the timeout.
            ProtocolError: the answer does not decode.
        """
        fields.setdefault("requester", _requester())
        request = svc.TAdminRequest(command=command, **fields)
        response = self._call_once(request)
        for _ in range(2):
            active = _active_admin(response)
            if not active or active == self.endpoint:
                break
            self.endpoint = active
            response = self._call_once(request)
        return response

    def _call_once(self, request: Any) -> Any:
        sock = self._context.socket(zmq.REQ)
        monitor = sock.get_monitor_socket(curve.HANDSHAKE_EVENTS | zmq.EVENT_CONNECTED)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            curve.apply(sock, self.keys)
            sock.connect(self.endpoint)
            # A REQ send blocks while it has no connection to queue on, and a refused
            # handshake drops each one: bounded (a keyless call hung > 60 s in a suite run).
            sock.setsockopt(zmq.SNDTIMEO, int(min(self.timeout_s, CONNECT_TIMEOUT_S) * 1000))
            try:
                sock.send(codec.pack(request))
            except zmq.Again:
                while monitor.poll(0):
                    failure = curve.handshake_failure(
                        recv_monitor_message(monitor), self.endpoint, with_keys=bool(self.keys)
                    )
                    if failure is not None:
                        raise failure from None
                raise UnavailableError(
                    f"no connection to {self.endpoint} took the request within "
                    f"{min(self.timeout_s, CONNECT_TIMEOUT_S):g}s. {_WHERE}"
                ) from None
            poller = zmq.Poller()
            poller.register(sock, zmq.POLLIN)
            poller.register(monitor, zmq.POLLIN)
            started = time.monotonic()
            deadline = started + self.timeout_s
            # Nothing listening is clear within seconds; a slow answer may take the timeout.
            connect_deadline = started + min(self.timeout_s, CONNECT_TIMEOUT_S)
            connected = False
            while (left := (deadline if connected else connect_deadline) - time.monotonic()) > 0:
                ready = dict(poller.poll(int(left * 1000) + 1))
                if sock in ready:
                    return codec.unpack(svc.TAdminResponse, sock.recv())
                if monitor in ready:
                    event = recv_monitor_message(monitor)
                    connected = connected or event.get("event") == zmq.EVENT_CONNECTED
                    failure = curve.handshake_failure(
                        event, self.endpoint, with_keys=bool(self.keys)
                    )
                    if failure is not None:
                        raise failure
            if not connected:
                raise UnavailableError(
                    f"nothing answered at {self.endpoint} within "
                    f"{min(self.timeout_s, CONNECT_TIMEOUT_S):g}s: no process listens there. "
                    f"Is catalogd running? {_WHERE}"
                )
            raise UnavailableError(
                f"{self.endpoint} accepted the connection but sent no answer within "
                f"{self.timeout_s:g}s: catalogd is busy, or this is not its admin endpoint. "
                f"{_WHERE}"
            )
        finally:
            sock.disable_monitor()
            monitor.close(linger=0)
            sock.close(linger=0)


def _active_admin(response: Any) -> str:
    """The active's admin endpoint a standby's answer names ("" when none)."""
    if response.status.code != svc.TStatusCode.UNAVAILABLE or not response.detail_json:
        return ""
    try:
        return str(json.loads(response.detail_json).get("active_admin") or "")
    except (ValueError, AttributeError):
        return ""


def _requester() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def response_dict(response: Any) -> dict[str, Any]:
    """A JSON-able view of a ``TAdminResponse``."""
    try:
        detail = json.loads(response.detail_json) if response.detail_json else {}
    except ValueError as exc:
        raise ProtocolError(f"bad detail_json: {exc}") from exc
    return {
        "status": svc.TStatusCode._VALUES_TO_NAMES.get(
            response.status.code, str(response.status.code)
        ),
        "message": response.status.message,
        "version": response.version,
        "unconfirmed_subscribers": response.unconfirmed_subscribers,
        "detail": detail,
    }
