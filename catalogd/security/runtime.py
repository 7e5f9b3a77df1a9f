"""The daemon's security at run time: checked at start, reloaded on SIGHUP, shown in status.

:meth:`Security.open` runs before anything else starts (no HMS, no socket):

1. the exposure rule (:func:`catalogd.security.policy.exposure`): a non-loopback
   address without keys is refused unless ``server.insecure``;
2. with keys: the server's secret key file is checked (permissions) and loaded,
   both key directories are read, and a ZAP handler (:class:`KeyAuthenticator`)
   starts on a ZeroMQ context of its own, which the server and admin sockets
   then use (ZAP is per context: one handler, several domains).

:meth:`Security.reload` (SIGHUP) re-reads the key directories; when a key was
removed, the caller drops the live connections of the sockets it guarded
(see docs/DESIGN.md, "Security", for why that is a rebind).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import zmq

from catalogd.config import Config
from catalogd.security import contexts
from catalogd.security.authenticator import ADMIN, SUBSCRIBERS, KeyAuthenticator
from catalogd.security.curve import CurveServer
from catalogd.security.keys import load_server_keys
from catalogd.security.policy import exposure, web_exposure

log = logging.getLogger(__name__)


class Security:
    """Keys, the ZAP handler and the exposure warning of one daemon. Build with :meth:`open`.

    Attributes:
        context: the ZeroMQ context the server and admin sockets must use (None:
            the default one; only without keys).
        server_curve, admin_curve: the sockets' CURVE settings (None: plain TCP).
        warning: the insecure-exposure warning, logged at start and shown in status.
    """

    def __init__(
        self,
        *,
        context: zmq.Context | None = None,
        curve: CurveServer | None = None,
        authenticator: KeyAuthenticator | None = None,
        warning: str | None = None,
    ) -> None:
        self.context = context
        self.server_curve = curve.for_domain(SUBSCRIBERS) if curve else None
        self.admin_curve = curve.for_domain(ADMIN) if curve else None
        self.authenticator = authenticator
        self.warning = warning
        self.on_revoked: dict[str, Callable[[], None]] = {}
        """ZAP domain -> what drops that domain's live connections (set by the daemon)."""
        self.on_refused: Callable[[str, str, str, str], None] | None = None
        """Set by the daemon: ``(domain, address, key name, reason)`` of a refused
        peer (rate-limited; the daemon writes admin refusals to the audit log)."""

    def _refused(self, domain: str, address: str, name: str, reason: str) -> None:
        if self.on_refused is not None:
            self.on_refused(domain, address, name, reason)

    @classmethod
    def open(cls, config: Config) -> Security:
        """Check the configuration and start the ZAP handler if there are keys.

        Raises:
            ConfigError: an exposed address without keys (and not insecure), an
                unsafe or unreadable secret key file, an unreadable key directory.
        """
        sec = config.security
        binds = [config.server.bind, config.server.pub_bind or "", config.server.admin_bind]
        warning = exposure(binds, keys=sec.enabled, insecure=config.server.insecure)
        web = config.web
        web_warning = web_exposure(
            web.bind,
            tls=web.tls_cert is not None and web.tls_key is not None,
            tokens=web.tokens is not None,
            insecure=config.server.insecure,
        )
        warning = "; ".join(w for w in (warning, web_warning) if w) or None
        if warning:
            log.warning("%s", warning)
        if not sec.enabled:
            return cls(warning=warning)
        assert sec.server_key and sec.subscriber_keys and sec.admin_keys  # config checks it
        keys = load_server_keys(sec.server_key)
        context = zmq.Context()
        security = cls(
            context=context, curve=CurveServer(keys.public, keys.secret), warning=warning
        )
        authenticator = KeyAuthenticator(
            context,
            {SUBSCRIBERS: sec.subscriber_keys, ADMIN: sec.admin_keys},
            on_refused=security._refused,
        )
        try:
            authenticator.start()
        except BaseException:
            contexts.end(context)
            raise
        security.authenticator = authenticator
        log.info(
            "CURVE on: %d subscriber keys (%s), %d admin keys (%s)",
            len(authenticator.allowed(SUBSCRIBERS)),
            sec.subscriber_keys,
            len(authenticator.allowed(ADMIN)),
            sec.admin_keys,
        )
        return security

    def reload(self) -> dict[str, set[str]]:
        """Re-read the key directories (SIGHUP); returns ZAP domain -> key names removed.

        For each domain that lost a key, calls ``on_revoked[domain]`` (the sockets
        drop every connection; the others reconnect and pass ZAP again). A
        directory that cannot be read keeps the keys loaded before (logged).
        """
        if self.authenticator is None:
            return {}
        from catalogd.config import ConfigError

        try:
            removed = self.authenticator.reload()
        except ConfigError as exc:
            log.error("reload: keeping the keys loaded before: %s", exc)
            return {}
        for domain, names in sorted(removed.items()):
            log.warning("revoked %s keys: %s", domain, ", ".join(sorted(names)))
            drop = self.on_revoked.get(domain)
            if drop is not None:
                drop()
        return removed

    def failures(self) -> dict[str, int]:
        """Failed authentications so far, by ZAP domain (``subscribers``, ``admin``)."""
        return dict(self.authenticator.failures) if self.authenticator else {}

    def status(self) -> dict[str, Any]:
        """What ``admin status`` shows: mode, warning, allowed key names, failure counts."""
        if self.authenticator is None:
            mode = "insecure" if self.warning else "plain (loopback only)"
            return {"mode": mode, "warning": self.warning}
        return {
            "mode": "curve",
            "warning": None,
            "subscriber_keys": self.authenticator.allowed(SUBSCRIBERS),
            "admin_keys": self.authenticator.allowed(ADMIN),
            "auth_failures": self.failures(),
        }

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the ZAP handler and end the context (after the sockets it guards are
        closed by their threads; any left open are closed here), waiting for libzmq at
        most ``timeout_s`` (:func:`catalogd.security.contexts.end`). Idempotent."""
        if self.authenticator is not None:
            self.authenticator.stop()
        if self.context is not None:
            contexts.end(self.context, timeout_s)
