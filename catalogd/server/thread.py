"""catalogd's broadcast server: the thread that owns the catalog and its sockets.

One thread (``catalogd-server``) owns the :class:`~catalogd.core.catalog.Catalog`, the
PUB socket (deltas, heartbeats) and the ROUTER socket (hello, snapshots,
catch-ups, load requests, subscriber reports). Other threads never touch them:
they hand work in with :meth:`CatalogServer.submit`, which queues a function,
rings a doorbell (a pipe the poller watches) and returns a Future that resolves
once the function's delta is *published*. So a version returned to an admin is
always one every subscriber can already receive.

Snapshots are sent in chunks of ``snapshot_chunk`` entries, one chunk per loop
turn, interleaved with publishing, and flow-controlled by ROUTER_MANDATORY: a
full pipe leaves the chunk for the next turn instead of dropping it. A
terminator carries ``(service_id, version, count, chunks)`` so a subscriber
detects a truncated snapshot. Malformed requests are counted and answered with
an ERROR status when they can be; nothing a peer sends stops the loop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import zmq

import idl
from catalogd.core.catalog import Catalog, DeltaUnavailableError
from subscriber.protocol import codec, wire
from subscriber.protocol.delta import Delta
from subscriber.protocol.errors import CatalogError, ProtocolError, UnavailableError
from subscriber.protocol.keys import GLOBAL, database_of

log = logging.getLogger(__name__)
svc = idl.catalog_service

DEFAULT_PORT = 26500


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Where and how the server listens.

    ``bind`` is the one address clients are given (ROUTER). ``pub_bind`` defaults
    to the same host on the next port; ``"tcp://HOST:*"`` picks a free port.
    ``advertise_host`` is the host put into the PUB endpoint clients are told
    (default: the host they connected to).
    """

    bind: str = f"tcp://127.0.0.1:{DEFAULT_PORT}"
    pub_bind: str | None = None
    advertise_host: str | None = None
    heartbeat_interval_s: float = 1.0
    snapshot_chunk: int = 2000
    max_catch_up_entries: int = 200_000
    max_tombstones: int = 100_000
    start_version: int = 0
    pub_hwm: int = 100_000
    max_request_bytes: int = 1 << 20


@dataclass
class ServerStats:
    """Counters, updated only by the server thread; read them from anywhere."""

    published_messages: int = 0
    published_bytes: int = 0
    heartbeats: int = 0
    snapshots: int = 0
    catch_ups: int = 0
    catch_ups_refused: int = 0
    garbage: int = 0
    load_requests: int = 0
    subscribers: dict[str, tuple[int, float]] = field(default_factory=dict)
    """client id -> (applied version, wall time of its last report)."""


def _next_port_endpoint(bind: str) -> str:
    head, _, port = bind.rpartition(":")
    if not port.isdigit():
        return f"{head}:*"
    return f"{head}:{int(port) + 1}"


