"""One catalogd per data directory: an ``fcntl.flock`` on ``DATA_DIR/catalogd.lock``.

``catalogd serve`` (and ``catalogd dump`` on the embedded HMS) take the lock first
thing, before any HMS, thread or socket starts, so a second daemon on the same
directory is refused in milliseconds, naming the pid that holds it, instead of
failing half a minute later inside Derby. The kernel drops the lock when the
holder's process dies (even by SIGKILL): no stale lock to clean up. The pid in the
file is only for the message; the lock is the truth.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from subscriber.protocol.errors import ConflictError

LOCK_NAME = "catalogd.lock"


class DataDirLock:
    """A held lock on one data directory; :meth:`release` (or process exit) frees it."""

    def __init__(self, data_dir: Path) -> None:
        """Take the lock, creating ``data_dir`` if needed.

        Raises:
            ConflictError: another process holds it (the message names its pid).
        """
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / LOCK_NAME
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise ConflictError(
                f"data directory {data_dir} is in use by another catalogd (pid {holder}): "
                "stop that one, or give this one another --data-dir"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        """Free the lock (the file stays). Idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> DataDirLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
