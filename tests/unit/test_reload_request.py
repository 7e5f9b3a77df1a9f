"""A reload request (read-your-writes after a write through an HMS endpoint), server side."""

from __future__ import annotations

import pytest

import idl
from catalogd.core.catalog import Catalog
from catalogd.server import requests

pytestmark = pytest.mark.timeout(10)

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
