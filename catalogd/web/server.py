"""The web status page's HTTP server: uvicorn on a thread of its own.

:class:`WebServer` binds its socket in :meth:`~WebServer.start` (so a taken port fails
there, and port 0 is known at once), then runs uvicorn's asyncio loop on the
``catalogd-web`` thread: one event loop for every connection (a slow or idle client
costs a coroutine and a socket, not a thread; headers are bounded by h11, idle
keep-alive connections close after ``keep_alive_s``, at most ``max_connections``
are served at once, the rest get 503). Routes render on Starlette's worker threads.
:meth:`~WebServer.close` asks uvicorn to exit, waits up to ``grace_s`` for requests
in flight, then joins the thread. uvicorn installs no signal handler off the main
thread, so the daemon's SIGTERM/SIGHUP handling is untouched.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp

from subscriber.protocol.errors import UnavailableError

__all__ = ["WebServer"]

log = logging.getLogger(__name__)


class WebServer:
    """Serves ``app`` at ``host:port`` (HTTPS when ``tls_cert`` and ``tls_key``)."""

    def __init__(
        self,
        app: ASGIApp,
        bind: str,
        *,
        tls_cert: Path | None = None,
        tls_key: Path | None = None,
        keep_alive_s: float = 5.0,
        max_connections: int = 200,
        grace_s: float = 2.0,
    ) -> None:
        host, _, port = bind.rpartition(":")
        self.host, self._port = host.strip("[]"), int(port)
        self.tls = tls_cert is not None and tls_key is not None
        self._config = uvicorn.Config(
            app,
            lifespan="off",
            log_level="warning",
            access_log=False,
            ssl_certfile=str(tls_cert) if self.tls else None,
            ssl_keyfile=str(tls_key) if self.tls else None,
            timeout_keep_alive=int(max(1, keep_alive_s)),
            limit_concurrency=max_connections,
            timeout_graceful_shutdown=int(max(1, grace_s)),
            h11_max_incomplete_event_size=16 * 1024,
            server_header=False,
        )
        self._server = uvicorn.Server(self._config)
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self.port = 0

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    def start(self, timeout: float = 10.0) -> WebServer:
        """Bind and serve in the background.

        Raises:
            UnavailableError: the address cannot be bound, or the server did not start.
        """
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host or "0.0.0.0", self._port))
        except OSError as exc:
            sock.close()
            raise UnavailableError(f"--web-bind {self.host}:{self._port}: {exc}") from exc
        sock.listen(128)
        self._sock = sock
        self.port = sock.getsockname()[1]
        self._config.load()  # TLS context errors surface here, in the caller's thread
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="catalogd-web", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started and self._thread.is_alive():
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)
        if not self._server.started:
            self.close()
            raise UnavailableError("the web status page did not start in time")
        return self

    def close(self, timeout: float = 5.0) -> None:
        """Stop serving (requests in flight get ``grace_s``) and join. Idempotent."""
        self._server.should_exit = True
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout)
        if self._sock is not None:
            self._sock.close()
            self._sock = None
