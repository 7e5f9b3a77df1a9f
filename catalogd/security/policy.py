"""May catalogd listen on these addresses with this configuration? Pure: strings in, verdict out.

Loopback-only stays zero-configuration. Anything else (a LAN address, ``0.0.0.0``,
``*``, a host name) exposes the catalog, so it needs CURVE keys, or an explicit
``--insecure`` (config ``server.insecure = true``) which then earns a warning at
start and in ``admin status``. The web status page (:func:`web_exposure`) follows the
same rule with its own credentials: HTTPS (``web.tls_cert``, ``web.tls_key``) plus
bearer tokens (``web.tokens``).
"""

from __future__ import annotations

import ipaddress

from catalogd.config import ConfigError

LOOPBACK_NAMES = {"localhost", "ip6-localhost", "ip6-loopback"}
KEY_SETTINGS = (
    "security.server_key (--server-key), security.subscriber_keys (--subscriber-keys) "
    "and security.admin_keys (--admin-keys)"
)


def is_loopback(endpoint: str) -> bool:
    """True when a ``tcp://HOST:PORT`` address is reachable only from this host."""
    host = endpoint.split("://", 1)[-1].rpartition(":")[0].strip("[]")
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name (or *) may resolve to anything: treat it as exposed


def exposure(binds: list[str], *, keys: bool, insecure: bool) -> str | None:
    """Check the listening addresses; return a warning to log and show, or None.

    Raises:
        ConfigError: a non-loopback address without keys and without ``insecure``;
            the message names ``--insecure`` and the key settings.
    """
    exposed = [bind for bind in binds if bind and not is_loopback(bind)]
    if keys or not exposed:
        return None
    if not insecure:
        raise ConfigError(
            f"refusing to listen on {', '.join(exposed)} without keys: anyone who can reach "
            f"it could read the catalog and run admin commands. Configure {KEY_SETTINGS} "
            "(see `catalogd keys generate --help`), or pass --insecure (server.insecure = "
            "true) to serve it unauthenticated and in clear text anyway"
        )
    return (
        f"INSECURE: listening on {', '.join(exposed)} without authentication or encryption "
        "(server.insecure): anyone who can reach it can read the catalog and run admin commands"
    )


WEB_SETTINGS = (
    "web.tls_cert (--web-tls-cert), web.tls_key (--web-tls-key) and web.tokens (--web-tokens)"
)


def web_exposure(bind: str | None, *, tls: bool, tokens: bool, insecure: bool) -> str | None:
    """Check the web page's ``HOST:PORT``; return a warning to log and show, or None.

    Loopback needs nothing (tokens, when given, are still required). Anything else
    needs HTTPS and tokens: a token sent in clear text would be no protection.

    Raises:
        ConfigError: a non-loopback bind without TLS and tokens, and not ``insecure``.
    """
    if not bind or is_loopback(bind) or (tls and tokens):
        return None
    if not insecure:
        raise ConfigError(
            f"refusing to serve the web status page on {bind} without TLS and tokens: "
            f"anyone who can reach it could browse the catalog. Configure {WEB_SETTINGS}, "
            "bind it to loopback, or pass --insecure (server.insecure = true)"
        )
    return f"INSECURE: web status page on {bind} without TLS and tokens (server.insecure)"