class CatalogServer:
    """Owns the catalog and publishes it. See the module docstring.

    Args:
        config: addresses and limits.
        context: the ZeroMQ context (default: the process-wide instance).
        service_id: fixed id for tests; default a new random one per process start.
        on_load_request: called on the server thread with ``(db, table)`` when a
            subscriber asks for a priority load; must not block.
        clock: wall clock in seconds (heartbeat timestamps and subscriber ages).
    """

    def __init__(
        self,
        config: ServerConfig = ServerConfig(),
        *,
        context: zmq.Context | None = None,
        service_id: str | None = None,
        on_load_request: Callable[[str, str], None] | None = None,
        reserve: Callable[[int], object] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.service_id = service_id or uuid.uuid4().hex
        self.stats = ServerStats()
        self.endpoint = ""
        self.pub_endpoint = ""
        self._context = context or zmq.Context.instance()
        self._catalog = Catalog(version=config.start_version, max_tombstones=config.max_tombstones)
        self._on_load_request = on_load_request
        self._reserve = reserve
        self._clock = clock
        self._work: queue.SimpleQueue[tuple[Callable[[Catalog], Any], Future[Any]]] = (
            queue.SimpleQueue()
        )
        self._bell_r, self._bell_w = os.pipe()
        os.set_blocking(self._bell_w, False)
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="catalogd-server", daemon=True)
        self._jobs: list[_SnapshotJob] = []
        self._heartbeat_interval = config.heartbeat_interval_s
        self._early_heartbeat = False

    # -- lifecycle --------------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> CatalogServer:
        """Bind the sockets (in the server thread) and start serving.

        Raises:
            UnavailableError: an address could not be bound.
        """
        self._reserve_durably(self._catalog.version)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise UnavailableError("catalogd server thread did not start in time")
        if self._startup_error is not None:
            raise UnavailableError(f"cannot bind {self.config.bind}: {self._startup_error}") from (
                self._startup_error
            )
        return self

    def close(self, timeout: float = 5.0) -> None:
        """Publish a final heartbeat, close the sockets and join the thread. Idempotent."""
        if not self._stop.is_set():
            self._stop.set()
            self._ring()
        if self._thread.is_alive():
            self._thread.join(timeout)
        for fd in (self._bell_r, self._bell_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._bell_r = self._bell_w = -1

    def __enter__(self) -> CatalogServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- work from other threads ----------------------------------------------------------

    def submit(self, fn: Callable[[Catalog], Any]) -> Future[Any]:
        """Run ``fn(catalog)`` on the server thread.

        When ``fn`` returns a :class:`Delta`, it is published before the Future
        resolves (to that delta). ``fn`` must be quick and must not block: do
        the slow work (HMS calls, encoding) before submitting.

        Before :meth:`start`, ``fn`` runs at once in the calling thread (no
        server thread owns the catalog yet, and nobody can subscribe): that is
        how the initial catalog is in place before the first snapshot, so a
        restarted catalogd never shows an empty catalog.
        """
        future: Future[Any] = Future()
        if not self._thread.is_alive() and not self._ready.is_set():
            try:
                future.set_result(fn(self._catalog))
            except BaseException as exc:  # noqa: BLE001 - handed to the submitter
                future.set_exception(exc)
            return future
        if self._stop.is_set():
            future.set_exception(UnavailableError("catalogd server is closed"))
            return future
        self._work.put((fn, future))
        self._ring()
        return future

    @property
    def started(self) -> bool:
        return self._ready.is_set()

    def preload(self, changes: Any) -> Delta:
        """Commit ``changes`` before :meth:`start` (see :meth:`submit`)."""
        return self.commit(changes).result()

    def set_heartbeat_interval(self, seconds: float) -> None:
        """Change the heartbeat interval while running (a live config reload)."""
        if seconds <= 0:
            raise ValueError("the heartbeat interval must be positive")
        self._heartbeat_interval = seconds
        self._ring()

    def commit(self, changes: Any) -> Future[Delta]:
        """Commit ``changes`` (key -> payload or None) and publish the delta."""
        return self.submit(lambda catalog: catalog.commit(changes))

    def _ring(self) -> None:
        # A full pipe means a wake-up is already pending; a closed one, that we stop.
        with contextlib.suppress(OSError):
            os.write(self._bell_w, b"\0")

    # -- the server thread ------------------------------------------------------------------

    def _run(self) -> None:
        try:
            router, pub = self._bind()
        except zmq.ZMQError as exc:
            self._startup_error = exc
            self._ready.set()
            return
        self._ready.set()
        poller = zmq.Poller()
        poller.register(router, zmq.POLLIN)
        poller.register(self._bell_r, zmq.POLLIN)
        next_beat = last_beat = 0.0
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                wait = 0 if self._jobs else max(0.0, next_beat - now)
                if self._early_heartbeat:
                    wait = min(wait, 0.05)
                for sock, _ in poller.poll(int(wait * 1000)):
                    if sock == self._bell_r:
                        os.read(self._bell_r, 4096)
                        self._drain_work(pub)
                    else:
                        self._serve(router, limit=64)
                self._advance_jobs(router)
                if self._early_heartbeat and time.monotonic() >= last_beat + 0.05:
                    next_beat = 0.0
                if time.monotonic() >= next_beat:
                    self._heartbeat(pub)
                    self._early_heartbeat = False
                    last_beat = time.monotonic()
                    next_beat = last_beat + self._heartbeat_interval
            self._drain_work(pub)
            self._heartbeat(pub)  # the final word: subscribers see our last version
        finally:
            router.close(linger=0)
            pub.close(linger=500)
            while not self._work.empty():
                _, future = self._work.get_nowait()
                future.set_exception(UnavailableError("catalogd server closed"))

    def _bind(self) -> tuple[zmq.Socket, zmq.Socket]:
        router = self._context.socket(zmq.ROUTER)
        pub = self._context.socket(zmq.PUB)
        try:
            router.setsockopt(zmq.ROUTER_MANDATORY, 1)
            router.setsockopt(zmq.MAXMSGSIZE, self.config.max_request_bytes)
            router.setsockopt(zmq.LINGER, 0)
            pub.setsockopt(zmq.SNDHWM, self.config.pub_hwm)
            router.bind(self.config.bind)
            self.endpoint = router.getsockopt(zmq.LAST_ENDPOINT).decode()
            pub.bind(self.config.pub_bind or _next_port_endpoint(self.endpoint))
            self.pub_endpoint = pub.getsockopt(zmq.LAST_ENDPOINT).decode()
        except zmq.ZMQError:
            router.close(linger=0)
            pub.close(linger=0)
            raise
        return router, pub

    def _drain_work(self, pub: zmq.Socket) -> None:
        while True:
            try:
                fn, future = self._work.get_nowait()
            except queue.Empty:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(self._catalog)
                if isinstance(result, Delta) and not result.empty:
                    self._reserve_durably(result.to_version)
                    self._publish(pub, result)
            except BaseException as exc:  # noqa: BLE001 - handed to the submitter
                future.set_exception(exc)
            else:
                future.set_result(result)

    def _reserve_durably(self, version: int) -> None:
        """Persist the high-water mark before ``version`` is published (never skipped:
        publication waits, and heartbeats with it, until the state store answers)."""
        if self._reserve is None:
            return
        delay = 0.1
        while True:
            try:
                self._reserve(version)
                return
            except CatalogError as exc:
                log.error(
                    "cannot persist version high-water mark %d, holding publication: %s",
                    version,
                    exc,
                )
                if self._stop.wait(delay):
                    raise UnavailableError("stopped while the state store was unreachable") from exc
                delay = min(delay * 2, 5.0)

    def _publish(self, pub: zmq.Socket, delta: Delta) -> None:
        for topic, body in wire.delta_messages(self.service_id, delta):
            pub.send_multipart([topic, body], copy=False)
            self.stats.published_messages += 1
            self.stats.published_bytes += len(topic) + len(body)

    def _heartbeat(self, pub: zmq.Socket) -> None:
        topic, body = wire.heartbeat_message(
            self.service_id,
            self._catalog.version,
            self._heartbeat_interval,
            int(self._clock() * 1000),
        )
        pub.send_multipart([topic, body])
        self.stats.heartbeats += 1

    # -- requests -----------------------------------------------------------------------

    def _serve(self, router: zmq.Socket, limit: int) -> None:
        for _ in range(limit):
            try:
                frames = router.recv_multipart(zmq.NOBLOCK, copy=True)
            except zmq.Again:
                return
            if len(frames) != 2:
                self.stats.garbage += 1  # DEALER requests are [identity, body]
                continue
            identity, body = frames
            try:
                request = codec.unpack(svc.TRequest, body)
                response = self._answer(identity, request)
            except ProtocolError as exc:
                self.stats.garbage += 1
                response = _status(svc.TStatusCode.ERROR, f"malformed request: {exc}")
            if response is not None:
                self._send(router, identity, response)

    def _answer(self, identity: bytes, request: Any) -> Any:
        rid = request.request_id
        if request.hello is not None:
            # A joining subscriber waits for its first SUB message; a prompt
            # heartbeat saves it up to one heartbeat interval.
            self._early_heartbeat = True
            return svc.TResponse(request_id=rid, status=_OK(), welcome=self._welcome())
        if request.snapshot is not None:
            frames = self._snapshot_frames(rid, request.snapshot.databases)
            self._jobs.append(_SnapshotJob(identity, rid, frames))
            self.stats.snapshots += 1
            return None
        if request.catch_up is not None:
            return self._catch_up(rid, request.catch_up)
        if request.load_table is not None:
            self.stats.load_requests += 1
            if self._on_load_request is not None:
                self._on_load_request(request.load_table.db_name, request.load_table.tbl_name)
            return svc.TResponse(request_id=rid, status=_OK())
        if request.report is not None:
            report = request.report
            if report.applied_version < 0:  # goodbye: a subscriber closed cleanly
                self.stats.subscribers.pop(report.client_id, None)
            elif report.service_id == self.service_id:  # not from before a restart
                self.stats.subscribers[report.client_id] = (
                    report.applied_version,
                    self._clock(),
                )
            return None  # reports are one-way
        raise ProtocolError("request carries no known command")

    def _welcome(self) -> Any:
        return svc.TWelcome(
            service_id=self.service_id,
            pub_endpoint=self._advertised_pub(),
            version=self._catalog.version,
            heartbeat_interval_ms=int(self._heartbeat_interval * 1000),
            oldest_catch_up_version=self._catalog.floor,
            protocol_version=svc.PROTOCOL_VERSION,
        )

    def _advertised_pub(self) -> str:
        if self.config.advertise_host is None:
            return self.pub_endpoint
        port = self.pub_endpoint.rpartition(":")[2]
        return f"tcp://{self.config.advertise_host}:{port}"

    def _catch_up(self, rid: int | None, req: Any) -> Any:
        wanted = None if req.databases is None else set(req.databases) | {GLOBAL}
        try:
            delta = self._catalog.delta_since(req.from_version).filtered(wanted)
        except DeltaUnavailableError as exc:
            self.stats.catch_ups_refused += 1
            return _status(svc.TStatusCode.NOTFOUND, str(exc), rid)
        if len(delta.entries) > self.config.max_catch_up_entries:
            self.stats.catch_ups_refused += 1
            return _status(svc.TStatusCode.NOTFOUND, "catch-up too large: take a snapshot", rid)
        self.stats.catch_ups += 1
        return svc.TResponse(
            request_id=rid, status=_OK(), delta=wire.delta_to_thrift(self.service_id, delta)
        )

    def _snapshot_frames(self, rid: int | None, databases: list[str] | None) -> Iterator[bytes]:
        """Encode a snapshot lazily, chunk by chunk; the entries are captured now."""
        version = self._catalog.version
        wanted = None if databases is None else set(databases) | {GLOBAL}
        entries = [
            e
            for e in self._catalog.live_entries()
            if wanted is None or database_of(e.key) in wanted
        ]
        size = self.config.snapshot_chunk

        def frames() -> Iterator[bytes]:
            chunks = 0
            for start in range(0, len(entries), size):
                chunk = svc.TSnapshotChunk(
                    service_id=self.service_id,
                    seq=chunks,
                    entries=[wire.entry_to_thrift(e) for e in entries[start : start + size]],
                )
                chunks += 1
                # Entries were validated when they entered the catalog: skip the re-check.
                response = svc.TResponse(request_id=rid, status=_OK(), chunk=chunk)
                yield codec.pack(response, check=False)
            end = svc.TSnapshotEnd(
                service_id=self.service_id, version=version, count=len(entries), chunks=chunks
            )
            yield codec.pack(svc.TResponse(request_id=rid, status=_OK(), snapshot_end=end))

        return frames()

    def _advance_jobs(self, router: zmq.Socket) -> None:
        for job in list(self._jobs):
            try:
                if job.frame is None:
                    job.frame = next(job.frames)
                router.send_multipart([job.identity, job.frame], zmq.NOBLOCK, copy=False)
                job.frame = None
            except StopIteration:
                self._jobs.remove(job)
            except zmq.Again:
                continue  # the peer's pipe is full: try again next turn
            except zmq.ZMQError as exc:
                if exc.errno != zmq.EHOSTUNREACH:
                    log.warning("snapshot send failed: %s", exc)
                self._jobs.remove(job)  # the subscriber went away

    def _send(self, router: zmq.Socket, identity: bytes, response: Any) -> None:
        # Peer gone or its pipe full: it times out and asks again.
        with contextlib.suppress(zmq.ZMQError):
            router.send_multipart([identity, codec.pack(response)], zmq.NOBLOCK)


@dataclass
class _SnapshotJob:
    identity: bytes
    request_id: int | None
    frames: Iterator[bytes]
    frame: bytes | None = None


def _OK() -> Any:  # noqa: N802 - reads like the constant it stands for
    return svc.TStatus(code=svc.TStatusCode.OK)


def _status(code: int, message: str, request_id: int | None = None) -> Any:
    return svc.TResponse(request_id=request_id, status=svc.TStatus(code=code, message=message))
