"""The admin endpoint: ``invalidate``, ``refresh``, ``status`` (and later cache pools).

One thread (``catalogd-admin``) owns a ROUTER socket at ``--admin-bind``.
Commands run on a small worker pool, because they call HMS and may wait for
subscribers; each answer goes back through a queue and a doorbell to the
admin thread, which alone sends on the socket.

Every mutating command answers with the catalog version at which its effect
is published. With ``sync`` the answer waits until every *live* subscriber has
reported applying that version (:class:`~catalogd.admin.barrier.SubscriberBarrier`);
the answer names every subscriber that did not confirm.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import zmq

import idl
from catalogd.admin.barrier import SubscriberBarrier
from catalogd.server.doorbell import Doorbell
from subscriber.protocol import codec
from subscriber.protocol.errors import (
    BusyError,
    CatalogError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    ProtocolError,
    UnavailableError,
)
from subscriber.protocol.keys import TableName

log = logging.getLogger(__name__)
svc = idl.catalog_service
Code = svc.TStatusCode

DEFAULT_ADMIN_PORT = 26502


@dataclass(frozen=True)
class AdminResult:
    """What a command handler returns: the published version and a JSON-able detail."""

    version: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)


Handler = Callable[[Any], AdminResult]


def error_code(exc: BaseException) -> int:
    """The status code for one of our exceptions."""
    if isinstance(exc, NotFoundError):
        return Code.NOTFOUND
    if isinstance(exc, ConflictError):
        return Code.CONFLICT
    if isinstance(exc, BusyError):
        return Code.BUSY
    if isinstance(exc, UnavailableError):
        return Code.UNAVAILABLE
    if isinstance(exc, InvalidRequestError | ProtocolError):
        return Code.ERROR
    return Code.INTERNAL_ERR


class AdminServer:
    """Owns the admin ROUTER socket; dispatches commands to ``handlers``.

    Args:
        bind: the admin address.
        handlers: TAdminCommand value -> handler(TAdminRequest) -> AdminResult.
        barrier: used for ``sync`` requests.
        on_done: called with (request, response, seconds) after each command
            (audit log, metrics); must not raise.
    """

    def __init__(
        self,
        bind: str,
        handlers: dict[int, Handler],
        barrier: SubscriberBarrier,
        *,
        workers: int = 4,
        default_sync_timeout_s: float = 30.0,
        on_done: Callable[[Any, Any, float], None] | None = None,
        context: zmq.Context | None = None,
    ) -> None:
        self.bind = bind
        self.endpoint = ""
        self.handlers = handlers
        self.barrier = barrier
        self.garbage = 0
        self.commands = 0
        self._default_sync_timeout = default_sync_timeout_s
        self._on_done = on_done
        self._context = context or zmq.Context.instance()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="catalogd-admin-worker")
        self._replies: queue.SimpleQueue[tuple[bytes, bytes]] = queue.SimpleQueue()
        self._bell = Doorbell()
        self._stop = threading.Event()
        self._accepting = True
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="catalogd-admin", daemon=True)

    def start(self, timeout: float = 10.0) -> AdminServer:
        self._thread.start()
        self._ready.wait(timeout)
        if self._error is not None:
            raise UnavailableError(
                f"cannot bind admin address {self.bind}: {self._error}"
            ) from self._error
        return self

    def stop_accepting(self) -> None:
        """Refuse new commands (BUSY) from now on; for a graceful stop."""
        self._accepting = False

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._bell.ring()
        self._thread.join(timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._bell.close()

    # -- admin thread ---------------------------------------------------------------------

    def _run(self) -> None:
        router = self._context.socket(zmq.ROUTER)
        try:
            router.setsockopt(zmq.LINGER, 0)
            router.setsockopt(zmq.MAXMSGSIZE, 1 << 20)
            router.bind(self.bind)
            self.endpoint = router.getsockopt(zmq.LAST_ENDPOINT).decode()
        except zmq.ZMQError as exc:
            self._error = exc
            router.close(linger=0)
            self._ready.set()
            return
        self._ready.set()
        poller = zmq.Poller()
        poller.register(router, zmq.POLLIN)
        poller.register(self._bell.fileno(), zmq.POLLIN)
        try:
            while not self._stop.is_set():
                for sock, _ in poller.poll(500):
                    if sock == self._bell.fileno():
                        self._bell.drain()
                    else:
                        self._receive(router)
                while not self._replies.empty():
                    identity, body = self._replies.get_nowait()
                    with contextlib.suppress(zmq.ZMQError):
                        router.send_multipart([identity, b"", body], zmq.NOBLOCK)
        finally:
            router.close(linger=0)

    def _receive(self, router: zmq.Socket) -> None:
        for _ in range(64):
            try:
                frames = router.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            # REQ sends [identity, "", body]; DEALER sends [identity, body].
            if len(frames) == 3 and frames[1] == b"":
                identity, body = frames[0], frames[2]
            elif len(frames) == 2:
                identity, body = frames
            else:
                self.garbage += 1
                continue
            try:
                request = codec.unpack(svc.TAdminRequest, body)
            except ProtocolError as exc:
                self.garbage += 1
                self._reply(identity, _response(Code.ERROR, f"malformed admin request: {exc}"))
                continue
            if not self._accepting:
                self._reply(identity, _response(Code.BUSY, "catalogd is shutting down"))
                continue
            self.commands += 1
            self._pool.submit(self._execute, identity, request)

    def _reply(self, identity: bytes, response: Any) -> None:
        self._replies.put((identity, codec.pack(response)))
        self._bell.ring()

    # -- workers -----------------------------------------------------------------------------

    def _execute(self, identity: bytes, request: Any) -> None:
        started = time.monotonic()
        handler = self.handlers.get(request.command)
        try:
            if handler is None:
                raise InvalidRequestError(f"unknown admin command {request.command}")
            result = handler(request)
            response = svc.TAdminResponse(
                status=svc.TStatus(code=Code.OK),
                version=result.version,
                detail_json=json.dumps(result.detail, sort_keys=True),
            )
            if request.sync and result.version is not None:
                timeout = (request.sync_timeout_ms or self._default_sync_timeout * 1000) / 1000
                confirmed, unconfirmed = self.barrier.wait(result.version, timeout)
                response.unconfirmed_subscribers = unconfirmed
                detail = dict(result.detail, confirmed_subscribers=confirmed)
                response.detail_json = json.dumps(detail, sort_keys=True)
        except CatalogError as exc:
            response = _response(error_code(exc), str(exc))
        except Exception as exc:  # noqa: BLE001 - the endpoint must answer and survive
            log.exception("admin command %s failed", request.command)
            response = _response(Code.INTERNAL_ERR, f"internal error: {exc!r}")
        self._reply(identity, response)
        if self._on_done is not None:
            try:
                self._on_done(request, response, time.monotonic() - started)
            except Exception:  # noqa: BLE001
                log.exception("admin on_done hook failed")


def _response(code: int, message: str) -> Any:
    return svc.TAdminResponse(status=svc.TStatus(code=code, message=message))


def table_name(request: Any) -> TableName:
    """The DB.TABLE a request names, or a clear error."""
    if not request.db_name or not request.tbl_name:
        raise InvalidRequestError("this command needs a table: DB.TABLE")
    return TableName.parse(f"{request.db_name}.{request.tbl_name}")
