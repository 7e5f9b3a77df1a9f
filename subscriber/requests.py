"""Requests a subscriber sends catalogd, and their answers.

* :func:`hello`, :func:`snapshot`, :func:`catch_up`, :func:`report` (and
  :func:`report_frame`, the same packed without thriftpy2): the sync protocol's
  (:mod:`subscriber.transport` sends them when :mod:`subscriber.sync` asks).
* :func:`load`: a priority load of a table not loaded yet (one-way; the
  subscriber watches its cache for the table).
* :func:`reload`: reload an object after a write made elsewhere (an HMS endpoint's
  write); asked ``answer_when_loaded``, catalogd answers once the reload is
  published, and :func:`loaded_version` reads that answer.
* :class:`Asked`: the transport thread's book of requests awaiting an answer,
  by request id, bounded (pure: no sockets).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import idl

__all__ = [
    "MAX_ASKED",
    "Answered",
    "Asked",
    "Loaded",
    "catch_up",
    "hello",
    "load",
    "loaded_version",
    "reload",
    "report",
    "report_frame",
    "snapshot",
]

svc = idl.catalog_service

MAX_ASKED = 4096
"""Requests awaiting an answer at most; beyond it the oldest is told None."""

Answered = Callable[[Any], None]
"""Called with catalogd's TResponse to a request, or None when none will come."""
Loaded = Callable[[int | None], None] | None
"""Told the version that shows a reload (None: none will come); None: not asked."""


def hello(rid: int, client_id: str, databases: Sequence[str] | None) -> Any:
    """The first request of a session (answered with a welcome)."""
    return svc.TRequest(
        request_id=rid,
        hello=svc.THello(
            client_id=client_id,
            databases=list(databases) if databases else None,
            protocol_version=svc.PROTOCOL_VERSION,
        ),
    )


def snapshot(rid: int, databases: list[str] | None, *, empty: bool) -> Any:
    """The whole catalog (or ``databases``'); ``empty``: an on-demand subscriber's, which
    holds the version and the small global objects only."""
    return svc.TRequest(
        request_id=rid, snapshot=svc.TSnapshotRequest(databases=databases, empty=empty or None)
    )


def catch_up(
    rid: int, from_version: int, databases: list[str] | None, *, invalidations: bool
) -> Any:
    """Every change after ``from_version`` (as invalidations, for an on-demand subscriber)."""
    return svc.TRequest(
        request_id=rid,
        catch_up=svc.TCatchUpRequest(
            from_version=from_version, databases=databases, invalidations=invalidations or None
        ),
    )


def report(client_id: str, service_id: str, version: int) -> Any:
    """Which version this subscriber has applied, for catalogd's ``--sync`` barriers
    (one-way); ``version`` -1 is a goodbye."""
    return svc.TRequest(
        report=svc.TSubscriberReport(client_id, service_id=service_id, applied_version=version)
    )


def report_frame(client_id: str, service_id: str, version: int) -> bytes:
    """:func:`report` framed as ``codec.pack`` frames it (uncompressed), byte for byte,
    without thriftpy2: every subscriber sends one with each heartbeat. The part
    before the version is the same for every report of one session: built once."""
    return _report_head(client_id, service_id) + _VERSION.pack(version) + b"\x00\x00"


_VERSION = struct.Struct(">q")


@lru_cache(maxsize=4)
def _report_head(client_id: str, service_id: str) -> bytes:
    """``TRequest`` field 6 (``TSubscriberReport``): fields 1 and 2, field 3's header."""
    client, service = client_id.encode(), service_id.encode()
    return b"".join(
        (
            b"\x00\x0c\x00\x06",  # the frame's flag (raw), field 6 (struct)
            b"\x0b\x00\x01" + len(client).to_bytes(4, "big") + client,
            b"\x0b\x00\x02" + len(service).to_bytes(4, "big") + service,
            b"\x0a\x00\x03",
        )
    )


def load(db: str, table: str) -> Any:
    """A priority load of ``db.table`` (answered NOTFOUND when catalogd has no such table)."""
    return svc.TRequest(load_table=svc.TLoadTableRequest(db_name=db, tbl_name=table))


def reload(db: str, table: str | None, on_loaded: Loaded = None) -> tuple[Any, Answered | None]:
    """Reload ``db.table`` even if loaded (``table`` None: the database's names and
    functions): the request and what its answer goes to. ``on_loaded``: called
    with the version that shows the reload once published (None: none will come)."""
    request = svc.TRequest(
        load_table=svc.TLoadTableRequest(
            db_name=db, tbl_name=table or "", reload=True, answer_when_loaded=on_loaded is not None
        )
    )
    if on_loaded is None:
        return request, None
    return request, lambda response: on_loaded(loaded_version(response))


def loaded_version(response: Any) -> int | None:
    """The version an answered reload is shown at (None: no answer, or it failed)."""
    if response is None or response.status.code != svc.TStatusCode.OK:
        return None
    version = response.loaded_version
    return version if isinstance(version, int) else None


class Asked:
    """Requests awaiting an answer, oldest first, at most ``limit``."""

    def __init__(self, limit: int = MAX_ASKED) -> None:
        self._limit = limit
        self._waiting: dict[int, Answered] = {}

    def __len__(self) -> int:
        return len(self._waiting)

    def add(self, rid: int, on_answer: Answered) -> None:
        """Await the answer to request ``rid``; past the limit the oldest hears None."""
        self._waiting[rid] = on_answer
        while len(self._waiting) > self._limit:
            self._waiting.pop(next(iter(self._waiting)))(None)

    def answer(self, rid: int | None, response: Any) -> bool:
        """Deliver ``response`` if request ``rid`` awaits one; False when none does."""
        on_answer = self._waiting.pop(rid, None) if rid is not None else None
        if on_answer is None:
            return False
        on_answer(response)
        return True

    def forget(self, rid: int | None = None) -> None:
        """No answer can come to ``rid`` (None: to any): each caller hears None."""
        if rid is not None:
            on_answer = self._waiting.pop(rid, None)
            if on_answer is not None:
                on_answer(None)
            return
        waiting, self._waiting = self._waiting, {}
        for on_answer in waiting.values():
            on_answer(None)
