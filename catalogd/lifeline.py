"""A child process lives no longer than its parent: the Linux parent-death signal.

:func:`die_with_parent` runs in a freshly forked child: before ``exec`` (a Popen
``preexec_fn``, the embedded HMS's JVM) or first thing in a worker (the load
workers). It asks Linux for SIGTERM when the parent goes (``prctl(PR_SET_PDEATHSIG)``,
which survives ``exec``), so a ``kill -9`` of catalogd still stops its children.
Linux delivers the signal when the *thread* that forked the child exits, so only a
thread that lives as long as the child should start it (catalogd's main thread, or
a supervisor's). Elsewhere than Linux nothing is set.

A leaf: imports only the standard library, so any package may use it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a forked child: ask for SIGTERM when the parent (thread) dies; exit if it is gone.

    Async-signal-safe enough for a ``preexec_fn``: one libc call, no allocation
    beyond ctypes' own, no locks.
    """
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if parent == 1:  # the parent died before prctl took effect
        os._exit(1)
