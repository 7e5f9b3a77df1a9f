"""A server socket's CURVE settings, and the key name a received message came from.

Imported by the server and admin threads, so it depends on nothing of catalogd
but plain values (no configuration, no key files).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import zmq


@dataclass(frozen=True, slots=True)
class CurveServer:
    """What a socket needs to be a CURVE server: the key pair (Z85) and its ZAP domain."""

    public: bytes
    secret: bytes = field(repr=False)
    domain: str = "subscribers"

    def for_domain(self, domain: str) -> CurveServer:
        """The same keys under another ZAP domain."""
        return CurveServer(self.public, self.secret, domain)


def apply(socket: zmq.Socket, curve: CurveServer | None) -> None:
    """Make ``socket`` a CURVE server in ``curve.domain`` (None: leave it plain). Before bind."""
    if curve is None:
        return
    socket.setsockopt(zmq.CURVE_SERVER, 1)
    socket.setsockopt(zmq.CURVE_PUBLICKEY, curve.public)
    socket.setsockopt(zmq.CURVE_SECRETKEY, curve.secret)
    socket.setsockopt(zmq.ZAP_DOMAIN, curve.domain.encode())


def user_id(frame: zmq.Frame | bytes) -> str:
    """The ZAP User-Id (our key name) of a message received with ``copy=False``.

    Only meaningful on a CURVE socket; "" when libzmq has none for the frame.
    """
    if isinstance(frame, bytes):
        return ""  # received with copy=True: no properties
    try:
        value = frame.get("User-Id")
    except zmq.ZMQError:
        return ""
    return value if isinstance(value, str) else ""
