"""Ports and endpoints: a free loopback port, the publisher's port next to the ROUTER's."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (another process may take it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def next_port_endpoint(bind: str) -> str:
    """``tcp://h:26500`` -> ``tcp://h:26501``; an endpoint without a fixed port -> ``tcp://h:*``."""
    head, _, port = bind.rpartition(":")
    if not port.isdigit():
        return f"{head}:*"
    return f"{head}:{int(port) + 1}"
