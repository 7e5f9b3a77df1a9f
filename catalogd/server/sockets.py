"""The server's ZeroMQ sockets: how they are bound, and how they are written without blocking.

Only the server thread (:mod:`catalogd.server.thread`) calls these functions,
with sockets it owns; they keep no state of their own.

* The ROUTER is ROUTER_MANDATORY: a send to a peer whose pipe is full raises
  ``zmq.Again`` instead of dropping the message silently, and one to a peer
  that is gone raises ``EHOSTUNREACH``. Every send here is non-blocking, so no
  peer can stall the loop.
* The PUB socket is an XPUB with ``XPUB_VERBOSE``: every subscription a SUB sends
  (not only a topic's first) is handed to the server thread, *after* libzmq added
  it to the socket's subscription trie (``xpub_t::xread_activated``), so a message
  sent once the notification is read reaches that subscriber.
  :func:`subscriptions` drains them. Inbound frames (subscriptions) are bounded
  by ``max_request_bytes`` like requests.
* The PUB socket is bound next to the ROUTER (``bind`` port + 1) unless
  ``pub_bind`` says otherwise; both are closed again if either bind fails.
* With ``config.curve`` both are CURVE servers in the ``subscribers`` ZAP
  domain (:mod:`catalogd.security`); :func:`rebind` drops every connection,
  which is how a revoked key loses its live sessions.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import zmq

import idl
from catalogd.addresses import next_port_endpoint
from catalogd.security import curve
from catalogd.server import requests
from catalogd.server.config import ServerConfig, ServerStats
from catalogd.server.snapshots import SnapshotJob
from subscriber.protocol import codec

log = logging.getLogger(__name__)
svc = idl.catalog_service


JOIN_BEAT_SPACING_S = 0.001
"""A heartbeat answering new subscriptions follows the previous heartbeat by at least this."""


@dataclass(frozen=True, slots=True)
class Bound:
    """The bound sockets and the endpoints they ended up on."""

    router: zmq.Socket
    pub: zmq.Socket
    endpoint: str
    pub_endpoint: str
    advertised_pub: str
    """``pub_endpoint`` with ``advertise_host`` as its host, when configured."""


def bind(context: zmq.Context, config: ServerConfig) -> Bound:
    """Create and bind the ROUTER and PUB sockets.

    Raises:
        zmq.ZMQError: an address could not be bound (nothing is left open).
    """
    router = context.socket(zmq.ROUTER)
    pub = context.socket(zmq.XPUB)
    try:
        router.setsockopt(zmq.ROUTER_MANDATORY, 1)
        router.setsockopt(zmq.MAXMSGSIZE, config.max_request_bytes)
        router.setsockopt(zmq.LINGER, 0)
        pub.setsockopt(zmq.SNDHWM, config.pub_hwm)
        pub.setsockopt(zmq.XPUB_VERBOSE, 1)
        pub.setsockopt(zmq.MAXMSGSIZE, config.max_request_bytes)
        curve.apply(router, config.curve)
        curve.apply(pub, config.curve)
        router.bind(config.bind)
        endpoint = router.getsockopt(zmq.LAST_ENDPOINT).decode()
        # From the configured address, not the bound one: a ROUTER on a free port (``*``)
        # gets a PUB on a free port too, never "its port + 1", which may be taken.
        pub.bind(config.pub_bind or next_port_endpoint(config.bind))
        pub_endpoint = pub.getsockopt(zmq.LAST_ENDPOINT).decode()
    except zmq.ZMQError:
        router.close(linger=0)
        pub.close(linger=0)
        raise
    advertised = advertised_endpoint(pub_endpoint, config.advertise_host)
    return Bound(router, pub, endpoint, pub_endpoint, advertised)


def rebind(
    context: zmq.Context, config: ServerConfig, bound: Bound, timeout_s: float = 5.0
) -> Bound:
    """Close ``bound``'s sockets and bind new ones on the same endpoints.

    Closing a socket drops every connection it has: this is how a revoked key's
    live sessions end (ZeroMQ has no per-peer disconnect on PUB). Connected
    peers reconnect by themselves and pass ZAP again. The ports are freed
    asynchronously by libzmq's I/O thread, so binding is retried briefly.

    Raises:
        zmq.ZMQError: the endpoints could not be bound again within ``timeout_s``.
    """
    bound.router.close(linger=0)
    bound.pub.close(linger=0)
    same = replace(config, bind=bound.endpoint, pub_bind=bound.pub_endpoint)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return bind(context, same)
        except zmq.ZMQError as exc:
            if exc.errno != zmq.EADDRINUSE or time.monotonic() > deadline:
                raise
            time.sleep(0.01)  # the I/O thread has not released the port yet


def subscriptions(pub: zmq.Socket, limit: int) -> int:
    """Read up to ``limit`` subscription notifications from the XPUB ``pub``; returns how
    many were subscribes (``0x01`` + prefix; unsubscribes, ``0x00``, are only drained).
    Each one is already in effect: a message published now reaches its subscriber."""
    subscribed = 0
    for _ in range(limit):
        try:
            frame = pub.recv(zmq.NOBLOCK)
        except zmq.Again:
            break
        subscribed += frame[:1] == b"\x01"
    return subscribed


def advertised_endpoint(pub_endpoint: str, advertise_host: str | None) -> str:
    """The PUB endpoint clients are told: ``pub_endpoint`` with ``advertise_host`` if set."""
    if advertise_host is None:
        return pub_endpoint
    port = pub_endpoint.rpartition(":")[2]
    return f"tcp://{advertise_host}:{port}"


def send_reply(router: zmq.Socket, identity: bytes, response: Any) -> None:
    """Send one ``TResponse``; a peer gone or with a full pipe times out and asks again."""
    with contextlib.suppress(zmq.ZMQError):
        router.send_multipart([identity, codec.pack(response)], zmq.NOBLOCK)


def advance_jobs(
    router: zmq.Socket,
    jobs: list[SnapshotJob],
    now: float,
    *,
    budget_s: float = float("inf"),
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Send each streaming snapshot not parked at ``now`` its next frame; a full pipe
    parks the job (:meth:`SnapshotJob.park`). Returns how many sends a full pipe refused.

    Stops once ``budget_s`` went by (each frame may cost a chunk's encoding); the
    jobs served go to the end of ``jobs``, so the next turn starts with the others.
    Finished jobs, and jobs whose peer went away, are removed from ``jobs``.
    """
    refused = 0
    deadline = clock() + budget_s
    served: set[SnapshotJob] = set()
    for job in list(jobs):
        if served and clock() >= deadline:
            break
        served.add(job)
        if job.retry_at > now:
            continue
        frame = job.next_frame()
        if frame is None:
            jobs.remove(job)
            continue
        try:
            router.send_multipart([job.identity, frame], zmq.NOBLOCK, copy=False)
        except zmq.Again:
            job.park(now)  # the peer's pipe is full: try again after a backoff
            refused += 1
        except zmq.ZMQError as exc:
            if exc.errno != zmq.EHOSTUNREACH:
                log.warning("snapshot send failed: %s", exc)
            jobs.remove(job)  # the subscriber went away
        else:
            job.sent()
    if len(served) < len(jobs):  # stopped early: the others first next time
        jobs[:] = [j for j in jobs if j not in served] + [j for j in jobs if j in served]
    return refused


def queue_job(
    router: zmq.Socket,
    jobs: list[SnapshotJob],
    job: SnapshotJob,
    config: ServerConfig,
    stats: ServerStats,
) -> None:
    """Queue ``job`` within the per-peer and total bounds of ``config``: a peer's newest
    request replaces its oldest; beyond the total the peer is answered BUSY."""
    mine = [j for j in jobs if j.identity == job.identity]
    while mine and len(mine) >= config.max_snapshot_jobs_per_peer:
        # The peer asked again, so it gave up on its oldest request.
        jobs.remove(mine.pop(0))
        stats.snapshot_jobs_replaced += 1
    if len(jobs) >= config.max_snapshot_jobs:
        stats.busy += 1
        busy = requests.status(
            svc.TStatusCode.BUSY, "too many snapshots in progress", job.request_id
        )
        send_reply(router, job.identity, busy)
        return
    jobs.append(job)
