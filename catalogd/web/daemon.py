"""Start the web status page for ``catalogd serve`` (one call from the start-up steps)."""

from __future__ import annotations

import logging
import time
from contextlib import ExitStack
from typing import Any

from catalogd.config import Config
from catalogd.security.policy import is_loopback
from catalogd.status import status_detail
from catalogd.web.access import Access, load_tokens
from catalogd.web.app import make_app
from catalogd.web.census import Census
from catalogd.web.server import WebServer
from catalogd.web.sources import DaemonSources

__all__ = ["start_web"]

log = logging.getLogger("catalogd")


def start_web(config: Config, stack: ExitStack, parts: Any) -> WebServer | None:
    """Serve the status page when ``config.web.bind`` is set; None when off.

    ``parts`` is the daemon's :class:`catalogd.startup.Startup` once the admin
    endpoint and change detection started (server, loader, info, store, metrics,
    keeper, detector).

    Raises:
        ConfigError: an unusable tokens file.
        UnavailableError: the address cannot be bound.
    """
    web = config.web
    if not web.bind:
        return None
    tokens = load_tokens(web.tokens) if web.tokens is not None else None
    access = Access(tokens, loopback=is_loopback(web.bind))
    server, info = parts.server, parts.info
    dead_after = 3 * config.server.heartbeat_interval_s + 1.0

    def status() -> dict[str, Any]:
        now = time.time()
        live = {c: s for c, s in dict(server.stats.subscribers).items() if now - s[1] < dead_after}
        return status_detail(server, parts.loader, info, live)

    detector = getattr(parts, "detector", None)
    sources = DaemonSources(
        server,
        status,
        ha=info.reports.ha,
        audit=lambda limit: parts.store.audit(limit),
        registry=parts.metrics.registry,
        last_event_id=lambda: detector.stats.last_event_id if detector is not None else None,
        last_checked=lambda: detector.stats.last_checked if detector is not None else None,
    )
    census = Census(sources.read).start()
    stack.callback(census.close)
    sources.census_of = census
    http = WebServer(
        make_app(sources, access), web.bind, tls_cert=web.tls_cert, tls_key=web.tls_key
    ).start()
    stack.callback(http.close)
    log.info(
        "web status page at %s/ (%s)",
        http.url,
        "tokens required" if access.required else "no tokens",
    )
    return http
