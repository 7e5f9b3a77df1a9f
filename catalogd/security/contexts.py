"""Ending a ZeroMQ context that served CURVE with ZAP, within a bound.

``zmq_ctx_term`` returns once libzmq has reaped every socket of the context. With
CURVE servers and a ZAP handler on the context, libzmq 4.3.5 (pyzmq 27's) sometimes
never reaps one, although every socket was closed with linger 0 and no TCP
connection is left: the reaper and I/O threads sit idle, ``zmq_ctx_term`` waits
forever (libzmq issue 2733, "test_security_curve/zap hang on slow machines", open;
reproduced here about once in a few hundred CURVE sync rounds on a loaded machine,
more often when peers fail their handshakes, and with either order of stopping the
ZAP handler and closing the server's sockets).

:func:`end` therefore terminates in a helper thread and waits at most
``timeout_s``: a context that does not end is left to the process's exit (its two
libzmq threads stay idle) and a warning says so. Callers stop the ZAP handler and
close their own sockets first; anything left open is closed with linger 0.
"""

from __future__ import annotations

import logging
import threading

import zmq

log = logging.getLogger(__name__)

abandoned = 0
"""Contexts :func:`end` gave up on in this process (tests and status read it)."""


def end(context: zmq.Context, timeout_s: float = 5.0) -> bool:
    """Close what is left of ``context`` (linger 0) and terminate it, waiting at most
    ``timeout_s``. Returns True when it ended, False when libzmq did not finish in time
    (then the helper thread ``zmq-context-end`` keeps waiting; it is a daemon thread).
    Idempotent: an ended context returns True at once."""
    global abandoned
    if context.closed:
        return True
    done = threading.Event()

    def terminate() -> None:
        try:
            context.destroy(linger=0)
        finally:
            done.set()

    threading.Thread(target=terminate, name="zmq-context-end", daemon=True).start()
    if done.wait(timeout_s):
        return True
    abandoned += 1
    log.warning(
        "the ZeroMQ context did not end within %gs (a libzmq reaping bug with CURVE and "
        "ZAP, libzmq issue 2733); leaving it to the process's exit",
        timeout_s,
    )
    return False
