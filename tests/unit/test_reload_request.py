"""A reload request (read-your-writes after a write through an HMS endpoint).

The server's side: the request's outcome (passed on, or with ``answer_when_loaded``
answered later, to whom), :class:`AwaitedReloads` (answers queued from the loading
thread, bounded, errors), the table loader's promise (the version answered is that of a
load that started *after* the request, so it read HMS after the write), and the
subscriber's book of awaited answers.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pytest
from support.memory_world import world

import idl
from catalogd.core.catalog import Catalog
from catalogd.loading.table_loader import TableLoader
from catalogd.server import requests
from catalogd.server.reloads import AwaitedReloads
from subscriber import requests as asks
from subscriber.protocol.errors import NotFoundError

pytestmark = pytest.mark.timeout(30)

svc = idl.catalog_service
STATE = requests.ServerState(
    service_id="svc-1",
    pub_endpoint="tcp://catalogd.example:26501",
    heartbeat_interval_s=0.25,
    snapshot_chunk=3,
    max_catch_up_entries=1000,
)


def _answer(db: str, table: str, *, reload: bool) -> requests.Outcome:
    load = svc.TLoadTableRequest(db_name=db, tbl_name=table, reload=reload)
    return requests.answer(
        b"peer", svc.TRequest(request_id=1, load_table=load), Catalog(), STATE, 0
    )


def test_reload_of_a_table_the_catalog_does_not_know_yet_is_passed_on() -> None:
    out = _answer("Sales", "New_Table", reload=True)
    assert out.reload_request == ("sales", "new_table")
    assert out.load_request is None
    assert out.response is not None and out.response.status.code == svc.TStatusCode.OK


def test_reload_of_a_database_names_no_table() -> None:
    assert _answer("sales", "", reload=True).reload_request == ("sales", "")


def test_a_plain_load_of_an_unknown_table_is_still_refused() -> None:
    out = _answer("sales", "new_table", reload=False)
    assert out.reload_request is None and out.load_request is None


def _outcome(answer: bool, rid: int = 7) -> requests.Outcome:
    load = svc.TLoadTableRequest(db_name="S", tbl_name="T", reload=True, answer_when_loaded=answer)
    return requests.answer(
        b"peer", svc.TRequest(request_id=rid, load_table=load), Catalog(), STATE, 0
    )


# -- the server's side -------------------------------------------------------------------------


def test_a_reload_asked_to_answer_when_loaded_is_answered_later() -> None:
    later = _outcome(answer=True)
    assert later.response is None and later.reply_to == (b"peer", 7)
    assert later.reload_request == ("s", "t")
    now = _outcome(answer=False)
    assert now.response is not None and now.reply_to is None


def test_awaited_reloads_answer_with_the_version_once_the_future_resolves() -> None:
    rings: list[int] = []
    awaited = AwaitedReloads(lambda: rings.append(1))
    future: Future[int] = Future()
    assert awaited.start(_outcome(True), lambda db, t: future, version=5) == []
    assert awaited.awaited == 1 and awaited.ready() == []
    threading.Thread(target=future.set_result, args=(42,)).start()  # the loading thread
    while not rings:
        pass
    [(peer, response)] = awaited.ready()
    assert peer == b"peer" and response.request_id == 7
    assert response.status.code == svc.TStatusCode.OK and response.loaded_version == 42
    assert awaited.awaited == 0


def test_a_failed_reload_is_answered_with_its_error() -> None:
    awaited = AwaitedReloads(lambda: None)
    future: Future[int] = Future()
    awaited.start(_outcome(True), lambda db, t: future, version=5)
    future.set_exception(RuntimeError("HMS down"))
    [(_, response)] = awaited.ready()
    assert response.status.code == svc.TStatusCode.ERROR
    assert "HMS down" in response.status.message and response.loaded_version is None
    assert asks.loaded_version(response) is None


def test_without_a_loader_the_answer_is_the_current_version_at_once() -> None:
    awaited = AwaitedReloads(lambda: None)
    [(peer, response)] = awaited.start(_outcome(True), None, version=5)
    assert peer == b"peer" and response.loaded_version == 5 and awaited.awaited == 0
    assert awaited.start(_outcome(False), None, version=5) == []  # one-way: nothing


def test_awaited_answers_are_bounded_and_beyond_the_bound_answered_busy() -> None:
    awaited = AwaitedReloads(lambda: None, limit=2)
    started: list[tuple[str, str]] = []

    def reload(db: str, table: str) -> Future[int]:
        started.append((db, table))
        return Future()

    assert awaited.start(_outcome(True, 1), reload, 5) == []
    assert awaited.start(_outcome(True, 2), reload, 5) == []
    [(_, busy)] = awaited.start(_outcome(True, 3), reload, 5)
    assert busy.status.code == svc.TStatusCode.BUSY and busy.request_id == 3
    assert len(started) == 2 and awaited.refused == 1  # the refused one never loads
    assert awaited.start(_outcome(False, 4), reload, 5) == []  # one-way ones still run
    assert len(started) == 3


# -- the loader's promise ----------------------------------------------------------------------


class GatedSource:
    """Wraps the in-memory metastore: reading ``db.a`` blocks on ``gate`` and counts
    the reads (a slow HMS read under way when the next write lands)."""

    def __init__(self, source: Any) -> None:
        self._source = source
        self.gate = threading.Event()
        self.reading = threading.Event()
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._source, name)

    def get_tables(self, db: str, names: Any) -> Any:
        if list(names) == ["a"]:
            self.reads += 1
            self.reading.set()
            assert self.gate.wait(20)
        return self._source.get_tables(db, names)


def test_a_reload_asked_while_that_table_loads_is_answered_by_the_next_load() -> None:
    gated: GatedSource | None = None

    def wrap(source: Any) -> GatedSource:
        nonlocal gated
        gated = GatedSource(source)
        return gated

    source, _, ops = world(wrap)
    assert gated is not None
    loader = TableLoader(ops, pool_size=2).start()
    try:
        first = loader.request_reload("db", "a")
        assert gated.reading.wait(10)  # the first load is reading HMS now
        source.tables[("db", "a")].parameters = {"transient_lastDdlTime": "2"}  # a write
        second = loader.request_reload("db", "a")
        assert second is not first
        gated.gate.set()
        v1, v2 = first.result(10), second.result(10)
        assert v2 >= v1 and gated.reads == 2  # a second read of HMS, after the write
    finally:
        loader.close()


def test_a_reload_of_a_table_gone_from_hms_answers_the_version_of_its_removal() -> None:
    source, _, ops = world()
    loader = TableLoader(ops, pool_size=1).start()
    try:
        assert loader.request_reload("db", "a").result(10) > 0
        del source.tables[("db", "a")]
        version = loader.request_reload("db", "a").result(10)
        assert version == ops.version() and not ops.has_table("db", "a")
        with pytest.raises(NotFoundError):
            loader.request("db", "zzz", urgent=True).result(10)  # a plain load still refuses
    finally:
        loader.close()


# -- the subscriber's book ---------------------------------------------------------------------


def test_asked_requests_hear_their_answer_or_none() -> None:
    heard: dict[int, Any] = {}

    def hear(rid: int) -> asks.Answered:
        return lambda response: heard.__setitem__(rid, response)

    book = asks.Asked(limit=2)
    book.add(1, hear(1))
    book.add(2, hear(2))
    assert book.answer(1, "one") and heard == {1: "one"}
    assert not book.answer(1, "again") and not book.answer(None, "x")
    book.add(3, hear(3))
    book.add(4, hear(4))  # over the limit: 2 hears None
    assert heard[2] is None and len(book) == 2
    book.forget(3)
    assert heard[3] is None and len(book) == 1
    book.forget()
    assert heard[4] is None and len(book) == 0


def test_a_reload_request_carries_whether_it_wants_an_answer() -> None:
    request, answered = asks.reload("db", None, None)
    assert request.load_table.tbl_name == "" and not request.load_table.answer_when_loaded
    assert answered is None
    got: list[int | None] = []
    request, answered = asks.reload("db", "t", got.append)
    assert request.load_table.answer_when_loaded and answered is not None
    answered(svc.TResponse(status=svc.TStatus(code=svc.TStatusCode.OK), loaded_version=9))
    answered(None)
    answered(svc.TResponse(status=svc.TStatus(code=svc.TStatusCode.OK)))  # an old catalogd
    assert got == [9, None, None]


class RolesSource:
    """Wraps the in-memory metastore with roles (it has none of its own)."""

    def __init__(self, source: Any) -> None:
        self._source = source
        self.roles: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._source, name)

    def get_role_names(self) -> list[str]:
        return list(self.roles)


def test_a_reload_of_no_database_and_no_table_reloads_the_grants() -> None:
    """After a grant or role write through an HMS endpoint: ``("", "")``."""
    wrapped: list[RolesSource] = []

    def wrap(source: Any) -> RolesSource:
        wrapped.append(RolesSource(source))
        return wrapped[0]

    _, server, ops = world(wrap)
    loader = TableLoader(ops, pool_size=1).start()
    try:
        wrapped[0].roles.append("Analysts")  # a role created in HMS
        version = loader.request_reload("", "").result(10)
        keys = server.submit(lambda c: c.keys_with_prefix("PRINCIPAL:")).result(10)
        assert keys == ["PRINCIPAL:analysts.ROLE"] and version == ops.version() > 0
    finally:
        loader.close()
