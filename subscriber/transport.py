"""The subscriber's transport: one background thread, two sockets, one cache.

:class:`SubscriberTransport` owns a DEALER (hello, snapshot, catch-up, reports, fetches)
and a SUB (deltas or invalidations, heartbeats), both made (:mod:`subscriber.sockets`),
used and closed in its thread (``catalogd-subscriber``). It only moves bytes: it decodes
what arrives, feeds it with the clock into the pure :class:`~subscriber.sync.SyncMachine`
and carries out the :class:`~subscriber.sync.Step` each input returns. User threads queue
requests, ring the doorbell (:mod:`subscriber.inproc_bell`: a message on the SUB) and
read the cache's view (:mod:`subscriber.api`).

The thread's one loop, :meth:`SubscriberTransport._serve`: while an answer is awaited
(joining, a snapshot, a catch-up, a fetch) it polls both sockets; otherwise, the steady
state, it sleeps in ``recv`` on the SUB alone and handles publication after publication
(:meth:`SubscriberTransport._follow`), looking at the DEALER and the CURVE monitor once a
second. Per change that costs less than ``zmq_poll``, which asks each ZeroMQ socket for
``EVENTS`` before and after it sleeps (measured: ``docs/DESIGN.md``, "Subscriber").
Why one module of over 400 lines: the one thread owning the DEALER and SUB (failover,
CURVE monitor, the two ways of waiting); every decision it carries out is made in
:mod:`subscriber.sync`.
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

import idl
from subscriber import curve, requests, sockets
from subscriber.inproc_bell import WAKE, InprocBell
from subscriber.protocol import codec, packed, wire
from subscriber.protocol.errors import AuthenticationError, ProtocolError
from subscriber.protocol.messages import Commit, DeltaPart, Heartbeat, SnapshotChunk, Welcome
from subscriber.requests import Answered, Asked
from subscriber.sockets import TransportConfig
from subscriber.sync import Action, ActionKind, Phase, Step, SyncMachine

log = logging.getLogger(__name__)
svc = idl.catalog_service
_EVENTS, _POLLIN, _RCVTIMEO = int(zmq.EVENTS), int(zmq.POLLIN), int(zmq.RCVTIMEO)
_NOBLOCK, _RCVMORE = int(zmq.NOBLOCK), int(zmq.RCVMORE)
_STEADY_CHORES_S = 1.0
"""How often the steady state reads the CURVE monitor and the DEALER's unawaited
answers (a session's handshakes are over; each look costs a change ~40 us, measured)."""


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
        self._bell = InprocBell(self._context)  # rung by send_request: the thread sends at once
        self._thread = threading.Thread(target=self._run, name="catalogd-subscriber", daemon=True)
        self._rid = 0
        self._database_list = None if config.databases is None else list(config.databases)
        self._snapshot_rid: int | None = None
        self._catch_up_rid: int | None = None
        self._dealer: zmq.Socket | None = None
        self._woken = False  # the bell was heard: look at the request queue
        self._handshakes = curve.HandshakeWatch(with_keys=config.curve is not None)
        self.endpoint = config.endpoints[0]
        """The address of the current (or next) session."""
        self.welcome: Welcome | None = None
        """The last session's welcome (swapped whole by this thread; None before one)."""

    @property
    def last_error(self) -> AuthenticationError | None:
        """Why the last security handshake failed (None after one succeeds)."""
        return self._handshakes.last_error

    def start(self) -> None:
        self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._bell.ring()  # the thread may sleep up to a second in its recv or poll
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
        goodbye = requests.report(self.config.client_id, self.machine.cache.view.service_id, -1)
        with contextlib.suppress(zmq.ZMQError):
            dealer.send(codec.pack(goodbye), zmq.NOBLOCK)
            dealer.close(linger=200)  # give the goodbye a moment to leave

    def _session(self) -> None:
        """One connection: handshake, subscribe, serve until reconnect or stop."""
        dealer, self._monitor = sockets.dealer(self._context, self.config, self.endpoint)
        sub: zmq.Socket | None = None
        try:
            welcome = self._handshake(dealer)
            if welcome is None:
                return
            sub = sockets.sub(
                self._context, self.config, self._bell, welcome.pub_endpoint, self.endpoint
            )
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
        return requests.hello(self._next_rid(), self.config.client_id, self.config.databases)

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
            self._handshakes.check(self._monitor, self.endpoint)
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

    def _serve(self, dealer: zmq.Socket, sub: zmq.Socket) -> None:
        poller = zmq.Poller()
        poller.register(dealer, zmq.POLLIN)
        poller.register(sub, zmq.POLLIN)  # the bell rings on it too
        self._send_requests(dealer)  # queued before this session's SUB heard the bell
        last_hello = last_chores = time.monotonic()
        rcvtimeo = -1
        while not self._stop.is_set():
            joining = self.machine.phase is Phase.JOINING
            if joining and time.monotonic() - last_hello > 0.1:
                # catalogd heartbeats when our subscription arrives; one that predates
                # that answers each hello with a heartbeat soon: either proves it live.
                self._send(self._hello())
                last_hello = time.monotonic()
            wait = self.config.tick_s if joining else self.machine.next_tick(time.monotonic())
            due = time.monotonic() + wait  # a tick before then has nothing to do
            timeout = int(max(self.config.tick_s, min(wait, 1.0)) * 1000)
            if polling := joining or self._awaiting():
                ready = dict(poller.poll(timeout))
                with contextlib.suppress(zmq.Again):
                    if sub in ready and self._publication(sub, zmq.NOBLOCK):
                        return
                answers = dealer in ready
            else:  # the steady state: asleep in recv on the SUB alone (cheaper than a poll)
                if timeout != rcvtimeo:
                    sub.setsockopt(_RCVTIMEO, rcvtimeo := timeout)
                if self._follow(sub, due):
                    return
                answers = False
            chores_s = self.config.tick_s if polling else _STEADY_CHORES_S
            if (now := time.monotonic()) - last_chores >= chores_s:
                # The monitor is not polled: a polled socket costs every poll 2 syscalls.
                self._handshakes.check(self._monitor, self.endpoint)
                # Answers nobody awaits (to one-way requests, stale ones) are read here.
                answers = answers or bool(cast(int, dealer.getsockopt(_EVENTS)) & _POLLIN)
                last_chores = now
            if answers and self._responses(dealer):
                return
            if self._woken or not self._requests.empty():  # not behind a backlog's wake
                self._send_requests(dealer)
            if (now := time.monotonic()) < due:  # messages carried their own reports
                continue
            tick = self.machine.on_tick(now)  # only actions or a report
            if (tick.actions or tick.report) and self._handle(tick):
                return

    def _follow(self, sub: zmq.Socket, due: float) -> bool:
        """The steady state: publication after publication, asleep in ``recv`` on the SUB
        (``RCVTIMEO`` set for ``due``). Returns (True: reconnect) on silence, a request, a
        step awaiting an answer, or once ``due`` has passed (late by up to ``RCVTIMEO``,
        a second, when a message came just before it and none after)."""
        try:
            while not self._publication(sub, 0):
                # A user's request leaves at once, even behind queued publications; of what
                # _awaiting() reads only these ids (from 1) change here, by a step.
                if self._woken or not self._requests.empty() or self._snapshot_rid:
                    return False
                if self._catch_up_rid or time.monotonic() >= due:
                    return False
        except zmq.Again:  # RCVTIMEO: nothing came
            return False
        return True

    def _awaiting(self) -> bool:
        """Whether an answer is awaited on the DEALER (the thread polls both sockets)."""
        return bool(self._asked) or self._snapshot_rid is not None or self._catch_up_rid is not None

    def _responses(self, dealer: zmq.Socket) -> bool:
        """Read the DEALER's answers, in bounded batches (snapshot chunks); True: reconnect.
        ``EVENTS`` (an int: IntFlag costs more) ends a batch."""
        for _ in range(1000):
            response = self._receive(dealer, zmq.NOBLOCK)
            if response is not None and self._response(response):
                return True
            if not cast(int, dealer.getsockopt(_EVENTS)) & _POLLIN:
                break
        return False

    def _send_requests(self, dealer: zmq.Socket) -> None:
        """Send what user threads queued. The bell is heard first, so a request queued
        after this look rings anew (one queued before may have rung already: its wake,
        still on the SUB, finds an empty queue)."""
        self._woken = False
        self._bell.heard()
        while not self._requests.empty():
            self._send_asked(dealer, *self._requests.get_nowait())

    def _publication(self, sub: zmq.Socket, flags: int) -> bool:
        """Read and handle one publication, or the bell; True: reconnect. A publication is
        one frame, topic then body (protocol 3); a catalogd of protocol 2 sends the topic
        and the body as two frames, read as one publication (``RCVMORE`` is asked only
        when a frame holds a topic and nothing more). One per wake: ``EVENTS`` after
        each change would cost every change.

        Raises:
            zmq.Again: nothing came (``NOBLOCK``, or the SUB's ``RCVTIMEO`` passed).
        """
        frame = sub.recv(flags)
        if frame == WAKE:
            self._woken = True
            return False
        try:
            message = wire.parse_frame(frame)
            if message is None:  # a topic alone: protocol 2's body is the next frame
                if not sub.get(_RCVMORE):
                    raise ProtocolError(f"a topic without a body: {frame[:16]!r}")
                message = wire.parse_publication(frame, sub.recv(_NOBLOCK))
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
        stats = self.stats
        if step.dropped or step.garbage:
            stats.dropped += step.dropped
            stats.garbage += step.garbage
        if step.installed:
            self._snapshot_rid = None
            self.stats.snapshots += 1
            service_id = self.machine.cache.view.service_id
            if not self.stats.service_ids or self.stats.service_ids[-1] != service_id:
                self.stats.service_ids.append(service_id)
        if (report := step.report) is not None:  # sent now: this thread owns the socket
            client_id, service_id = self.config.client_id, report.service_id
            self._send_frame(requests.report_frame(client_id, service_id, report.version))
        if step.events:
            stats.deltas_applied += 1
        reconnect = bool(step.actions) and self._act(step.actions)
        self._on_step(step)
        return reconnect

    def _act(self, actions: list[Action]) -> bool:
        """Send the requests the machine asked for; True means reconnect."""
        reconnect = False
        for action in actions:
            if action.kind is ActionKind.REQUEST_SNAPSHOT:
                self._request_snapshot()
            elif action.kind is ActionKind.REQUEST_CATCH_UP:
                self._catch_up_rid = rid = self._next_rid()
                on_demand, dbs = self.config.on_demand, self._database_list
                self._send(
                    requests.catch_up(rid, action.from_version, dbs, invalidations=on_demand)
                )
            elif action.kind is ActionKind.RECONNECT:
                self.stats.reconnects += 1
                reconnect = True
        return reconnect

    def _request_snapshot(self) -> None:
        self._snapshot_rid = rid = self._next_rid()
        self._send(requests.snapshot(rid, self._database_list, empty=self.config.on_demand))

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
        self._send_frame(codec.pack(request))

    def _send_frame(self, frame: bytes) -> None:
        if self._dealer is None:
            return  # not connected: the machine asks again after reconnecting
        # A full pipe: the request times out in the machine and is sent again.
        with contextlib.suppress(zmq.Again):
            self._dealer.send(frame, zmq.NOBLOCK)

    def _next_rid(self) -> int:
        self._rid += 1
        return self._rid
