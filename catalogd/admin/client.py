"""A client for catalogd's admin endpoint (used by ``catalogd admin`` and tests)."""

from __future__ import annotations

import getpass
import json
from typing import Any

import zmq

import idl
from subscriber.protocol import codec
from subscriber.protocol.errors import ProtocolError, UnavailableError

svc = idl.catalog_service


class AdminClient:
    """Sends one admin request at a time and waits for its answer.

    Args:
        endpoint: catalogd's admin address, e.g. ``tcp://127.0.0.1:26502``.
        timeout_s: how long to wait for an answer (add the sync timeout when
            using ``sync``).
    """

    def __init__(
        self, endpoint: str, *, timeout_s: float = 60.0, context: zmq.Context | None = None
    ) -> None:
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self._context = context or zmq.Context.instance()

    def call(self, command: int, **fields: Any) -> Any:
        """Send ``TAdminRequest(command, **fields)``; return the ``TAdminResponse``.

        Raises:
            UnavailableError: no answer within the timeout (catalogd down or busy).
            ProtocolError: the answer does not decode.
        """
        fields.setdefault("requester", _requester())
        request = svc.TAdminRequest(command=command, **fields)
        sock = self._context.socket(zmq.REQ)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            sock.connect(self.endpoint)
            sock.send(codec.pack(request))
            if not sock.poll(int(self.timeout_s * 1000)):
                raise UnavailableError(
                    f"no answer from catalogd at {self.endpoint} within {self.timeout_s:g}s"
                )
            return codec.unpack(svc.TAdminResponse, sock.recv())
        finally:
            sock.close(linger=0)


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
