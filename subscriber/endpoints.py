"""catalogd endpoints as users type them: one convention for every command and the library.

``HOST:PORT`` means ``tcp://HOST:PORT``; ``tcp://HOST:PORT`` is taken as is;
``ipc://`` and ``inproc://`` pass unchanged; anything else (``thrift://``, no
port, a port over 65535) is an :class:`InvalidRequestError` where it is given,
never a background thread's retry loop later. Several endpoints (an HA pair) may
be separate arguments or one comma-separated string. Pure: no sockets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from subscriber.protocol.errors import InvalidRequestError

__all__ = ["parse_endpoint", "parse_endpoints", "pub_endpoint"]

_ENDPOINT = re.compile(r"(?:tcp://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")


def parse_endpoint(text: str) -> str:
    """A catalogd endpoint as ZeroMQ takes it: ``tcp://HOST:PORT``.

    The one convention of every command and of :class:`~subscriber.CatalogSubscriber`:
    ``HOST:PORT`` means ``tcp://HOST:PORT``; ``ipc://`` and ``inproc://`` pass as given.

    Raises:
        InvalidRequestError: anything else (another scheme, no port, a port over 65535).
    """
    value = text.strip()
    if value.startswith(("ipc://", "inproc://")) and len(value.split("://", 1)[1]) > 0:
        return value
    match = _ENDPOINT.fullmatch(value)
    if match is None or not 0 < int(match.group(2)) < 65536:
        raise InvalidRequestError(
            f"a catalogd endpoint looks like tcp://HOST:PORT (or HOST:PORT), not {text!r}"
        )
    return f"tcp://{match.group(1)}:{int(match.group(2))}"


def parse_endpoints(values: str | Iterable[str]) -> tuple[str, ...]:
    """Endpoints given as one string or several, each possibly comma-separated
    (``a:26500,b:26500``), parsed by :func:`parse_endpoint`.

    Raises:
        InvalidRequestError: a bad endpoint, or none at all.
    """
    texts = [values] if isinstance(values, str) else list(values)
    found = tuple(parse_endpoint(p) for t in texts for p in t.split(",") if p.strip())
    if not found:
        raise InvalidRequestError("give at least one catalogd endpoint (tcp://HOST:PORT)")
    return found


def pub_endpoint(advertised: str, endpoint: str) -> str:
    """Where to connect to the PUB socket a welcome from ``endpoint`` advertised: its
    address, or with a wildcard host (catalogd bound every interface) ``endpoint``'s."""
    head, _, port = advertised.rpartition(":")
    host = head.split("://", 1)[-1]
    if host in ("0.0.0.0", "*", "[::]", "::"):
        connect_host = endpoint.split("://", 1)[-1].rpartition(":")[0]
        return f"tcp://{connect_host}:{port}"
    return advertised
