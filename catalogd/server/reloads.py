"""Reloads a subscriber asked to be answered about once they are published.

After a write through an HMS endpoint the subscriber asks catalogd to reload what
the write touched (``TLoadTableRequest.reload``); with ``answer_when_loaded`` it
wants to know the version whose state shows the reload, so its endpoint can serve
those objects from its cache again exactly when the cache shows the write.

:class:`AwaitedReloads` belongs to the server thread: :meth:`start` is called on it
for each reload request and returns what to send at once; the reload's Future
resolves on a loading thread, which queues the answer and rings the server's
doorbell; the server thread then sends what :meth:`ready` returns. At most
``limit`` answers are awaited at once; a request beyond that is answered BUSY
(the subscriber then treats the reload as unconfirmed).
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import idl
from catalogd.server import requests

__all__ = ["MAX_AWAITED", "AwaitedReloads"]

svc = idl.catalog_service

MAX_AWAITED = 4096
"""Reloads whose answer is still to come, at most."""

Reload = Callable[[str, str], "Future[int] | None"]
"""Starts the reload of ``(db, table)``: a Future of the version that shows it, or None."""


class AwaitedReloads:
    """See the module docstring. ``ring``: wakes the server thread (thread-safe)."""

    def __init__(self, ring: Callable[[], None], limit: int = MAX_AWAITED) -> None:
        self._ring = ring
        self._limit = limit
        self._done: queue.SimpleQueue[tuple[bytes, Any]] = queue.SimpleQueue()
        self.awaited = 0
        """Answers still to come (server thread only)."""
        self.refused = 0
        """Requests answered BUSY because ``limit`` answers were awaited."""

    def start(
        self, outcome: requests.Outcome, reload: Reload | None, version: int
    ) -> list[tuple[bytes, Any]]:
        """Start the reload ``outcome`` asks for (server thread); returns the
        ``(peer, TResponse)`` to send now. ``version``: the catalog's current one,
        the answer when there is no reload to wait for."""
        assert outcome.reload_request is not None
        reply_to = outcome.reply_to
        if reply_to is not None and self.awaited >= self._limit:
            self.refused += 1
            busy = requests.status(svc.TStatusCode.BUSY, "too many reloads awaited", reply_to[1])
            return [(reply_to[0], busy)]
        future = reload(*outcome.reload_request) if reload is not None else None
        if reply_to is None:
            return []
        peer, rid = reply_to
        if future is None:
            return [(peer, requests.loaded(rid, version, None))]
        self.awaited += 1

        def answer(done: Future[int]) -> None:  # on the thread that resolved it
            error = done.exception()
            result = None if error is not None else done.result()
            self._done.put((peer, requests.loaded(rid, result, error)))
            self._ring()

        future.add_done_callback(answer)
        return []

    def ready(self) -> list[tuple[bytes, Any]]:
        """The answers whose reloads finished since the last call (server thread)."""
        out: list[tuple[bytes, Any]] = []
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                break
        self.awaited -= len(out)
        return out
