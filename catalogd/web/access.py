"""Who may see the web pages, and who may change a logger's level.

Bearer tokens from a file (``web.tokens``): one ``NAME ROLE TOKEN`` line per client,
``ROLE`` being ``read`` (every page) or ``admin`` (also ``POST /log_level``); blank
lines and ``#`` comments are skipped. A request presents its token as
``Authorization: Bearer TOKEN`` or, for a browser, HTTP basic auth with the token
as password (any user name). Tokens are compared in constant time.

Without a tokens file (allowed on loopback, or with ``--insecure``) every request
may read; changing a level is then allowed on a loopback bind only (anyone on the
host can already run ``catalogd admin``), never on an exposed one. ``/healthz`` and
``/readyz`` need no token: probes carry none and the answers hold no catalog data.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import stat
from dataclasses import dataclass
from pathlib import Path

from catalogd.config import ConfigError

__all__ = ["ADMIN", "READ", "Access", "Principal", "load_tokens"]

READ, ADMIN = "read", "admin"
OPEN_PATHS = frozenset({"/healthz", "/readyz"})


@dataclass(frozen=True)
class Principal:
    """Who sent a request: the token's name and role (``anonymous`` without tokens)."""

    name: str
    role: str


def load_tokens(path: Path) -> dict[str, Principal]:
    """Token -> principal, from a tokens file.

    Raises:
        ConfigError: unreadable, readable by group or others, or a malformed line.
    """
    try:
        mode = path.stat().st_mode
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"web.tokens {path}: cannot read it: {exc.strerror or exc}") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"web.tokens {path}: readable by others: chmod 600 it")
    tokens: dict[str, Principal] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 3 or words[1] not in (READ, ADMIN) or len(words[2]) < 16:
            raise ConfigError(
                f"web.tokens {path}:{number}: expected NAME ROLE TOKEN, ROLE read or admin, "
                "TOKEN of 16 characters or more"
            )
        tokens[words[2]] = Principal(words[0], words[1])
    return tokens


class Access:
    """Decides each request's principal (see the module docstring).

    Args:
        tokens: token -> principal; None: no tokens configured.
        loopback: whether the page is bound to loopback only.
    """

    def __init__(self, tokens: dict[str, Principal] | None, *, loopback: bool) -> None:
        self._tokens = tokens
        self.loopback = loopback

    @property
    def required(self) -> bool:
        return self._tokens is not None

    def identify(self, authorization: str | None) -> Principal | None:
        """The principal an ``Authorization`` header names; None: refuse (401)."""
        if self._tokens is None:
            return Principal("anonymous", ADMIN if self.loopback else READ)
        token = _token(authorization or "")
        if token is None:
            return None
        found = None
        for known, principal in self._tokens.items():  # constant time per token
            if hmac.compare_digest(known.encode(), token.encode()):
                found = principal
        return found


def _token(header: str) -> str | None:
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() == "bearer":
        return value.strip() or None
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None
        return decoded.partition(":")[2] or None
    return None
