"""The admin endpoint: ``invalidate``, ``refresh``, ``status`` (and later cache pools).

One thread (``catalogd-admin``) owns a ROUTER socket at ``--admin-bind``.
Commands run on a small worker pool, because they call HMS and may wait for
subscribers; each answer goes back through a queue and a doorbell to the
admin thread, which alone sends on the socket.

Every mutating command answers with the catalog version at which its effect
is published. With ``sync`` the answer waits until every *live* subscriber has
reported applying that version (:class:`~catalogd.admin.barrier.SubscriberBarrier`);
the answer names every subscriber that did not confirm.

No command can starve another: read-only commands (``status``, ``audit``,
``cache-pool list``) run on a reserved worker of their own; a ``sync`` wait
runs on a waiter thread (at most ``sync_waiters``, more queue), not on a
worker, and lasts at most ``max_sync_timeout_s``; at most ``max_queued``
mutating commands wait for a worker, beyond that the answer is BUSY.
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
from catalogd.security.curve import CurveServer, user_id
from catalogd.security.curve import apply as apply_curve
from subscriber.doorbell import Doorbell
from subscriber.protocol import codec
from subscriber.protocol.errors import (
    BusyError,
    CatalogError,
    ConflictError,
    InvalidRequestError,
    NotActiveError,
    NotFoundError,
    ProtocolError,
    UnavailableError,
)
from subscriber.protocol.keys import TableName

log = logging.getLogger(__name__)
svc = idl.catalog_service
Code = svc.TStatusCode
Cmd = svc.TAdminCommand

MAX_REQUEST_INFLATED = 4 << 20
"""An admin request (a refresh of many partitions) may expand to this many bytes."""


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
        curve: CURVE keys (ZAP domain ``admin``: admin keys only); the requester
            recorded is then the key's name. None: plain TCP, requester as claimed.
    """

    def __init__(
        self,
        bind: str,
        handlers: dict[int, Handler],
        barrier: SubscriberBarrier,
        *,
        workers: int = 4,
        default_sync_timeout_s: float = 30.0,
        max_sync_timeout_s: float = 120.0,
        sync_waiters: int = 16,
        max_queued: int = 64,
        on_done: Callable[[Any, Any, float], None] | None = None,
        context: zmq.Context | None = None,
        curve: CurveServer | None = None,
    ) -> None:
        self.bind = bind
        self.endpoint = ""
        self.handlers = handlers
        self.barrier = barrier
        self.garbage = 0
        self.commands = 0
        self._default_sync_timeout = default_sync_timeout_s
        self._max_sync_timeout = max_sync_timeout_s
        self._max_queued = max_queued
        self._in_flight = 0  # mutating commands queued or running; admin thread + workers
        self._in_flight_lock = threading.Lock()
        self._reads = ThreadPoolExecutor(1, thread_name_prefix="catalogd-admin-reads")
        self._waiters = ThreadPoolExecutor(sync_waiters, thread_name_prefix="catalogd-admin-sync")
        self._on_done = on_done
        self._curve = curve
        self._rebind = threading.Event()
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
        for pool in (self._pool, self._reads, self._waiters):
            pool.shutdown(wait=False, cancel_futures=True)
        self._bell.close()

    # -- admin thread ---------------------------------------------------------------------

    def drop_connections(self) -> None:
        """Close and rebind the admin socket (soon, on the admin thread): every
        connection must pass authentication again, so a revoked admin key is cut off."""
        self._rebind.set()
        self._bell.ring()

    def _open(self, endpoint: str) -> zmq.Socket:
        router = self._context.socket(zmq.ROUTER)
        try:
            router.setsockopt(zmq.LINGER, 0)
            router.setsockopt(zmq.MAXMSGSIZE, 1 << 20)
            apply_curve(router, self._curve)
            router.bind(endpoint)
        except zmq.ZMQError:
            router.close(linger=0)
            raise
        return router

    def _reopen(self, router: zmq.Socket) -> zmq.Socket:
        router.close(linger=0)
        deadline = time.monotonic() + 5.0
        while True:
            try:
                return self._open(self.endpoint)
            except zmq.ZMQError as exc:
                if exc.errno != zmq.EADDRINUSE or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)  # libzmq's I/O thread has not released the port yet

    def _run(self) -> None:
        try:
            router = self._open(self.bind)
            self.endpoint = router.get_string(zmq.LAST_ENDPOINT)
        except zmq.ZMQError as exc:
            self._error = exc
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
                if self._rebind.is_set():
                    self._rebind.clear()
                    poller.unregister(router)
                    router = self._reopen(router)
                    poller.register(router, zmq.POLLIN)
                while not self._replies.empty():
                    identity, body = self._replies.get_nowait()
                    with contextlib.suppress(zmq.ZMQError):
                        router.send_multipart([identity, b"", body], zmq.NOBLOCK)
        finally:
            router.close(linger=0)

    def _receive(self, router: zmq.Socket) -> None:
        for _ in range(64):
            try:
                received = router.recv_multipart(zmq.NOBLOCK, copy=self._curve is None)
            except zmq.Again:
                return
            # With CURVE the requester is the admin key's name (its ZAP User-Id),
            # whatever the request claims.
            key = user_id(received[-1]) if self._curve is not None else None
            frames = [f if isinstance(f, bytes) else f.bytes for f in received]
            # REQ sends [identity, "", body]; DEALER sends [identity, body].
            if len(frames) == 3 and frames[1] == b"":
                identity, body = frames[0], frames[2]
            elif len(frames) == 2:
                identity, body = frames
            else:
                self.garbage += 1
                continue
            try:
                # Checked while inflating: a compressed bomb costs at most this much.
                request = codec.unpack(svc.TAdminRequest, body, max_size=MAX_REQUEST_INFLATED)
            except ProtocolError as exc:
                self.garbage += 1
                self._reply(identity, _response(Code.ERROR, f"malformed admin request: {exc}"))
                continue
            if key is not None:
                request.requester = key
            if not self._accepting:
                self._reply(identity, _response(Code.BUSY, "catalogd is shutting down"))
                continue
            self.commands += 1
            if request.command in READ_ONLY:
                self._reads.submit(self._execute, identity, request)
                continue
            with self._in_flight_lock:
                full = self._in_flight >= self._max_queued
                if not full:
                    self._in_flight += 1
            if full:
                busy = f"overloaded: {self._max_queued} admin commands waiting; try again"
                self._reply(identity, _response(Code.BUSY, busy))
                continue
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
                # Wait on a waiter thread: the worker is free for the next command.
                self._waiters.submit(self._sync, identity, request, result, response, started)
                return
        except CatalogError as exc:
            response = _response(error_code(exc), str(exc))
            if isinstance(exc, NotActiveError) and exc.active_admin:  # HA: name the active
                response.detail_json = json.dumps({"active_admin": exc.active_admin})
        except Exception as exc:  # noqa: BLE001 - the endpoint must answer and survive
            log.exception("admin command %s failed", request.command)
            response = _response(Code.INTERNAL_ERR, f"internal error: {exc!r}")
        finally:
            if request.command not in READ_ONLY:
                with self._in_flight_lock:
                    self._in_flight -= 1
        self._finish(identity, request, response, started)

    def sync_timeout(self, request: Any) -> float:
        """The seconds a ``sync`` request waits: its own, else the default, at most the cap."""
        asked = (request.sync_timeout_ms or self._default_sync_timeout * 1000) / 1000
        return max(0.0, min(asked, self._max_sync_timeout))

    def _sync(
        self, identity: bytes, request: Any, result: AdminResult, response: Any, started: float
    ) -> None:
        try:
            timeout = self.sync_timeout(request)
            confirmed, unconfirmed = self.barrier.wait(result.version or 0, timeout)
            response.unconfirmed_subscribers = unconfirmed
            detail = dict(result.detail, confirmed_subscribers=confirmed)
            response.detail_json = json.dumps(detail, sort_keys=True)
        except Exception as exc:  # noqa: BLE001 - the endpoint must answer and survive
            log.exception("waiting for subscribers failed")
            response = _response(Code.INTERNAL_ERR, f"internal error: {exc!r}")
        self._finish(identity, request, response, started)

    def _finish(self, identity: bytes, request: Any, response: Any, started: float) -> None:
        self._reply(identity, response)
        if self._on_done is not None:
            try:
                self._on_done(request, response, time.monotonic() - started)
            except Exception:  # noqa: BLE001
                log.exception("admin on_done hook failed")


READ_ONLY = frozenset({Cmd.STATUS, Cmd.AUDIT, Cmd.CACHE_POOL_LIST})
"""Commands answered on the reserved reads worker."""


def _response(code: int, message: str) -> Any:
    return svc.TAdminResponse(status=svc.TStatus(code=code, message=message))


def table_name(request: Any) -> TableName:
    """The DB.TABLE a request names, or a clear error."""
    if not request.db_name or not request.tbl_name:
        raise InvalidRequestError("this command needs a table: DB.TABLE")
    return TableName.parse(f"{request.db_name}.{request.tbl_name}")
