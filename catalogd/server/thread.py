"""catalogd's broadcast server: the thread that owns the catalog and its sockets.

One thread (``catalogd-server``) owns the :class:`~catalogd.core.catalog.Catalog`, the PUB
socket (an XPUB: deltas, heartbeats; it hears subscriptions) and the ROUTER socket (hello,
snapshots, catch-ups, load requests, subscriber reports). Other threads never touch them:
they hand work in with :meth:`CatalogServer.submit`, which queues a function, rings a
:class:`~subscriber.doorbell.Doorbell` the poller watches and returns a Future that resolves
once the function's delta is *published*. So a version returned to an admin is always one
every subscriber can already receive, and a version is durably reserved (``reserve``) before
it is published.

This module only receives, calls pure code and sends: what a request means is decided by
:mod:`catalogd.server.requests`, how a snapshot is chunked by
:mod:`catalogd.server.snapshots`, how sockets are bound and written without blocking by
:mod:`catalogd.server.sockets`. Snapshots are sent one chunk per peer per loop turn,
interleaved with publishing, and flow-controlled by ROUTER_MANDATORY: a full pipe leaves the
chunk for later instead of dropping it, and *parks* the job (it is tried again after a
backoff of up to 100 ms, so a peer that never reads costs nothing while it waits). Each peer
has at most ``max_snapshot_jobs_per_peer`` snapshots queued (a newer request replaces its
oldest), all peers ``max_snapshot_jobs``. A turn sends frames for at most
``snapshot_turn_s`` (then one chunk's encoding more); encoded chunks are shared by joins
while their database is unchanged (:mod:`catalogd.server.snapshot_cache`).

Joins wait for nothing fixed: the PUB socket is an XPUB, so the loop learns the moment a
subscriber's subscription takes effect and publishes a heartbeat right then (at most one per
``JOIN_BEAT_SPACING_S``, so a flood of subscriptions costs the other subscribers a bounded
rate of heartbeats). That heartbeat is the joining subscriber's proof that nothing published
from now on can miss it. One goes out at once, too, asking every subscriber to report its
applied version, when :meth:`CatalogServer.request_reports` was called (a ``--sync``
barrier): subscribers report once a second otherwise, so a delta costs no report.

Work per request is bounded: frames beyond ``max_request_bytes`` are dropped by ZeroMQ,
compressed requests may expand only to ``max_request_inflated_bytes`` (checked while
inflating), lists only to ``max_request_list_items``; joined subscribers and their reports
expire (:mod:`catalogd.server.members`). Malformed requests are counted and answered with an
ERROR status when they can be; nothing a peer sends stops the loop.

With CURVE keys (``config.curve``, :mod:`catalogd.security`) joins and reports are bound to
the sending key too, and :meth:`CatalogServer.drop_connections` rebinds both sockets so that
a revoked key loses its live connections.

Why one module of over 400 lines: it is the one thread that owns the catalog and both
sockets; its decisions are already pure (requests, snapshots, members), and what is left is
that thread's loop, publishing and durable version reservation.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import zmq

import idl
from catalogd.core.catalog import Catalog
from catalogd.security import curve
from catalogd.server import requests, sockets
from catalogd.server.config import ServerConfig, ServerStats
from catalogd.server.members import Membership
from catalogd.server.reloads import AwaitedReloads
from catalogd.server.snapshot_cache import SnapshotCache
from catalogd.server.snapshots import SnapshotJob
from subscriber.doorbell import Doorbell
from subscriber.protocol import wire
from subscriber.protocol.delta import Delta
from subscriber.protocol.errors import CatalogError, ProtocolError, UnavailableError

__all__ = ["CatalogServer", "ServerConfig", "ServerStats"]

log = logging.getLogger(__name__)
svc = idl.catalog_service
_DEFAULT_CONFIG = ServerConfig()


class CatalogServer:
    """Owns the catalog and publishes it. See the module docstring.

    Args:
        config: addresses and limits.
        context: the ZeroMQ context (default: the process-wide instance).
        service_id: fixed id for tests; default a new random one per process start.
        on_load_request: called on the server thread with ``(db, table)`` when a
            subscriber asks for a priority load; must not block.
        on_reload_request: likewise for a reload of ``(db, table)`` even if loaded
            (``table`` "": the database's names), after a write through an HMS endpoint;
            returns a Future of the version that shows the reload (answered to a
            subscriber that asked ``answer_when_loaded``), or None.
        clock: wall clock in seconds (heartbeat timestamps and subscriber ages).
    """

    def __init__(
        self,
        config: ServerConfig = _DEFAULT_CONFIG,
        *,
        context: zmq.Context | None = None,
        service_id: str | None = None,
        on_load_request: Callable[[str, str], None] | None = None,
        on_reload_request: Callable[[str, str], Future[int] | None] | None = None,
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
        self._on_reload_request = on_reload_request
        self._reserve = reserve
        self._clock = clock
        self._work: queue.SimpleQueue[tuple[Callable[[Catalog], Any], Future[Any]]]
        self._work = queue.SimpleQueue()
        self._bell = Doorbell()
        self._reloads = AwaitedReloads(self._bell.ring)
        self._stop = threading.Event()
        self._ready = threading.Event()
        # Serializes work run before start() (a standby's, from several threads) and start().
        self._inline = threading.Lock()
        self._startup_error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="catalogd-server", daemon=True)
        self._jobs: list[SnapshotJob] = []
        self._snapshot_cache = SnapshotCache(config.snapshot_cache_bytes)
        self._members = Membership(
            self.stats.subscribers, ttl_s=config.report_ttl_s, max_members=config.max_subscribers
        )
        self._advertised_pub = ""
        self._heartbeat_interval = config.heartbeat_interval_s
        self._joined = False  # a subscription arrived that no heartbeat followed yet
        self._reports_asked = False  # request_reports() since the last heartbeat
        self._rebind = threading.Event()

    # -- lifecycle --------------------------------------------------------------------

    def start(self, timeout: float = 10.0, *, after_version: int = 0) -> CatalogServer:
        """Bind the sockets (in the server thread) and start serving.

        ``after_version``: the catalog's version becomes at least this before
        anything is served (an HA takeover passes the shared high-water mark + 1,
        so its first snapshot is above every version the old active could have
        published; see ``Catalog.skip_to``).

        Raises:
            UnavailableError: an address could not be bound.
        """
        with self._inline:
            if after_version:
                self._catalog.skip_to(after_version)
            self._reserve_durably(self._catalog.version)
            self._thread.start()
            self._ready.wait(timeout)
        if not self._ready.is_set():
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
            self._bell.ring()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._bell.close()

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
        with self._inline:
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
        self._bell.ring()
        return future

    @property
    def started(self) -> bool:
        return self._ready.is_set()

    def set_heartbeat_interval(self, seconds: float) -> None:
        """Change the heartbeat interval while running (a live config reload)."""
        if seconds <= 0:
            raise ValueError("the heartbeat interval must be positive")
        self._heartbeat_interval = seconds
        self._bell.ring()

    def drop_connections(self) -> None:
        """Close and rebind the ROUTER and PUB (on the server thread, soon): every peer
        reconnects and passes authentication again, so a revoked key is cut off.
        Streaming snapshots are dropped (their subscribers ask again)."""
        self._rebind.set()
        self._bell.ring()

    def subscriber_keys(self) -> dict[str, str]:
        """client id -> the name of the CURVE key it joined with (empty without CURVE)."""
        owners = dict(self._members.owners) if self.config.curve is not None else {}
        return {client: owner.partition(b"\0")[0].decode() for client, owner in owners.items()}

    def subscriber_databases(self) -> dict[str, str]:
        """client id -> the databases it said it follows ("all", or their names)."""
        return dict(self._members.follows)

    def request_reports(self) -> None:
        """Ask every subscriber for its applied version now: a heartbeat saying so goes out
        at once (they report otherwise once a second; ``--sync`` barriers call this)."""
        self._reports_asked = True
        self._bell.ring()

    def commit(self, changes: Any) -> Future[Delta]:
        """Commit ``changes`` (key -> payload or None) and publish the delta."""
        return self.submit(lambda catalog: catalog.commit(changes))

    # -- the server thread ------------------------------------------------------------------

    def _run(self) -> None:
        try:
            bound = sockets.bind(self._context, self.config)
        except zmq.ZMQError as exc:
            self._startup_error = exc
            self._ready.set()
            return
        router, pub = bound.router, bound.pub
        self.endpoint, self.pub_endpoint = bound.endpoint, bound.pub_endpoint
        self._advertised_pub = bound.advertised_pub
        self._ready.set()
        poller = zmq.Poller()
        poller.register(router, zmq.POLLIN)
        poller.register(pub, zmq.POLLIN)  # subscriptions arriving (XPUB)
        bell = self._bell.fileno()
        poller.register(bell, zmq.POLLIN)
        next_beat = last_beat = 0.0
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                due = [next_beat, *(j.retry_at for j in self._jobs)]
                if self._joined or self._reports_asked:
                    due.append(last_beat + sockets.JOIN_BEAT_SPACING_S)
                wait = max(0.0, min(due) - now)
                events = poller.poll(int(wait * 1000))
                turn = (time.monotonic(), time.thread_time())
                for sock, _ in events:
                    if sock == bell:
                        self._bell.drain()
                        self._drain_work(pub)
                        self._send_later(router)
                    elif sock == pub:
                        self._joined |= sockets.subscriptions(pub, limit=1000) > 0
                    else:
                        self._serve(router, limit=64)
                if self._rebind.is_set():
                    self._rebind.clear()
                    poller.unregister(router)
                    poller.unregister(pub)
                    bound = sockets.rebind(self._context, self.config, bound)
                    router, pub = bound.router, bound.pub
                    poller.register(router, zmq.POLLIN)
                    poller.register(pub, zmq.POLLIN)
                    self._jobs.clear()
                self.stats.snapshot_retries += sockets.advance_jobs(
                    router, self._jobs, time.monotonic(), budget_s=self.config.snapshot_turn_s
                )
                self._count_snapshots(*turn)
                beat_wanted = self._joined or self._reports_asked
                if beat_wanted and time.monotonic() >= last_beat + sockets.JOIN_BEAT_SPACING_S:
                    next_beat = 0.0  # a joining subscriber's proof that its SUB is live
                if time.monotonic() >= next_beat:
                    self._heartbeat(pub)
                    self._members.expire(self._clock())
                    self._joined = False
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
            pub.send(wire.publication(topic, body), copy=False)
            self.stats.published_messages += 1
            self.stats.published_bytes += len(topic) + len(body)

    def _heartbeat(self, pub: zmq.Socket) -> None:
        asked, self._reports_asked = self._reports_asked, False
        version, interval, now_ms = self._catalog.version, self._heartbeat_interval, self._clock()
        topic, body = wire.heartbeat_message(
            self.service_id, version, interval, int(now_ms * 1000), report=asked
        )
        pub.send(wire.publication(topic, body))
        self.stats.heartbeats += 1

    # -- requests -----------------------------------------------------------------------

    def _serve(self, router: zmq.Socket, limit: int) -> None:
        for _ in range(limit):
            try:
                frames = router.recv_multipart(zmq.NOBLOCK, copy=self.config.curve is None)
            except zmq.Again:
                return
            if len(frames) != 2:
                self.stats.garbage += 1  # DEALER requests are [identity, body]
                if len(frames) == 3 and not len(frames[1]):  # a REQ: catalogd admin?
                    with contextlib.suppress(zmq.ZMQError):  # a full pipe: it times out
                        router.send_multipart(
                            [frames[0], b"", requests.wrong_port_reply()], zmq.NOBLOCK
                        )
                continue
            identity, body, member = self._peer(frames)
            now = self._clock()
            try:
                request = requests.decode(
                    body,
                    max_inflated=self.config.max_request_inflated_bytes,
                    max_list_items=self.config.max_request_list_items,
                )
                outcome = requests.answer(identity, request, self._catalog, self._state(), now)
            except ProtocolError as exc:
                outcome = requests.malformed(exc)
            requests.record(self.stats, outcome, self._members, member, now)
            if outcome.snapshot is not None:
                sockets.queue_job(router, self._jobs, outcome.snapshot, self.config, self.stats)
            if outcome.load_request is not None and self._on_load_request is not None:
                self._on_load_request(*outcome.load_request)
            if outcome.reload_request is not None:
                self._reload(router, outcome)
            if outcome.response is not None:
                sockets.send_reply(router, identity, outcome.response)

    def _reload(self, router: zmq.Socket, outcome: requests.Outcome) -> None:
        for peer, response in self._reloads.start(
            outcome, self._on_reload_request, self._catalog.version
        ):
            sockets.send_reply(router, peer, response)

    def _send_later(self, router: zmq.Socket) -> None:
        for peer, response in self._reloads.ready():
            sockets.send_reply(router, peer, response)

    def _peer(self, frames: list[Any]) -> tuple[bytes, bytes, bytes]:
        """``(ROUTER identity, body, member id)`` of a received request.

        With CURVE the member id is ``key name + NUL + identity``: joins and
        reports are bound to the authenticated key as well as the connection
        (a peer that fakes another's routing id has another key).
        """
        if self.config.curve is None:
            return frames[0], frames[1], frames[0]
        identity, body = frames[0].bytes, frames[1].bytes
        key = curve.user_id(frames[1]).encode()
        return identity, body, key + b"\0" + identity

    def _count_snapshots(self, turn_started: float, turn_cpu_started: float) -> None:
        stats, cache = self.stats, self._snapshot_cache
        stats.snapshot_jobs = len(self._jobs)
        stats.snapshot_cache_bytes = cache.nbytes
        stats.snapshot_cache_hits, stats.snapshot_cache_misses = cache.hits, cache.misses
        stats.longest_turn_s = max(stats.longest_turn_s, time.monotonic() - turn_started)
        cpu = time.thread_time() - turn_cpu_started
        stats.longest_turn_cpu_s = max(stats.longest_turn_cpu_s, cpu)

    def _state(self) -> requests.ServerState:
        return requests.ServerState(
            service_id=self.service_id,
            pub_endpoint=self._advertised_pub,
            heartbeat_interval_s=self._heartbeat_interval,
            snapshot_chunk=self.config.snapshot_chunk,
            max_catch_up_entries=self.config.max_catch_up_entries,
            hms_uri=self.config.hms_uri,
            welcome_snapshot_entries=self.config.welcome_snapshot_entries,
            welcome_snapshot_bytes=self.config.welcome_snapshot_bytes,
            snapshot_cache=self._snapshot_cache,
        )
