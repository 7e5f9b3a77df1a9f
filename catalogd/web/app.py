"""The web status page's ASGI application (Starlette routes, Jinja2 templates).

Routes are sync functions: Starlette runs them on its worker threads (anyio's pool,
40 at most), never on the event loop; at most ``max_renders`` build a page at once
(the rest wait blocked, so they do not take the GIL from the server thread), and
each reads the catalog only through ``sources.read`` (bounded by
:class:`catalogd.web.sources.DaemonSources`). Every page
is rendered by Jinja2 with autoescape on, and sent with a Content-Security-Policy
that allows no script at all: escaping is the defence, the policy a second one.

Access (:mod:`catalogd.web.access`) is checked by :class:`AuthMiddleware` before any
route runs; ``POST /log_level`` also needs the admin role and a same-origin request
(a form posted from another site is refused).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections import OrderedDict
from typing import Any, Protocol
from urllib.parse import parse_qs, quote, urlsplit

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from catalogd.config import LEVELS
from catalogd.web import pages, reads, views
from catalogd.web.access import ADMIN, OPEN_PATHS, Access
from catalogd.web.census import Counted

__all__ = ["Busy", "Sources", "make_app"]

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
MAX_FORM_BYTES = 4096
LOGGERS = ("catalogd", "subscriber", "uvicorn", "sqlalchemy.engine")


class Busy(Exception):
    """The catalog could not be read in time (the server thread is busy): 503."""


class Sources(Protocol):
    """What the pages read from the daemon; every method is quick and thread-safe."""

    def read(self, fn: Any) -> Any: ...
    def status(self) -> dict[str, Any]: ...
    def ha(self) -> dict[str, Any] | None: ...
    def census(self) -> Counted: ...
    def audit(self, limit: int) -> list[Any]: ...
    def metrics_text(self) -> bytes: ...
    def memory(self) -> dict[str, int | None]: ...
    def started(self) -> bool: ...


def _templates() -> Environment:
    env = Environment(
        loader=PackageLoader("catalogd.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        auto_reload=False,
    )
    return env


def _int(request: Request, name: str, default: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) > high:
        raise ValueError(f"{name} must be an integer from 0 to {high}")
    return int(raw)


def make_app(
    sources: Sources,
    access: Access,
    *,
    max_renders: int = 2,
    render_wait_s: float = 10.0,
    max_pages_per_s: float = 100.0,
) -> ASGIApp:
    """The application: every route of the status page over ``sources``.

    At most ``max_renders`` pages are built at once (decoding and rendering are Python
    work that holds the GIL, which the server thread needs too): the others wait,
    blocked and so not competing for the GIL, up to ``render_wait_s`` (then 503); at
    most ``max_pages_per_s`` requests are served a second (:class:`Pace`; the probes
    are never paced).
    """
    env = _templates()
    renders = threading.BoundedSemaphore(max_renders)
    built = Built(256)  # a table page's HTML by its arguments, with what it was built from

    def html(name: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
        body = env.get_template(name).render(**context)
        return HTMLResponse(body, status, headers={"Content-Security-Policy": CSP})

    def error(status: int, message: str) -> HTMLResponse:
        return html("error.html", {"status": status, "message": message}, status)

    def paged(request: Request, default: int) -> tuple[int, int, str]:
        offset = _int(request, "offset", 0, 10**9)
        limit = max(1, _int(request, "limit", default, reads.MAX_PAGE))
        return offset, limit, request.query_params.get("q", "")[:200]

    def guarded(route: Any) -> Any:
        def run(request: Request) -> Response:
            if not renders.acquire(timeout=render_wait_s):
                return error(503, "too many pages being built at once; try again")
            try:
                return route(request)  # type: ignore[no-any-return]
            except ValueError as exc:
                return error(400, str(exc))
            except Busy as exc:
                return error(503, str(exc))
            finally:
                renders.release()

        return run

    @guarded
    def overview(request: Request) -> Response:
        status = sources.status()
        context = pages.overview_view(status, sources.ha(), sources.census(), sources.memory())
        loading = context["progress"] is not None and not context["progress"]["done"]
        return html("overview.html", {**context, "refresh": 2 if loading else None})

    @guarded
    def catalog(request: Request) -> Response:
        offset, limit, q = paged(request, 200)
        context = views.catalog_view(sources.read, offset, limit)
        found = None
        if q:
            found = sources.read(lambda c: reads.find_tables(c, q))
            if len(found) == 1:
                db, table = found[0]
                return RedirectResponse(f"/catalog/{quote(db)}/{quote(table)}", 303)
        return html("catalog.html", {**context, "q": q, "found": found})

    @guarded
    def database(request: Request) -> Response:
        offset, limit, q = paged(request, 100)
        context = views.database_view(sources.read, request.path_params["db"], offset, limit, q)
        if context is None:
            return error(404, f"no database {request.path_params['db']!r}")
        return html("database.html", context)

    @guarded
    def table(request: Request) -> Response:
        offset, limit, q = paged(request, 100)
        db, name = request.path_params["db"], request.path_params["table"]
        listing = sources.read(
            functools.partial(reads.table, db=db, name=name, offset=offset, limit=limit, search=q)
        )
        key, seen = (db, name, offset, limit, q), views.fingerprint(listing)
        cached = built.get(key)
        if cached is not None and cached[0] == seen:
            return HTMLResponse(cached[1], headers={"Content-Security-Policy": CSP})
        context = views.table_context(listing, db, offset, limit, q)
        if context is None:
            return error(404, f"no table {db}.{name!r}")
        response = html("table.html", context)
        built.put(key, (seen, bytes(response.body)))
        return response

    @guarded
    def subscribers(request: Request) -> Response:
        return html("subscribers.html", pages.subscribers_view(sources.status()))

    @guarded
    def operations(request: Request) -> Response:
        context = pages.operations_view(sources.audit(100), sources.status())
        return html("operations.html", context)

    def healthz(request: Request) -> Response:
        hms = sources.status().get("hms", {}) if sources.started() else {}
        return JSONResponse(pages.health(sources.ha(), bool(hms.get("healthy", True))))

    def readyz(request: Request) -> Response:
        started = sources.started()
        version = sources.status()["version"] if started else 0
        ready, body = pages.readiness(started, sources.ha(), version)
        return JSONResponse(body, 200 if ready else 503)

    def metrics(request: Request) -> Response:
        return Response(sources.metrics_text(), media_type="text/plain; version=0.0.4")

    async def log_level(request: Request) -> Response:
        principal = request.scope["principal"]
        may_change = principal.role == ADMIN
        message = ""
        if request.method == "POST":
            if not may_change:
                return error(403, "changing a log level needs admin rights")
            if not _same_origin(request):
                return error(403, "cross-site request refused")
            body = await request.body()
            if len(body) > MAX_FORM_BYTES:
                return error(413, "form too large")
            form = {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}
            name, level = form.get("logger", "").strip(), form.get("level", "").upper()
            if level not in LEVELS or not name or len(name) > 200:
                return error(400, f"expected a logger name and one of {', '.join(LEVELS)}")
            logging.getLogger(name).setLevel(level)
            logging.getLogger("catalogd").warning(
                "log level of %r set to %s by %s (web)", name, level, principal.name
            )
            message = f"{name}: {level}"
        loggers = [
            (name, logging.getLevelName(logging.getLogger(name).getEffectiveLevel()))
            for name in LOGGERS
        ]
        context = {"loggers": loggers, "levels": LEVELS, "may_change": may_change}
        return html("log_level.html", {**context, "message": message})

    routes = [
        Route("/", overview),
        Route("/catalog", catalog),
        Route("/catalog/{db}", database),
        Route("/catalog/{db}/{table}", table),
        Route("/subscribers", subscribers),
        Route("/operations", operations),
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/metrics", metrics),
        Route("/log_level", log_level, methods=["GET", "POST"]),
    ]
    return AuthMiddleware(Starlette(routes=routes), access, Pace(max_pages_per_s, 20))


class Built:
    """A bounded map (least recently stored goes first) of pages built. Thread-safe."""

    def __init__(self, size: int) -> None:
        self._size, self._items = size, OrderedDict[Any, Any]()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            return self._items.get(key)

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin:
        return request.headers.get("sec-fetch-site", "same-origin") == "same-origin"
    return urlsplit(origin).netloc == request.headers.get("host")


class Pace:
    """A token bucket: at most ``rate`` requests a second (bursts of ``burst``) from all
    clients together; a request beyond it waits on the event loop (a sleep, not a
    thread), so however many clients loop, the web's share of the CPU, and of the GIL
    the server thread needs, stays bounded. Used by the event loop's thread only."""

    def __init__(self, rate: float, burst: float, clock: Any = time.monotonic) -> None:
        self.rate, self.burst, self._clock = rate, burst, clock
        self._tokens, self._at = burst, clock()

    def delay(self) -> float:
        """Take a token; returns how long to wait before serving (0: at once)."""
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate


class AuthMiddleware:
    """Refuses (401) an HTTP request without an accepted token, except the probes';
    puts the :class:`~catalogd.web.access.Principal` in ``scope["principal"]``; paces
    requests (:class:`Pace`)."""

    def __init__(self, app: ASGIApp, access: Access, pace: Pace | None = None) -> None:
        self.app, self.access, self.pace = app, access, pace

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.pace is not None and scope["path"] not in OPEN_PATHS:
            wait = self.pace.delay()
            if wait > 0:
                await asyncio.sleep(wait)
        header = None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                header = value.decode("latin-1")
        principal = self.access.identify(header)
        if principal is None and scope["path"] not in OPEN_PATHS:
            response = Response(
                "authentication required\n",
                401,
                headers={"WWW-Authenticate": 'Basic realm="catalogd", charset="UTF-8"'},
                media_type="text/plain",
            )
            await response(scope, receive, send)
            return
        scope["principal"] = principal
        await self.app(scope, receive, send)
