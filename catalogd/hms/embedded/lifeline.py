"""The embedded HMS lives no longer than its catalogd: a parent-death signal, and stale ones found.

* :func:`catalogd.lifeline.die_with_parent` runs in the forked child before
  ``exec`` (a Popen ``preexec_fn``): Linux ``prctl(PR_SET_PDEATHSIG, SIGTERM)``,
  which survives ``exec``, so a ``kill -9`` of catalogd still stops the JVM
  (cleanly: SIGTERM runs its shutdown hooks, which close Derby). Linux delivers
  the signal when the *thread* that forked the child exits, so only a thread that
  lives as long as the HMS should start it (catalogd's main thread, or the
  supervisor's).
* :func:`find_stale` lists HMS JVMs of one data directory whose parent is gone
  (re-parented to init or a sub-reaper): left by a catalogd killed before the
  parent-death signal existed, or by a process that did not ask for it.
  :func:`stop_stale` stops them (SIGTERM, then SIGKILL), so the next start is not
  refused by Derby ("another instance has booted the database").

Reads ``/proc``; elsewhere (no ``/proc``) nothing is found and nothing is set.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

__all__ = ["Holder", "find_stale", "holders", "stop_stale"]

_PROC = Path("/proc")
# Parents that mean "someone still owns this HMS" (catalogd, a test, a developer's shell tool).
_OWNERS = ("python", "catalogd", "pytest")


class Holder:
    """A JVM running an HMS over one data directory: its pid and whether it is orphaned."""

    def __init__(self, pid: int, ppid: int, parent_command: str) -> None:
        self.pid, self.ppid, self.parent_command = pid, ppid, parent_command

    @property
    def orphaned(self) -> bool:
        """Its catalogd is gone: re-parented to init or to a sub-reaper that is not an owner."""
        return self.ppid <= 1 or not any(o in self.parent_command for o in _OWNERS)

    def __repr__(self) -> str:
        return f"Holder(pid={self.pid}, ppid={self.ppid}, parent={self.parent_command[:40]!r})"


def holders(data_dir: Path, marker: str) -> list[Holder]:
    """JVMs whose command line contains ``marker`` (the HMS main class) and runs over
    ``data_dir`` (its Derby log file in ``data_dir/logs``)."""
    found: list[Holder] = []
    # The command line names this exact file (jvm.hms_command): no prefix matches.
    needle = f"-Dderby.stream.error.file={data_dir / 'logs' / 'derby.log'}".encode()
    if not _PROC.is_dir():
        return found
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            if marker.encode() not in command or needle not in command:
                continue
            ppid = _ppid(entry)
            parent = (_PROC / str(ppid) / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue  # gone meanwhile, or not ours to read
        found.append(Holder(int(entry.name), ppid, parent.decode(errors="replace")))
    return found


def find_stale(data_dir: Path, marker: str) -> list[Holder]:
    """The orphaned HMS JVMs of ``data_dir`` (see :class:`Holder.orphaned`)."""
    return [h for h in holders(data_dir, marker) if h.orphaned]


def stop_stale(data_dir: Path, marker: str, timeout_s: float = 30.0) -> list[int]:
    """Stop every orphaned HMS JVM of ``data_dir``: SIGTERM, then SIGKILL after
    ``timeout_s``. Blocks until they are gone; returns their pids."""
    stale = [h.pid for h in find_stale(data_dir, marker)]
    for pid in stale:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for pid in stale:
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # waiting for another process's exit: nothing to poll
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    return stale


def _ppid(proc_dir: Path) -> int:
    # The comm field may hold spaces and parentheses: split after the last ')'.
    stat = (proc_dir / "stat").read_text()
    return int(stat.rpartition(")")[2].split()[1])


def _alive(pid: int) -> bool:
    try:
        state = (_PROC / str(pid) / "stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has exited; its reaper is not us
