"""CURVE keys on the client side: load them, put them on a socket, read why a handshake failed.

:func:`load_certificate` is also how catalogd reads its own key files
(``catalogd/security/keys.py``): one reader of certificate files for both sides.

catalogd authenticates every peer with ZeroMQ's CURVE mechanism when it is given
keys (see ``docs/DESIGN.md``, "Security"). A client then needs three keys: its
own key pair and catalogd's public key. :func:`client_keys` accepts each as a
path to a ZeroMQ certificate file (as written by ``catalogd keys generate`` or
``zmq.auth.create_certificates``) or as the 40-character Z85 key itself, and
:func:`apply` sets them on a socket before it connects.

How a client learns that it was refused (measured with libzmq 4.3): a socket
monitor reports ``EVENT_HANDSHAKE_FAILED_AUTH`` (value: the ZAP status code, 400)
when catalogd does not know the client's key; ``EVENT_HANDSHAKE_FAILED_PROTOCOL``
(mechanism mismatch) when one side speaks CURVE and the other does not; and
``EVENT_HANDSHAKE_FAILED_NO_DETAIL`` when the server key is wrong (catalogd
cannot open the client's HELLO and drops the connection) -- though a mismatch is
reported either way from one attempt to the next. :func:`handshake_failure`
turns one monitor event into an explanation; :class:`HandshakeWatch` reads a monitor.

The secret key never leaves this module's values in printable form: ``repr``
of :class:`ClientKeys` hides it, and no message here contains it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import zmq
import zmq.auth
from zmq.utils.monitor import recv_monitor_message

from subscriber.protocol.errors import AuthenticationError, InvalidRequestError

log = logging.getLogger(__name__)
_EVENTS, _POLLIN = int(zmq.EVENTS), int(zmq.POLLIN)

KeySource = str | bytes | os.PathLike[str]
"""A path to a certificate file, or a Z85-encoded key (40 characters)."""

Z85_KEY_LENGTH = 40
PUBLIC_SUFFIX = ".key"
SECRET_SUFFIX = ".key_secret"
"""Certificate file names: ``NAME.key`` (public) and ``NAME.key_secret`` (both halves)."""


@dataclass(frozen=True, slots=True)
class ClientKeys:
    """The keys a client connects with (Z85 bytes). ``repr`` never shows the secret."""

    server_public: bytes
    public: bytes
    secret: bytes = field(repr=False)


def client_keys(server_key: KeySource, client_key: KeySource) -> ClientKeys:
    """Load catalogd's public key and the client's key pair.

    Args:
        server_key: catalogd's public key: a certificate file (public or secret
            one) or the Z85 key.
        client_key: the client's *secret* certificate file (it holds both
            halves), or the Z85 secret key (the public half is derived).

    Raises:
        InvalidRequestError: a file is missing or unreadable, holds no key of the
            needed kind, or a value is not a key. The message names the file, never
            the key material.
    """
    server_public, _ = _load(server_key, "server key", need_secret=False)
    public, secret = _load(client_key, "client key", need_secret=True)
    assert secret is not None
    return ClientKeys(server_public=server_public, public=public, secret=secret)


def _load(source: KeySource, what: str, *, need_secret: bool) -> tuple[bytes, bytes | None]:
    raw = os.fsencode(source) if isinstance(source, os.PathLike) else source
    text = raw if isinstance(raw, bytes) else raw.encode()
    if (
        len(text) == Z85_KEY_LENGTH
        and not isinstance(source, os.PathLike)
        and not os.path.exists(text)
    ):
        try:
            if need_secret:
                return zmq.curve_public(text), text
            return text, None
        except (zmq.ZMQError, ValueError) as exc:
            raise InvalidRequestError(f"{what}: not a Z85 CURVE key") from exc
    try:
        return load_certificate(Path(os.fsdecode(text)), need_secret=need_secret)
    except InvalidRequestError as exc:
        raise InvalidRequestError(f"{what}: {exc}") from exc


def load_certificate(path: Path, *, need_secret: bool = False) -> tuple[bytes, bytes | None]:
    """The ``(public, secret)`` Z85 keys of a ZeroMQ certificate file (``secret`` is None
    in a public ``NAME.key`` file). The one certificate reader of catalogd and its clients.

    Raises:
        InvalidRequestError: the file is missing, unreadable or no certificate, or
            ``need_secret`` and it holds no secret key. The message names the file,
            never the key material.
    """
    try:
        public, secret = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as exc:
        raise InvalidRequestError(
            f"cannot read a CURVE certificate from {path}: {type(exc).__name__}"
        ) from exc
    if need_secret and not secret:
        raise InvalidRequestError(f"{path} holds no secret key: give the *{SECRET_SUFFIX} file")
    return public, secret


def apply(socket: zmq.Socket, keys: ClientKeys | None) -> None:
    """Make ``socket`` a CURVE client with ``keys`` (None: leave it plain). Before connect."""
    if keys is None:
        return
    socket.setsockopt(zmq.CURVE_SERVERKEY, keys.server_public)
    socket.setsockopt(zmq.CURVE_PUBLICKEY, keys.public)
    socket.setsockopt(zmq.CURVE_SECRETKEY, keys.secret)


def handshake_failure(
    event: Mapping[str, Any], endpoint: str, *, with_keys: bool
) -> AuthenticationError | None:
    """The error a socket monitor ``event`` reports, or None if it is not a failed handshake.

    ``with_keys`` says whether the socket had CURVE keys: libzmq reports a
    mechanism mismatch as either a protocol error or "no detail" (it varies from
    one attempt to the next), so what the client knows about itself decides
    the explanation.
    """
    kind = event.get("event")
    if kind == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
        return AuthenticationError(
            f"catalogd at {endpoint} refused this client's key (ZAP status "
            f"{int(event.get('value', 0))}): it is not in the allowed keys"
        )
    if kind in (zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL):
        if not with_keys:
            return AuthenticationError(
                f"security handshake with {endpoint} failed: catalogd requires CURVE keys "
                "(give server_key and client_key)"
            )
        return AuthenticationError(
            f"security handshake with {endpoint} failed: wrong server key, or catalogd "
            "does not use CURVE keys"
        )
    return None


HANDSHAKE_EVENTS = (
    zmq.EVENT_HANDSHAKE_FAILED_AUTH
    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    | zmq.EVENT_HANDSHAKE_SUCCEEDED
)
"""The monitor events :func:`handshake_failure` looks at (and success, which clears them)."""


class HandshakeWatch:
    """Reads a socket monitor's handshake events (:data:`HANDSHAKE_EVENTS`): keeps the
    last failure as :attr:`last_error` until a handshake succeeds, and logs each kind of
    failure once (not once per retry). One per client, across its sessions' monitors."""

    def __init__(self, *, with_keys: bool) -> None:
        self.last_error: AuthenticationError | None = None
        self._with_keys = with_keys
        self._logged: set[str] = set()

    def check(self, monitor: zmq.Socket, endpoint: str) -> None:
        """Read every event waiting on ``monitor`` (never blocks; ``EVENTS`` costs less
        than ``poll(0)``)."""
        while cast(int, monitor.getsockopt(_EVENTS)) & _POLLIN:
            try:
                event = recv_monitor_message(monitor, zmq.NOBLOCK)
            except zmq.ZMQError:
                return
            if event["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.last_error = None
                continue
            error = handshake_failure(event, endpoint, with_keys=self._with_keys)
            if error is not None:
                if str(error) not in self._logged:
                    self._logged.add(str(error))
                    log.warning("%s", error)
                self.last_error = error
