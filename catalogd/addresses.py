"""Addresses: catalogd's default ports, Hive Metastore URIs, loopback ports, endpoints.

A leaf module every layer may import (configuration, servers, the HMS client and
harness, tests): it imports nothing of catalogd and opens no connection;
:func:`free_port` alone touches a socket (bound and closed at once).
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from subscriber.protocol.errors import InvalidRequestError

__all__ = [
    "DEFAULT_ADMIN_PORT",
    "DEFAULT_EMBEDDED_HMS_PORT",
    "DEFAULT_PORT",
    "DEFAULT_WEB_PORT",
    "free_port",
    "next_port_endpoint",
    "parse_metastore_uri",
]

DEFAULT_PORT = 26500
"""The subscribers' ROUTER port (the PUB takes the next one by default)."""
DEFAULT_ADMIN_PORT = 26502
"""The admin endpoint's port."""
DEFAULT_EMBEDDED_HMS_PORT = 26503
"""The embedded Hive Metastore's port: next to catalogd's own three, so it is stable
across restarts (a sidecar endpoint keeps its ``--upstream``) and clear of 9083, the
port a real HMS and ``python -m subscriber metastore --listen`` default to."""
DEFAULT_WEB_PORT = 26504
"""The web status page's port (issue 27 asked for 26503, which the embedded HMS
already had: the next free one)."""


def parse_metastore_uri(uri: str) -> tuple[str, int]:
    """Split ``thrift://host:port`` into (host, port).

    Raises InvalidRequestError for anything else (other scheme, no port, a path,
    credentials, a query).
    """
    expected = f"a Hive Metastore URI looks like thrift://host:9083, not {uri!r}"
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError as exc:
        raise InvalidRequestError(expected) from exc
    if (
        parts.scheme != "thrift"
        or not parts.hostname
        or port is None
        or port == 0
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        raise InvalidRequestError(expected)
    return parts.hostname, port


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (another process may take it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def next_port_endpoint(bind: str) -> str:
    """``tcp://h:26500`` -> ``tcp://h:26501``; an endpoint without a fixed port (``*``,
    0, none) -> ``tcp://h:*``."""
    head, _, port = bind.rpartition(":")
    if not port.isdigit() or int(port) == 0:
        return f"{head}:*"
    return f"{head}:{int(port) + 1}"
