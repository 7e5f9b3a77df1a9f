"""A doorbell: wakes a thread blocked in ``zmq.Poller.poll`` from any other thread.

The thread that owns a socket polls it together with :meth:`Doorbell.fileno`;
other threads queue work and call :meth:`ring`. A ring is one byte on an
``os.pipe`` whose write end never blocks: when the pipe is full a wake-up is
already pending, so the byte is dropped. The owner calls :meth:`drain` when
the poller reports the doorbell readable, then looks at its queues.

Thread-safety: :meth:`ring` from any thread; :meth:`drain` and :meth:`close`
from the owning thread (``close`` is idempotent).
"""

from __future__ import annotations

import contextlib
import os


class Doorbell:
    """One pipe: any thread rings, the owning thread drains."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        os.set_blocking(self._read, False)

    def fileno(self) -> int:
        """The file descriptor to register with a poller (``zmq.POLLIN``)."""
        return self._read

    def ring(self) -> None:
        """Wake the owner; never blocks (a full pipe means a ring is pending)."""
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._write, b"\0")

    def drain(self) -> None:
        """Consume every pending ring."""
        try:
            while os.read(self._read, 4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        """Close both ends; later rings are ignored."""
        for fd in (self._read, self._write):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._read = self._write = -1
