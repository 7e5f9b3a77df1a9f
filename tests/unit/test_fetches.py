"""On-demand fetches on catalogd's ROUTER (catalogd/server/fetches.py): answers and bounds."""

from __future__ import annotations

import pytest

import idl
from catalogd.core.catalog import Catalog
from catalogd.server import fetches, requests
from subscriber.protocol.delta import INVALIDATED
from subscriber.protocol.errors import ProtocolError

svc = idl.catalog_service


@pytest.fixture
def catalog() -> Catalog:
    c = Catalog()
    changes: dict[str, bytes | None] = {"DATABASE:a": b"a", "DATABASE:b": b"b", "TABLE:a.t": b"t"}
    changes.update({f"HDFS_PARTITION:a.t:p={i}": b"p%d" % i for i in range(25)})
    c.commit(changes)
    return c


def test_entries_by_key_and_an_absent_key_as_a_tombstone_at_the_current_version(
    catalog: Catalog,
) -> None:
    got = fetches.fetch(catalog, "svc", svc.TFetchRequest(keys=["TABLE:a.t", "TABLE:a.nosuch"]))
    assert got.version == catalog.version and got.service_id == "svc"
    table, absent = got.entries
    assert table.object == b"t" and not table.removed
    assert absent.removed and absent.version == catalog.version


def test_listings_page_through_a_group_with_its_total(catalog: Catalog) -> None:
    seen: list[str] = []
    offset = 0
    while True:
        page = fetches.fetch(
            catalog, "svc", svc.TFetchRequest(list_db="a", list_table="t", offset=offset, limit=10)
        )
        assert page.total == 25 and all(e.object == INVALIDATED for e in page.entries)
        seen += [e.key for e in page.entries]
        offset += len(page.entries)
        if offset >= page.total:
            break
    assert sorted(seen) == sorted(f"HDFS_PARTITION:a.t:p={i}" for i in range(25))
    heads = fetches.fetch(catalog, "svc", svc.TFetchRequest(list_db="a"))
    assert {e.key for e in heads.entries} == {"DATABASE:a", "TABLE:a.t"}
    dbs = fetches.fetch(catalog, "svc", svc.TFetchRequest(list_db=fetches.DATABASES))
    assert {e.key for e in dbs.entries} == {"DATABASE:a", "DATABASE:b"}


@pytest.mark.parametrize(
    "request_",
    [
        svc.TFetchRequest(keys=["k"] * (fetches.MAX_KEYS + 1)),
        svc.TFetchRequest(list_db="a", offset=-1),
        svc.TFetchRequest(list_db="a", limit=-5),
        svc.TFetchRequest(),
    ],
    ids=["too many keys", "negative offset", "negative limit", "nothing asked"],
)
def test_malformed_or_oversized_fetches_are_refused(catalog: Catalog, request_: object) -> None:
    with pytest.raises(ProtocolError):
        fetches.fetch(catalog, "svc", request_)


def test_a_page_never_exceeds_the_bound_and_a_refused_fetch_is_an_error_answer(
    catalog: Catalog,
) -> None:
    page = fetches.fetch(
        catalog, "svc", svc.TFetchRequest(list_db="a", list_table="t", limit=10**9)
    )
    assert len(page.entries) <= fetches.MAX_PAGE
    state = requests.ServerState("svc", "tcp://h:1", 1.0, 10, 10)
    bad = svc.TRequest(request_id=3, fetch=svc.TFetchRequest())
    with pytest.raises(ProtocolError):
        requests.answer(b"peer", bad, catalog, state, 0)
