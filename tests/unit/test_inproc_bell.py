"""The transport's doorbell: a one-frame message on its own SUB socket (real inproc sockets)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import zmq

from subscriber.inproc_bell import WAKE, InprocBell
from subscriber.protocol import wire


@pytest.fixture
def context() -> Iterator[zmq.Context]:
    ctx = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)  # closes what a failed test left open


def _sub(context: zmq.Context, bell: InprocBell) -> zmq.Socket:
    """A SUB as the transport makes one: catalogd's prefixes, then attached to the bell."""
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.RCVTIMEO, 500)
    for prefix in wire.subscriptions(None):
        sub.setsockopt(zmq.SUBSCRIBE, prefix)
    bell.attach(sub)
    return sub


def test_a_ring_wakes_a_thread_blocked_in_recv_on_the_sub(context: zmq.Context) -> None:
    bell = InprocBell(context)
    sub = _sub(context, bell)
    got: list[bytes] = []
    waiter = threading.Thread(target=lambda: got.append(sub.recv()))
    waiter.start()
    bell.ring()
    waiter.join(2)
    assert got == [WAKE]
    sub.close()
    bell.close()


def test_rings_while_one_is_pending_send_nothing_more(context: zmq.Context) -> None:
    bell = InprocBell(context)
    sub = _sub(context, bell)
    for _ in range(100):
        bell.ring()
    assert sub.recv() == WAKE
    with pytest.raises(zmq.Again):
        sub.recv(zmq.NOBLOCK)
    bell.heard()  # the owner looked at its queues: the next ring sends again
    bell.ring()
    assert sub.recv() == WAKE
    sub.close()
    bell.close()


def test_a_ring_right_after_a_new_sub_attaches_arrives(context: zmq.Context) -> None:
    """A PUB that sent less than ~1 ms ago skips its commands on the next send (libzmq's
    throttle), so a ring right after a SUB connected plainly may reach nobody; attach
    rings until one arrives. Each round: a ring while no SUB listens (between two
    sessions), then a new SUB, then at once the ring that must arrive."""
    bell = InprocBell(context)
    for _ in range(50):
        bell.ring()  # nobody hears it, and it stays pending
        sub = _sub(context, bell)
        bell.ring()
        assert sub.recv() == WAKE
        sub.close()
    bell.close()


def test_without_attach_that_ring_may_be_lost(context: zmq.Context) -> None:
    """Why attach exists: the same rounds with a plain connect lose rings."""
    pub = context.socket(zmq.PUB)
    pub.bind("inproc://bell-without-attach")
    lost = 0
    for _ in range(20):
        pub.send(WAKE)  # nobody hears it
        sub = context.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, wire.TOPIC_HEARTBEAT)
        sub.connect("inproc://bell-without-attach")
        pub.send(WAKE)
        lost += not sub.poll(50)
        sub.close(linger=0)
    pub.close(linger=0)
    assert lost > 0


def test_the_wake_is_one_frame_under_the_heartbeat_prefix_and_not_a_heartbeat() -> None:
    assert WAKE.startswith(wire.TOPIC_HEARTBEAT) and WAKE != wire.TOPIC_HEARTBEAT
    for databases in (None, ["sales"]):
        for on_demand in (False, True):
            prefixes = wire.subscriptions(databases, on_demand=on_demand)
            assert any(WAKE.startswith(prefix) for prefix in prefixes)


def test_close_is_idempotent_and_later_rings_are_ignored(context: zmq.Context) -> None:
    bell = InprocBell(context)
    bell.close()
    bell.close()
    bell.ring()  # no socket: nothing happens, nothing raises
