"""What ``catalogd serve`` checks before starting anything slow.

:func:`check_addresses` binds (and closes at once) every address the daemon will
listen on, so a port taken by another catalogd is reported in milliseconds,
naming the flag that set it, instead of after the Hive Metastore started and the
demo was created. The data directory lock is :mod:`catalogd.data_dir`.

The check can race (another process may take a port between the check and the
real bind); the real bind still fails then, only later.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator

from catalogd.config import Config
from subscriber.protocol.errors import ConflictError, InvalidRequestError


def listen_addresses(config: Config) -> Iterator[tuple[str, str, int]]:
    """(flag, host, port) of each fixed-port address ``config`` listens on."""
    server = config.server
    zmq = [("--admin-bind", server.admin_bind)]
    if not config.ha.enabled:  # a standby binds these only once it takes over
        zmq = [("--bind", server.bind), ("--pub-bind", server.pub_bind or ""), *zmq]
    for flag, endpoint in zmq:
        host, _, port = endpoint.removeprefix("tcp://").rpartition(":")
        if port.isdigit() and int(port) > 0:
            yield flag, host, int(port)
    if config.metrics.bind:
        host, _, port = config.metrics.bind.rpartition(":")
        if port.isdigit() and int(port) > 0:
            yield "--metrics-bind", host, int(port)
    if config.web.bind:
        host, _, port = config.web.bind.rpartition(":")
        if port.isdigit() and int(port) > 0:
            yield "--web-bind", host, int(port)


def check_addresses(config: Config) -> None:
    """Bind each address of :func:`listen_addresses` once, the way ZeroMQ will.

    Raises:
        ConflictError: an address is taken (the message names the flag and hints at
            another catalogd).
        InvalidRequestError: a host that does not resolve to a local address.
    """
    for flag, host, port in listen_addresses(config):
        check_bindable(flag, host, port)


def check_bindable(flag: str, host: str, port: int) -> None:
    """Bind ``host:port`` with ``SO_REUSEADDR`` (as ZeroMQ and HTTP servers do), then close.

    Raises:
        ConflictError: the address is in use.
        InvalidRequestError: ``host`` is not an address of this machine.
    """
    name = host.strip("[]")
    name = "0.0.0.0" if name in ("*", "") else name
    try:
        family, kind, proto, _, address = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise InvalidRequestError(f"{flag}: cannot resolve {host!r}: {exc}") from exc
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConflictError(
                    f"{flag} {host}:{port} is already in use: another catalogd may be "
                    f"running (see `catalogd admin status`); stop it, or give this one "
                    f"another {flag}"
                ) from exc
            raise InvalidRequestError(f"{flag} {host}:{port}: cannot bind: {exc}") from exc
