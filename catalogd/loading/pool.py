"""The load workers' processes: where they come from, and how they stop.

* **Forked from the daemon** (:func:`can_fork`): when the workers are started
  first thing, from the daemon's main thread, with no other thread running, they
  are forked from the daemon itself and share what it imported (ready in ~30 ms).
* **From the fork server** otherwise, and for every pool made later (after a
  worker died, when the daemon runs threads and sockets): multiprocessing's fork
  server, a clean process started once per daemon, imports :data:`PRELOAD` and
  then forks each worker: ~0.7 s of CPU before the first task, measured (spawning
  instead imported all of it in every worker, ~0.85 s each). The fork server dies
  with the daemon (it watches a pipe from it). It is told the daemon's main script
  (:func:`preload_entry`) so that no worker runs that script again
  (:mod:`catalogd.loading.forkserver_main`).
* **Stopping**: :meth:`WorkerPool.stop` shuts the executor down and kills the
  workers still running after a timeout. The pool keeps the worker processes it
  made (:class:`_KeepingContext`) for that; it reads no private attribute of
  ``concurrent.futures`` or ``multiprocessing``.

What the workers run is :mod:`catalogd.loading.tasks`; the order they get it in,
:mod:`catalogd.loading.dispatch`.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import Any, cast

log = logging.getLogger(__name__)

__all__ = ["PRELOAD", "WorkerPool", "can_fork", "main_script_of", "preload_entry"]

# Imported once by the fork server, before it forks workers: what a worker runs
# (modules that are not installed are skipped).
PRELOAD = [
    "catalogd.loading.forkserver_main",  # first: no worker runs the main script (see there)
    "catalogd.loading.tasks",
    "catalogd.sources.sql",
    "sqlalchemy.dialects.postgresql.psycopg",
    "sqlalchemy.dialects.mysql.pymysql",
    "psycopg",
    "pymysql",
]

# Threads that may run while workers are forked: pyzmq's garbage collector for
# zero-copy sends only waits on its own ZeroMQ socket, which no worker touches.
_HARMLESS_THREADS = ("GarbageCollectorThread",)

# The preload entry naming the main script: a module name no finder but
# forkserver_main's knows (the fork server skips what fails to import).
_MAIN_SCRIPT = "_catalogd_main_script_"


def can_fork() -> bool:
    """Whether workers may be forked from this process now: on Linux, from the main
    thread (a worker dies with the thread that forked it, ``die_with_parent``) of a
    process that runs no other Python thread but :data:`_HARMLESS_THREADS` (a lock
    another thread held would stay held in the child). Threads of C libraries
    (ZeroMQ's I/O threads) are not seen; a worker never calls into them, and ends
    with ``os._exit``."""
    main = threading.main_thread()
    return (
        sys.platform == "linux"
        and threading.current_thread() is main
        and all(t is main or type(t).__name__ in _HARMLESS_THREADS for t in threading.enumerate())
    )


def preload_entry(script: str) -> str:
    """The fork server's preload entry that names the daemon's main ``script`` (a path);
    :func:`main_script_of` reads it back."""
    return _MAIN_SCRIPT + script.encode("utf-8", "surrogateescape").hex()


def main_script_of(entry: str) -> str | None:
    """The script path a :func:`preload_entry` names; None for any other module name."""
    if not entry.startswith(_MAIN_SCRIPT):
        return None
    try:
        return bytes.fromhex(entry[len(_MAIN_SCRIPT) :]).decode("utf-8", "surrogateescape")
    except ValueError:
        return None


def _main_script() -> str | None:
    """The path multiprocessing gives every process it starts as the script to run
    first: ``__main__``'s file when it was run as a script (``python -m`` runs
    ``__main__`` by module name instead: not ours to change), absolute and normalized
    as multiprocessing makes it. A script's ``__file__`` is absolute; a relative one
    (``<stdin>`` for ``python -``) is joined with the current directory, where
    multiprocessing takes the one it was imported in: the same unless the process
    changed directory (catalogd never does)."""
    main = sys.modules["__main__"]
    path = getattr(main, "__file__", None)
    if getattr(main, "__spec__", None) is not None or not isinstance(path, str):
        return None
    return os.path.normpath(os.path.abspath(path))


def _context(fork: bool) -> BaseContext:
    if fork:
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver")
    script = _main_script()
    # Taken when the fork server starts (once per process).
    context.set_forkserver_preload(PRELOAD + ([preload_entry(script)] if script else []))
    return context


class _KeepingContext:
    """A multiprocessing context that keeps the worker processes made through it (the
    executor makes them with ``Process``); everything else is the wrapped context's."""

    def __init__(self, context: BaseContext) -> None:
        self._context = context
        self._lock = threading.Lock()
        self._processes: list[BaseProcess] = []

    def Process(self, *args: Any, **kwargs: Any) -> BaseProcess:  # noqa: N802 - the context API
        process: BaseProcess = self._context.Process(*args, **kwargs)  # type: ignore[attr-defined]
        with self._lock:
            self._processes.append(process)
        return process

    def processes(self) -> list[BaseProcess]:
        with self._lock:
            return list(self._processes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class WorkerPool:
    """``processes`` worker processes behind a ``ProcessPoolExecutor``, each started with
    ``initializer(*initargs)``: forked from this process (``fork``) or from the fork
    server. Thread-safe (as the executor)."""

    def __init__(
        self,
        processes: int,
        *,
        fork: bool,
        initializer: Callable[..., None],
        initargs: tuple[Any, ...],
    ) -> None:
        self._context = _KeepingContext(_context(fork))
        self.executor = ProcessPoolExecutor(
            processes,
            mp_context=cast(BaseContext, self._context),  # duck-typed: see _KeepingContext
            initializer=initializer,
            initargs=initargs,
        )

    def processes(self) -> list[BaseProcess]:
        """The worker processes started so far (some may have ended)."""
        return self._context.processes()

    def abandon(self) -> None:
        """Shut the executor down without waiting (a worker died: the pool is broken);
        its tasks not started yet are cancelled."""
        self.executor.shutdown(wait=False, cancel_futures=True)

    def stop(self, timeout: float) -> None:
        """Stop the workers: tasks not started are cancelled, running ones get
        ``timeout`` seconds to finish, then the workers still alive are killed. Blocks
        up to ``timeout`` + 1 s."""
        # The executor joins its workers itself: let it, in a thread we can stop waiting for.
        stopping = threading.Thread(
            target=self.executor.shutdown,
            kwargs={"wait": True, "cancel_futures": True},
            name="catalogd-load-workers-stop",
            daemon=True,
        )
        stopping.start()
        stopping.join(timeout)
        if stopping.is_alive():
            for process in self.processes():
                if process.exitcode is None:
                    log.warning(
                        "load worker %s did not stop in %.0f s: killing it", process.pid, timeout
                    )
                    process.kill()
            stopping.join(1.0)
