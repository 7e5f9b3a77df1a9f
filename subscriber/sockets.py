"""The subscriber's sockets: what a session connects to, and each socket as it is made.

:class:`TransportConfig` says where and how (:class:`~subscriber.transport.SubscriberTransport`
takes one); :func:`dealer` and :func:`sub` make a session's two sockets, options set, in
the transport's thread, which alone uses and closes them. The SUB is attached to the
transport's doorbell (:mod:`subscriber.inproc_bell`) before it connects to catalogd.
"""

from __future__ import annotations

from dataclasses import dataclass

import zmq

from subscriber import curve
from subscriber.curve import ClientKeys
from subscriber.endpoints import parse_endpoints, pub_endpoint
from subscriber.inproc_bell import InprocBell
from subscriber.protocol import wire

__all__ = ["TransportConfig", "dealer", "sub"]


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


def dealer(
    context: zmq.Context, config: TransportConfig, endpoint: str
) -> tuple[zmq.Socket, zmq.Socket]:
    """The DEALER to catalogd at ``endpoint`` (hello, snapshot, catch-up, reports, fetches)
    and its monitor (:data:`~subscriber.curve.HANDSHAKE_EVENTS`: how a refused key shows;
    libzmq tells the application nothing else), made before it connects."""
    socket = context.socket(zmq.DEALER)
    monitor: zmq.Socket | None = None
    try:
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.MAXMSGSIZE, config.max_message_bytes)
        curve.apply(socket, config.curve)
        monitor = socket.get_monitor_socket(curve.HANDSHAKE_EVENTS)
        socket.connect(endpoint)
    except BaseException:
        if monitor is not None:
            socket.disable_monitor()
            monitor.close(linger=0)
        socket.close(linger=0)
        raise
    return socket, monitor


def sub(
    context: zmq.Context, config: TransportConfig, bell: InprocBell, published: str, endpoint: str
) -> zmq.Socket:
    """The SUB for what catalogd publishes (its welcome's ``published`` address, seen from
    ``endpoint``), subscribed as ``config`` asks and attached to ``bell`` first."""
    socket = context.socket(zmq.SUB)
    try:
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.RCVHWM, config.rcvhwm)
        socket.setsockopt(zmq.MAXMSGSIZE, config.max_message_bytes)
        curve.apply(socket, config.curve)
        for prefix in wire.subscriptions(config.databases, on_demand=config.on_demand):
            socket.setsockopt(zmq.SUBSCRIBE, prefix)
        bell.attach(socket)  # a ring is a message on this SUB (first: see attach)
        socket.connect(pub_endpoint(published, endpoint))
    except BaseException:
        socket.close(linger=0)
        raise
    return socket
