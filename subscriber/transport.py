"""The subscriber's transport: one background thread, two sockets, one cache.

:class:`SubscriberTransport` owns a DEALER (hello, snapshot, catch-up, reports, fetches)
and a SUB (deltas or invalidations, heartbeats), both created, used and closed in its
thread (``catalogd-subscriber``). It only moves bytes: it decodes what arrives, feeds it
with the clock into the pure :class:`~subscriber.sync.SyncMachine` and carries out the
:class:`~subscriber.sync.Step` each input returns. User threads queue requests (and ring
a doorbell) and read the cache's view (:mod:`subscriber.api`).
Why one module of over 400 lines: the one thread owning the DEALER and SUB (failover,
CURVE monitor); every decision it carries out is made in :mod:`subscriber.sync`.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import zmq
from zmq.utils.monitor import recv_monitor_message

import idl
from subscriber import curve
from subscriber.curve import ClientKeys
from subscriber.doorbell import Doorbell
from subscriber.endpoints import parse_endpoints, pub_endpoint
from subscriber.protocol import codec, packed, wire
from subscriber.protocol.errors import AuthenticationError, ProtocolError
from subscriber.protocol.messages import Commit, DeltaPart, Heartbeat, SnapshotChunk, Welcome
from subscriber.requests import Answered, Asked
from subscriber.sync import ActionKind, Phase, Step, SyncMachine

log = logging.getLogger(__name__)
svc = idl.catalog_service
_EVENTS, _POLLIN = int(zmq.EVENTS), int(zmq.POLLIN)


@dataclass
class TransportStats:
    """Counters kept by the transport thread; read from anywhere."""

    garbage: int = 0
    dropped: int = 0
    snapshots: int = 0
    catch_ups: int = 0
    reconnects: int = 0
    deltas_applied: int = 0
    service_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TransportConfig:
    """Where and how it connects (timing is the SyncMachine's, not configured here)."""

    endpoints: tuple[str, ...]
    """catalogd's address, or every catalogd's of an HA pair: the first session
    connects to the first, and each session that ends moves on to the next."""
    databases: tuple[str, ...] | None = None
    client_id: str = ""
    rcvhwm: int = 100_000
    hello_timeout_s: float = 2.0
    tick_s: float = 0.05
    max_message_bytes: int = 1 << 30
    curve: ClientKeys | None = None
    """CURVE keys for both sockets (see :mod:`subscriber.curve`); None: plain TCP."""
    on_demand: bool = False
    """Follow invalidations, not deltas; empty snapshots (:mod:`subscriber.ondemand`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "endpoints", parse_endpoints(self.endpoints))


class SubscriberTransport:
    """Runs the subscriber protocol in a background thread.

    Args:
        config: where to connect and limits.
        machine: the sync state machine (its cache is what readers read).
        on_step: called on the transport thread after every step that changed
            the cache or its status; must not block.
        context: ZeroMQ context (default: a private one, terminated on close).
    """

    def __init__(
        self,
        config: TransportConfig,
        machine: SyncMachine,
        on_step: Callable[[Step], None],
        *,
        context: zmq.Context | None = None,
    ) -> None:
        self.config = config
        self.machine = machine
        self.stats = TransportStats()
        self._on_step = on_step
        self._own_context = context is None
        self._context = context or zmq.Context()
        self._stop = threading.Event()
        self._requests: queue.SimpleQueue[tuple[Any, Answered | None]] = queue.SimpleQueue()
        self._asked = Asked()
        self._bell = Doorbell()  # rung by send_request: the thread sends at once
        self._thread = threading.Thread(target=self._run, name="catalogd-subscriber", daemon=True)
        self._rid = 0
        self._database_list = None if config.databases is None else list(config.databases)
        self._snapshot_rid: int | None = None
        self._catch_up_rid: int | None = None
        self._dealer: zmq.Socket | None = None
        self.last_error: AuthenticationError | None = None
        """Why the last security handshake failed (None after one succeeds)."""
        self._logged: set[str] = set()  # the few failure texts already logged
        self.endpoint = config.endpoints[0]
        """The address of the current (or next) session."""
        self.welcome: Welcome | None = None
        """The last session's welcome (swapped whole by this thread; None before one)."""

    def start(self) -> None:
        self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._bell.ring()  # the thread may sleep up to a second in its poll
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self._bell.close()
            while not self._requests.empty():  # never sent: nobody will answer
                if (on_answer := self._requests.get_nowait()[1]) is not None:
                    on_answer(None)
            if self._own_context:
                self._context.term()

    def send_request(self, request: Any, on_answer: Answered | None = None) -> None:
        """Queue a TRequest for the transport thread to send at once. ``on_answer``: the
        thread gives it an id and calls it (must not block) with catalogd's TResponse,
        or None when none can come (session ended, closed, too many awaited, pipe full)."""
        self._requests.put((request, on_answer))
        self._bell.ring()  # a fetch or reload must not wait for the next tick

    def _report(self, service_id: str, version: int) -> Any:
        """Which version this subscriber has applied, for catalogd (its --sync barriers)."""
        client = self.config.client_id
        report = svc.TSubscriberReport(client, service_id=service_id, applied_version=version)
        return svc.TRequest(report=report)

    # -- thread -------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._session()
            except Exception:  # noqa: BLE001 - the thread must survive anything
                log.exception("subscriber transport failed; reconnecting")
                self._stop.wait(0.5)
            self._next_endpoint()

    def _next_endpoint(self) -> None:
        """HA: a session ended (no answer, or silence): try the next catalogd. Only the
        active one binds its sockets, so the one that answers is the one to follow."""
        ring = self.config.endpoints
        if len(ring) > 1:
            at = ring.index(self.endpoint) if self.endpoint in ring else -1
            self.endpoint = ring[(at + 1) % len(ring)]

    def _goodbye(self, dealer: zmq.Socket) -> None:
        """Tell catalogd we are gone, so admin barriers stop counting on us."""
        goodbye = self._report(self.machine.cache.view.service_id, -1)
        with contextlib.suppress(zmq.ZMQError):
            dealer.send(codec.pack(goodbye), zmq.NOBLOCK)
            dealer.close(linger=200)  # give the goodbye a moment to leave

    def _session(self) -> None:
        """One connection: handshake, subscribe, serve until reconnect or stop."""
        dealer = self._context.socket(zmq.DEALER)
        sub: zmq.Socket | None = None
        # The monitor is how a refused key shows: libzmq tells the application nothing else.
        self._monitor = dealer.get_monitor_socket(curve.HANDSHAKE_EVENTS)
        try:
            dealer.setsockopt(zmq.LINGER, 0)
            dealer.setsockopt(zmq.MAXMSGSIZE, self.config.max_message_bytes)
            curve.apply(dealer, self.config.curve)
            dealer.connect(self.endpoint)
            welcome = self._handshake(dealer)
            if welcome is None:
                return
            sub = self._context.socket(zmq.SUB)
            sub.setsockopt(zmq.LINGER, 0)
            sub.setsockopt(zmq.RCVHWM, self.config.rcvhwm)
            sub.setsockopt(zmq.MAXMSGSIZE, self.config.max_message_bytes)
            curve.apply(sub, self.config.curve)
            for prefix in wire.subscriptions(
                self.config.databases, on_demand=self.config.on_demand
            ):
                sub.setsockopt(zmq.SUBSCRIBE, prefix)
            sub.connect(pub_endpoint(welcome.pub_endpoint, self.endpoint))
            self._dealer = dealer
            self._handle(self.machine.on_connected(time.monotonic(), welcome))
            if not self.config.on_demand:  # a replica: while catalogd makes its snapshot
                codec.prepare_objects()
            self._serve(dealer, sub)
            if self._stop.is_set():
                self._goodbye(dealer)
        finally:
            self._dealer = self._snapshot_rid = None
            self._asked.forget()  # no answer comes to a new session
            with contextlib.suppress(zmq.ZMQError):
                dealer.disable_monitor()
            self._monitor.close(linger=0)
            dealer.close(linger=0)
            if sub is not None:
                sub.close(linger=0)

    def _hello(self) -> Any:
        return svc.TRequest(
            request_id=self._next_rid(),
            hello=svc.THello(
                client_id=self.config.client_id,
                databases=list(self.config.databases) if self.config.databases else None,
                protocol_version=svc.PROTOCOL_VERSION,
            ),
        )

    def _handshake(self, dealer: zmq.Socket) -> Welcome | None:
        hello, sent = codec.pack(self._hello()), False
        deadline = time.monotonic() + self.config.hello_timeout_s
        while not self._stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.stats.reconnects += 1
                self._handle(self.machine.on_tick(time.monotonic()))
                return None  # nobody answered: a new socket, a new try
            if not sent:  # never blocking: a refused key leaves the DEALER no pipe to queue on
                with contextlib.suppress(zmq.Again):
                    dealer.send(hello, zmq.NOBLOCK)
                    sent = True
            self._check_handshake()
            if dealer.poll(int(min(remaining, 0.2) * 1000)):
                response = self._receive(dealer)
                if response is not None and response.welcome is not None:
                    try:
                        self.welcome = wire.parse_welcome(response.welcome)
                    except ProtocolError:
                        self.stats.garbage += 1
                        continue
                    return self.welcome
        return None

    def _check_handshake(self) -> None:
        """Read the DEALER's monitor: remember a failed handshake, forget it on success."""
        while cast(int, self._monitor.getsockopt(_EVENTS)) & _POLLIN:  # poll(0) costs more
            try:
                event = recv_monitor_message(self._monitor, zmq.NOBLOCK)
            except zmq.ZMQError:
                return
            if event["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.last_error = None
                continue
            error = curve.handshake_failure(
                event, self.endpoint, with_keys=self.config.curve is not None
            )
            if error is not None:
                if str(error) not in self._logged:  # once per kind, not per retry
                    self._logged.add(str(error))
                    log.warning("%s", error)
                self.last_error = error

    def _serve(self, dealer: zmq.Socket, sub: zmq.Socket) -> None:
        poller = zmq.Poller()
        poller.register(dealer, zmq.POLLIN)
        poller.register(sub, zmq.POLLIN)
        poller.register(bell := self._bell.fileno(), zmq.POLLIN)
        last_hello = last_monitor = time.monotonic()
        while not self._stop.is_set():
            joining = self.machine.phase is Phase.JOINING
            if joining and time.monotonic() - last_hello > 0.1:
                # catalogd heartbeats when our subscription arrives; one that predates
                # that answers each hello with a heartbeat soon: either proves it live.
                self._send(self._hello())
                last_hello = time.monotonic()
            wait = self.config.tick_s if joining else self.machine.next_tick(time.monotonic())
            due = time.monotonic() + wait  # a tick before then has nothing to do
            ready = dict(poller.poll(int(max(self.config.tick_s, min(wait, 1.0)) * 1000)))
            if (now := time.monotonic()) - last_monitor >= self.config.tick_s:  # not polled:
                self._check_handshake()  # a polled socket costs every poll 2 more syscalls
                last_monitor = now
            # One publication per poll (which returns at once while more wait): EVENTS
            # after each change would cost every change. Answers (snapshot chunks) come
            # in bounded batches; EVENTS (an int: IntFlag costs more) ends a batch.
            if sub in ready and self._publication(sub):
                return
            for _ in range(1000 if dealer in ready else 0):
                response = self._receive(dealer, zmq.NOBLOCK)
                if response is not None and self._response(response):
                    return
                if not cast(int, dealer.getsockopt(_EVENTS)) & _POLLIN:
                    break
            if bell in ready:
                self._bell.drain()
            while not self._requests.empty():
                self._send_asked(dealer, *self._requests.get_nowait())
            if (now := time.monotonic()) < due:  # messages carried their own reports
                continue
            tick = self.machine.on_tick(now)  # only actions or a report
            if (tick.actions or tick.report) and self._handle(tick):
                return

    def _publication(self, sub: zmq.Socket) -> bool:
        """Read and handle one publication; True: reconnect. Its topic frame says whether a
        body follows (cheaper than RCVMORE); more frames are read as more (garbage) ones."""
        topic = sub.recv(zmq.NOBLOCK, copy=False)
        if not topic.more:
            self.stats.garbage += 1
            return False
        body = sub.recv(zmq.NOBLOCK)
        try:
            message = wire.parse_publication(topic.bytes, body)
        except ProtocolError:
            self.stats.garbage += 1
            return False
        now = time.monotonic()
        if isinstance(message, DeltaPart):
            return self._handle(self.machine.on_part(message, now))
        if isinstance(message, Commit):
            return self._handle(self.machine.on_commit(message, now))
        assert isinstance(message, Heartbeat)
        return self._handle(self.machine.on_heartbeat(message, now))

    def _receive(self, dealer: zmq.Socket, flags: int = 0) -> Any | None:
        """The decoded TResponse, or a snapshot chunk scanned with its partitions packed."""
        frames = dealer.recv_multipart(flags)
        if len(frames) != 1:
            self.stats.garbage += 1
            return None
        rid = self._snapshot_rid
        if rid is not None and (chunk := packed.scan_chunk(frames[0], rid)):
            return chunk
        try:
            return codec.unpack(svc.TResponse, frames[0])
        except ProtocolError:
            self.stats.garbage += 1
            return None

    def _response(self, response: Any) -> bool:
        """Handle one DEALER response; True asks for a reconnect."""
        now = time.monotonic()
        if isinstance(response, SnapshotChunk):
            return self._handle(self.machine.on_snapshot_chunk(response, now))
        rid = response.request_id
        if rid is not None and rid == self._snapshot_rid:
            return self._snapshot_part(response, now)
        if rid is not None and rid == self._catch_up_rid:
            self._catch_up_rid = None
            if response.status.code == svc.TStatusCode.OK and response.delta is not None:
                try:
                    delta = wire.delta_from_thrift(response.delta)
                except ProtocolError:
                    self.stats.garbage += 1
                    return self._handle(self.machine.on_catch_up_unavailable(now))
                if response.delta.service_id != self.machine.cache.view.service_id:
                    return self._handle(self.machine.on_catch_up_unavailable(now))
                self.stats.catch_ups += 1
                return self._handle(self.machine.on_catch_up(delta, now))
            return self._handle(self.machine.on_catch_up_unavailable(now))
        self._asked.answer(rid, response)  # else a stale answer, or to a one-way request
        return False

    def _snapshot_part(self, response: Any, now: float) -> bool:
        try:
            reply = wire.parse_snapshot_reply(response)
        except ProtocolError:
            return self._handle(self.machine.on_snapshot_garbage(now))
        if isinstance(reply, SnapshotChunk):
            return self._handle(self.machine.on_snapshot_chunk(reply, now))
        return self._handle(self.machine.on_snapshot_end(reply, now))

    def _handle(self, step: Step) -> bool:
        """Carry out a step's actions; True means reconnect."""
        self.stats.dropped += step.dropped
        self.stats.garbage += step.garbage
        if step.installed:
            self._snapshot_rid = None
            self.stats.snapshots += 1
            service_id = self.machine.cache.view.service_id
            if not self.stats.service_ids or self.stats.service_ids[-1] != service_id:
                self.stats.service_ids.append(service_id)
        if step.report is not None:  # sent now: this is the thread that owns the socket
            self._send(self._report(step.report.service_id, step.report.version))
        reconnect = False
        for action in step.actions:
            if action.kind is ActionKind.REQUEST_SNAPSHOT:
                self._request_snapshot()
            elif action.kind is ActionKind.REQUEST_CATCH_UP:
                self._catch_up_rid = self._next_rid()
                self._send(
                    svc.TRequest(
                        request_id=self._catch_up_rid,
                        catch_up=svc.TCatchUpRequest(
                            from_version=action.from_version,
                            databases=self._database_list,
                            invalidations=self.config.on_demand or None,
                        ),
                    )
                )
            elif action.kind is ActionKind.RECONNECT:
                self.stats.reconnects += 1
                reconnect = True
        if step.events or step.actions:
            self.stats.deltas_applied += bool(step.events)
        self._on_step(step)
        return reconnect

    def _request_snapshot(self) -> None:
        self._snapshot_rid = self._next_rid()
        self._send(
            svc.TRequest(
                request_id=self._snapshot_rid,
                snapshot=svc.TSnapshotRequest(
                    databases=self._database_list, empty=self.config.on_demand or None
                ),
            )
        )

    def _send_asked(self, dealer: zmq.Socket, request: Any, on_answer: Answered | None) -> None:
        """Send a user's request; one awaiting an answer gets an id and its callback."""
        if on_answer is not None:
            request.request_id = self._next_rid()
            self._asked.add(request.request_id, on_answer)
        try:
            dealer.send(codec.pack(request), zmq.NOBLOCK)
        except zmq.Again:  # a full pipe drops it: loads and reports are repeated
            if on_answer is not None:
                self._asked.forget(request.request_id)

    def _send(self, request: Any) -> None:
        if self._dealer is None:
            return  # not connected: the machine asks again after reconnecting
        # A full pipe: the request times out in the machine and is sent again.
        with contextlib.suppress(zmq.Again):
            self._dealer.send(codec.pack(request), zmq.NOBLOCK)

    def _next_rid(self) -> int:
        self._rid += 1
        return self._rid
