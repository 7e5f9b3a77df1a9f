"""One client connection's link to the upstream Hive Metastore (blocking sockets).

:class:`Upstream` is owned by one endpoint connection thread. It connects
lazily on the first forwarded call, replays the client's ``set_ugi`` first (HMS
ties the caller's identity to the connection), sends raw call messages and
reads the raw reply back, delimited by :func:`~subscriber.metastore.framing.message_end`.
A broken or refused connection raises
:class:`~subscriber.protocol.errors.MetastoreUnavailableError` and is dropped;
the next call connects again.
"""

from __future__ import annotations

import contextlib
import socket

from subscriber.metastore import framing
from subscriber.protocol.errors import InvalidRequestError, MetastoreUnavailableError, ProtocolError


def parse_uri(uri: str) -> tuple[str, int]:
    """``thrift://host:port`` (the first of a comma-separated list) -> (host, port).

    Raises:
        InvalidRequestError: not of that form.
    """
    first = uri.split(",")[0].strip()
    rest = first.removeprefix("thrift://")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InvalidRequestError(f"expected thrift://HOST:PORT, got {uri!r}")
    return host.strip("[]"), int(port)


class Upstream:
    """A lazily opened connection to HMS. Not thread-safe: one owner thread.

    Args:
        uri: ``thrift://host:port`` of the Hive Metastore.
        connect_timeout_s: to connect.
        call_timeout_s: to wait for one reply.
    """

    def __init__(self, uri: str, *, connect_timeout_s: float = 5.0, call_timeout_s: float = 600.0):
        self.uri = uri
        self._address = parse_uri(uri)
        self._connect_timeout = connect_timeout_s
        self._call_timeout = call_timeout_s
        self._sock: socket.socket | None = None
        self._buf = bytearray()
        self.ugi_message: bytes | None = None
        """The client's last ``set_ugi`` call, replayed on every new connection."""

    def call(self, message: bytes, *, oneway: bool = False) -> bytes | None:
        """Send one call message; return the raw reply message (None for oneway).

        Raises:
            MetastoreUnavailableError: HMS cannot be reached, or the connection
                broke or timed out before the reply arrived.
            ProtocolError: HMS answered with bytes that are no Thrift message.
        """
        try:
            sock = self._connected()
            sock.sendall(message)
            return None if oneway else self._read(sock)
        except OSError as exc:
            self.close()
            raise MetastoreUnavailableError(
                f"the Hive Metastore at {self.uri} is unreachable: {exc}"
            ) from exc
        except ProtocolError:
            self.close()
            raise

    def close(self) -> None:
        """Drop the connection (idempotent); the next call connects again."""
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        self._sock = None
        self._buf.clear()

    def _connected(self) -> socket.socket:
        if self._sock is not None:
            return self._sock
        sock = socket.create_connection(self._address, timeout=self._connect_timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(self._call_timeout)
        self._sock = sock
        if self.ugi_message is not None:
            sock.sendall(self.ugi_message)
            self._read(sock)  # HMS's answer to the replayed set_ugi: not the client's business
        return sock

    def _read(self, sock: socket.socket) -> bytes:
        while True:
            end = framing.message_end(self._buf)
            if end is not None:
                reply = bytes(self._buf[:end])
                del self._buf[:end]
                return reply
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise ConnectionResetError("the Hive Metastore closed the connection")
            self._buf += chunk
