"""The web status page over a catalog built in memory: each page's view function, the
escaping of hostile text, paging, access (tokens, roles, 401/403), the exposure rule
and the census. The HTTP tests run the real uvicorn server on a free loopback port."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.web_catalog import EVIL, FakeSources, build

from catalogd.config import ConfigError
from catalogd.core.catalog import Catalog
from catalogd.security.policy import web_exposure
from catalogd.web import pages, reads, views
from catalogd.web.access import Access, load_tokens
from catalogd.web.app import make_app
from catalogd.web.census import Census, Counted
from catalogd.web.server import WebServer

pytestmark = pytest.mark.timeout(60)

READ_TOKEN, ADMIN_TOKEN = "r" * 24, "a" * 24


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build(partitions=250, small_tables=30)


def read_of(catalog: Catalog) -> Any:
    return lambda fn: fn(catalog)


@pytest.fixture
def serve(catalog: Catalog) -> Iterator[Any]:
    servers: list[WebServer] = []

    def start(access: Access | None = None, **kwargs: Any) -> str:
        access = access or Access(None, loopback=True)
        server = WebServer(make_app(FakeSources(catalog, **kwargs), access), "127.0.0.1:0")
        servers.append(server.start())
        return server.url

    yield start
    for server in servers:
        server.close()


def get(url: str, token: str | None = None, data: bytes | None = None, **headers: str):
    request = urllib.request.Request(url, data=data, headers=headers)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


# -- view functions


def test_catalog_view_lists_databases_with_table_counts(catalog: Catalog) -> None:
    context = views.catalog_view(read_of(catalog))
    assert [(d["name"], d["tables"]) for d in context["databases"]] == [("sales", 32)]
    assert context["databases"][0]["comment"] == EVIL  # escaped by the template, not here


def test_database_view_pages_and_searches(catalog: Catalog) -> None:
    first = views.database_view(read_of(catalog), "SALES", 0, 10)
    assert first is not None and first["page"]["total"] == 32 and first["page"]["next"] == 10
    names = [t["name"] for t in first["tables"]]
    assert names == sorted(names) and names[0] == "orders"
    assert first["tables"][0]["partitions"] == 250 and first["tables"][0]["state"] == "loaded"
    found = views.database_view(read_of(catalog), "sales", 0, 10, search="t0001")
    assert found is not None and [t["name"] for t in found["tables"]][:2] == ["t00010", "t00011"]
    assert views.database_view(read_of(catalog), "nope") is None


def test_table_view_has_columns_keys_parameters_and_a_page_of_partitions(
    catalog: Catalog,
) -> None:
    context = views.table_view(read_of(catalog), "sales", "orders", 0, 100)
    assert context is not None
    assert [c["name"] for c in context["columns"]] == ["id", "amount"]
    assert [c["name"] for c in context["partition_keys"]] == ["k0"]
    assert ("x", EVIL) in context["parameters"] and context["comment"] == EVIL
    assert context["partition_total"] == 250 and len(context["partitions"]) == 100
    seen = {p["name"] for p in context["partitions"]}
    for offset in (100, 200):
        page = views.table_view(read_of(catalog), "sales", "orders", offset, 100)
        assert page is not None
        names = {p["name"] for p in page["partitions"]}
        assert not names & seen
        seen |= names
    assert len(seen) == 250  # the pages cover the table once
    one = views.table_view(read_of(catalog), "sales", "orders", search="000123")
    assert one is not None and [p["name"] for p in one["partitions"]] == ["k0=000123"]
    view = views.table_view(read_of(catalog), "sales", "v")
    assert view is not None and EVIL in view["view_text"] and view["type"] == "VIRTUAL_VIEW"


def test_reads_are_bounded(catalog: Catalog) -> None:
    big = build(partitions=reads.MAX_PAGE + 10, small_tables=0)
    listing = reads.table(big, "sales", "orders", 0, 10**6)
    assert len(listing.rows) == reads.MAX_PAGE and listing.total == reads.MAX_PAGE + 10
    found = reads.find_tables(catalog, "t000", limit=5)
    assert len(found) == 5 and all(t.startswith("t000") for _, t in found)


def test_overview_subscribers_and_operations_views(catalog: Catalog) -> None:
    sources = FakeSources(catalog, role="standby")
    context = pages.overview_view(sources.status(), sources.ha(), Counted(), {"rss": 1})
    assert context["progress"]["percent"] == 25.0  # by partitions when they are known
    assert context["role"] == "standby" and context["epoch"] == 7
    assert context["hms_checked_s_ago"] == 1.5
    assert context["loader"]["slowest"][0]["seconds"] == 2.5
    subs = pages.subscribers_view(sources.status())["subscribers"]
    assert subs[0]["lag"] == catalog.version - 3 and subs[0]["databases"] == "sales"
    ops = pages.operations_view(sources.audit(10), sources.status())
    assert ops["records"][0]["who"] == "alice" and ops["records"][0]["version"] == 12
    assert pages.readiness(True, {"role": "standby"}, 5)[0] is False
    assert pages.readiness(False, None, 5)[0] is False
    assert pages.readiness(True, None, 5) == (True, {"ready": True, "role": "active", "version": 5})


def test_census_counts_partitions_and_bytes(catalog: Catalog) -> None:
    counted = Census(read_of(catalog), chunk=64, pause_s=0).sweep()
    assert counted.done and counted.tables == 32
    db, table, partitions, size = counted.by_partitions[0]
    assert (db, table, partitions) == ("sales", "orders", 250)
    assert counted.by_bytes[0][1] == "orders" and size > 250 * 100
    total = sum(len(e.payload or b"") for e in catalog.live_entries() if e.key.count(":") >= 1)
    assert counted.catalog_bytes <= total


# -- over HTTP


def test_every_page_renders_and_escapes_hostile_text(serve: Any) -> None:
    url = serve()
    for path in (
        "/",
        "/catalog",
        "/catalog/sales",
        "/catalog/sales/orders",
        "/catalog/sales/orders?offset=200&limit=100",
        "/catalog/sales/v",
        "/subscribers",
        "/operations",
        "/log_level",
    ):
        status, body, headers = get(url + path)
        assert status == 200, (path, body)
        assert "<script>" not in body, path
        assert "script-src" not in headers["content-security-policy"]  # so: no script
    body = get(url + "/")[1]
    assert 'value="25.0"' in body and "ETA 15.0 s" in body and "orders" in body
    assert '<meta http-equiv="refresh" content="2">' in body  # while loading
    status, body, _ = get(url + "/catalog/sales/orders?q=script")
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in body
    assert get(url + "/catalog/sales/nope")[0] == 404
    assert get(url + "/catalog/sales/orders?offset=x")[0] == 400
    assert "catalogd_catalog_version" in get(url + "/metrics")[1]
    status, body, _ = get(url + "/catalog?q=orders")  # one match: straight to it
    assert status == 200 and "Partitions (250)" in body


def test_probes(serve: Any) -> None:
    status, body, _ = get(serve() + "/readyz")
    assert status == 200 and json.loads(body)["ready"] is True
    status, body, _ = get(serve(role="standby") + "/readyz")
    assert status == 503 and json.loads(body) == {"ready": False, "role": "standby", "version": 283}
    status, body, _ = get(serve(role="standby") + "/healthz")
    assert status == 200 and json.loads(body)["role"] == "standby"


def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(f"# name role token\nviewer read {READ_TOKEN}\nops admin {ADMIN_TOKEN}\n")
    path.chmod(0o600)
    return path


def test_tokens_and_roles(serve: Any, tmp_path: Path) -> None:
    url = serve(Access(load_tokens(tokens_file(tmp_path)), loopback=False))
    status, _, headers = get(url + "/")
    assert status == 401 and headers["www-authenticate"].startswith("Basic")
    assert get(url + "/catalog", token="wrong-token-wrong-token")[0] == 401
    assert get(url + "/healthz")[0] == 200  # probes carry no token
    assert get(url + "/catalog", token=READ_TOKEN)[0] == 200
    basic = base64.b64encode(f"me:{READ_TOKEN}".encode()).decode()
    assert get(url + "/catalog", Authorization=f"Basic {basic}")[0] == 200
    form = b"logger=catalogd.web.test&level=DEBUG"
    assert get(url + "/log_level", token=READ_TOKEN, data=form)[0] == 403
    assert get(url + "/log_level", token=ADMIN_TOKEN, data=form, Origin="http://evil")[0] == 403
    status, body, _ = get(url + "/log_level", token=ADMIN_TOKEN, data=form)
    assert status == 200 and "catalogd.web.test: DEBUG" in body


def test_without_tokens_only_loopback_may_change_levels(serve: Any) -> None:
    form = b"logger=catalogd.web.test2&level=WARNING"
    assert get(serve(Access(None, loopback=False)) + "/log_level", data=form)[0] == 403
    assert get(serve(Access(None, loopback=True)) + "/log_level", data=form)[0] == 200


def test_tokens_file_must_be_private_and_well_formed(tmp_path: Path) -> None:
    path = tokens_file(tmp_path)
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        load_tokens(path)
    path.write_text("viewer reader short\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError, match="NAME ROLE TOKEN"):
        load_tokens(path)


def test_exposure_rule() -> None:
    assert web_exposure("127.0.0.1:1", tls=False, tokens=False, insecure=False) is None
    assert web_exposure(None, tls=False, tokens=False, insecure=False) is None
    assert web_exposure("0.0.0.0:1", tls=True, tokens=True, insecure=False) is None
    with pytest.raises(ConfigError, match="--web-tokens"):
        web_exposure("0.0.0.0:1", tls=True, tokens=False, insecure=False)
    assert "INSECURE" in (web_exposure("10.0.0.1:1", tls=False, tokens=False, insecure=True) or "")
