"""A doorbell that rings on the transport thread's SUB socket, so that thread can sleep in
``recv`` on that one socket instead of in ``zmq_poll``.

The transport thread spends its life waiting for the next publication. ``zmq_poll`` over
its sockets and a pipe asks each ZeroMQ socket for ``EVENTS`` before and after it sleeps
(a mailbox check each); a ``recv`` blocked on one socket waits on one descriptor, which
costs each change measurably less (:mod:`subscriber.transport`). But other threads must
still wake it: a user's fetch or reload must leave at once, and ``close`` must end the
thread. So the bell is a message on that SUB: an ``inproc`` PUB bound here, which each
session's SUB connects to beside catalogd's PUB, publishes :data:`WAKE`.

:data:`WAKE` lies under the heartbeat prefix every subscriber's SUB subscribes to, so the
bell needs no subscription of its own (one would reach catalogd as well, whose XPUB takes
each subscription for a joining subscriber). It is one frame: catalogd's publications
are two, so the transport tells it apart before it parses anything.

A ring sends only when none is pending: the owner calls :meth:`InprocBell.heard` when the
wake arrives, before it looks at its queues, so a burst of requests costs one message.
That needs every ring sent to arrive, and a PUB may drop the first messages after a SUB
connects: libzmq processes its commands (here: the inproc connection) on a send only
when about a millisecond has passed since it last did (``process_commands``' throttle),
so a ring sent just after another, before the PUB knows the new SUB, reaches nobody
(found by ``tests/unit/test_inproc_bell.py``). :meth:`InprocBell.attach` therefore
connects a session's SUB and rings until one arrives, before that SUB connects anywhere
else: from then on every ring reaches it.

Thread-safety: :meth:`ring` from any thread (the PUB is used under a lock: a ZeroMQ
socket may pass between threads across a full memory barrier); the rest from the owner.
"""

from __future__ import annotations

import contextlib
import threading
import time

import zmq

from subscriber.protocol.wire import TOPIC_HEARTBEAT

WAKE = TOPIC_HEARTBEAT + b"\0wake"
"""The one-frame message a ring publishes (catalogd's heartbeat topic is ``h`` alone)."""


class InprocBell:
    """An inproc PUB in ``context``: any thread rings; the owner's SUB hears it."""

    def __init__(self, context: zmq.Context) -> None:
        self._lock = threading.Lock()
        self._rung = False
        self._pub: zmq.Socket | None = context.socket(zmq.PUB)
        self._pub.setsockopt(zmq.LINGER, 0)
        self.endpoint = f"inproc://catalogd-subscriber-bell-{id(self):x}"
        """Where a SUB connects to hear the bell (unique in its context)."""
        self._pub.bind(self.endpoint)

    def ring(self) -> None:
        """Wake the owner; never blocks. While a ring is pending nothing more is sent."""
        with self._lock:
            if not self._rung:
                self._send()

    def attach(self, sub: zmq.Socket, timeout_s: float = 5.0) -> None:
        """Connect ``sub`` (subscribed to :data:`WAKE`'s prefix, connected nowhere else yet:
        all it can receive is the bell) and return once a ring has reached it.

        Raises:
            TimeoutError: none arrived in ``timeout_s`` (the session is tried again).
        """
        sub.connect(self.endpoint)
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                self._send()
            if sub.poll(1):  # at once, unless this send came too soon after another
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"the doorbell {self.endpoint} does not reach its SUB")
        while sub.poll(0):  # this proof and rings meanwhile: the owner looks at its queues next
            sub.recv(zmq.NOBLOCK)
        self.heard()

    def heard(self) -> None:
        """The owner is about to look at its queues: the next ring must send again."""
        with self._lock:
            self._rung = False

    def _send(self) -> None:
        """Publish :data:`WAKE`, now pending (under the lock; nothing once closed)."""
        if self._pub is not None:
            self._rung = True
            with contextlib.suppress(zmq.ZMQError):  # a full pipe: a wake is queued there
                self._pub.send(WAKE, zmq.NOBLOCK)

    def close(self) -> None:
        """Close the PUB (idempotent); later rings are ignored."""
        with self._lock:
            if self._pub is not None:
                self._pub.close(linger=0)
                self._pub = None
