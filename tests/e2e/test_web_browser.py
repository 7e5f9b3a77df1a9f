"""The web status page in a real headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven over WebDriver by selenium) against a running catalogd
reading a real Hive Metastore: every page loads, links lead from ``/`` to a
partition, the progress bar moves while a catalog loads, hostile text stays text
(no script runs), and screenshots are kept in ``build/screenshots`` (CI artefacts;
``CATALOGD_SCREENSHOTS`` overrides the folder). Selenium, not the DevTools protocol
by hand: Debian's chromium-driver matches its chromium, and WebDriver gives clicks,
element text and screenshots in a few calls; the driver's path is given, so selenium
never downloads anything."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.catalogd_process import CatalogdProcess

import idl
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore

pytestmark = [pytest.mark.timeout(600)]

hms = idl.hive_metastore
DB, BIG = "webui", "webui_big"
EVIL = "<script>window.__pwned=1</script>"
EVIL_VALUE = "<img src=x onerror=window.__pwned=2>"
SHOTS = Path(
    os.environ.get("CATALOGD_SCREENSHOTS")
    or Path(__file__).resolve().parents[2] / "build" / "screenshots"
)
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (CHROMIUM and DRIVER):
        pytest.fail("chromium and chromium-driver missing: run .ci/install-system-deps")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def workload(uri: str, warehouse: Path) -> None:
    """``webui``: a hostile comment, a partitioned table (one hostile partition value)
    and a view; ``webui_big``: 60 tables for a load to watch (creating partitions in the
    Derby HMS takes ~14 ms each: ``t00`` alone has 200, the others 2)."""
    with MetastoreClient(uri) as client:
        if DB in client.get_all_databases():
            return
        for name, comment in ((DB, EVIL), (BIG, "big")):
            client.call(
                "create_database",
                hms.Database(
                    name=name,
                    description=comment,
                    locationUri=f"file:{warehouse}/{name}.db",
                    parameters={},
                ),
            )
        table = thrift_table(
            DB,
            "events",
            f"file:{warehouse}/{DB}.db/events",
            columns=[("id", "bigint"), ("payload", "string")],
            partition_keys=[("day", "string")],
            parameters={"comment": EVIL, "owner_note": EVIL},
        )
        client.call("create_table", table)
        values = [[f"2026-01-{d:02d}"] for d in range(1, 29)] + [[EVIL_VALUE]]
        client.call("add_partitions", thrift_partitions(table, values))
        for i in range(60):
            big = thrift_table(
                BIG,
                f"t{i:02d}",
                f"file:{warehouse}/{BIG}.db/t{i:02d}",
                columns=[("id", "bigint")],
                partition_keys=[("p", "int")],
            )
            client.call("create_table", big)
            values = [[str(p)] for p in range(200 if i == 0 else 2)]
            client.call("add_partitions", thrift_partitions(big, values))


def shot(driver: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / f"{name}.png"))


def no_script_ran(driver: Any) -> None:
    assert driver.execute_script("return window.__pwned === undefined")


def test_pages_in_a_browser(hms: EmbeddedMetastore, tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    workload(hms.uri, hms.warehouse_dir)
    server = CatalogdProcess(hms.uri, tmp_path / "catalogd", extra=["--loader-pool-size", "1"])
    server.start()
    try:
        # The load of 61 tables, one at a time: the bar moves.
        browser.get(server.web_url + "/")
        seen: list[float] = []
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            browser.get(server.web_url + "/")
            bars = browser.find_elements(By.ID, "load-progress")
            if bars:
                seen.append(float(bars[0].get_attribute("value")))
                if len(seen) == 2:
                    shot(browser, "overview-loading")
                if seen[-1] >= 100:
                    break
            time.sleep(0.3)
        assert seen and seen[-1] == 100, seen
        assert len(set(seen)) >= 3, f"the bar did not move: {seen}"
        assert seen == sorted(seen)
        server.wait_loaded()
        time.sleep(1.5)  # the overview's status is at most a second old
        deadline = time.monotonic() + 30  # the largest tables are counted in the background
        while time.monotonic() < deadline:
            browser.get(server.web_url + "/")
            top = browser.find_element(By.ID, "top-partitions").text
            if f"{BIG}.t" in top and " 200 " in top:
                break
            time.sleep(0.5)
        assert "Load done" in browser.page_source
        assert " 200 " in browser.find_element(By.ID, "top-partitions").text
        shot(browser, "overview")

        # From / to a partition by links only.
        browser.find_element(By.LINK_TEXT, "catalog").click()
        browser.find_element(By.LINK_TEXT, DB).click()
        assert EVIL in browser.find_element(By.ID, "db-comment").text  # shown as text
        no_script_ran(browser)
        shot(browser, "database")
        browser.find_element(By.LINK_TEXT, "events").click()
        assert browser.find_element(By.ID, "table-comment").text == EVIL
        rows = browser.find_elements(By.CSS_SELECTOR, "#partitions tr.partition")
        assert len(rows) == 29
        names = [r.find_element(By.TAG_NAME, "td").text for r in rows]
        assert "day=2026-01-15" in names and any("onerror" in n for n in names)
        no_script_ran(browser)
        shot(browser, "table")

        # A big table's partitions, paged.
        browser.get(server.web_url + f"/catalog/{BIG}/t00?limit=50")
        assert "1–50 of 200" in browser.find_element(By.ID, "pager").text
        browser.find_element(By.ID, "next").click()
        assert "51–100 of 200" in browser.find_element(By.ID, "pager").text

        # Search by name: one match goes straight to the table; several (the session's
        # HMS may hold an "events" of another test's database) are listed as links.
        browser.get(server.web_url + "/catalog?q=events")
        if not browser.current_url.endswith(f"/catalog/{DB}/events"):
            browser.find_element(By.LINK_TEXT, f"{DB}.events").click()
        assert browser.current_url.endswith(f"/catalog/{DB}/events")
        browser.get(server.web_url + f"/catalog?q={BIG}.t07")
        assert browser.current_url.endswith(f"/catalog/{BIG}/t07")  # db.table: one match

        # Every other page loads.
        for path, marker in (
            ("/subscribers", "Subscribers"),
            ("/operations", "Admin audit log"),
            ("/log_level", "Log levels"),
            ("/metrics", "catalogd_catalog_version"),
            ("/healthz", '"status":"ok"'),
            ("/readyz", '"ready":true'),
        ):
            browser.get(server.web_url + path)
            assert marker in browser.page_source, path
            no_script_ran(browser)
        code, _, output = server.admin("refresh", f"{DB}.events")
        assert code == 0, output
        browser.get(server.web_url + "/operations")
        assert "refresh" in browser.find_element(By.ID, "audit").text
        shot(browser, "operations")

        # The one action: a loopback page without tokens lets this host's user change it.
        browser.get(server.web_url + "/log_level")
        browser.find_element(By.ID, "set-level").click()
        # The click submits the form; the answer page arrives after click() returns.
        message = WebDriverWait(browser, 30).until(
            lambda b: b.find_elements(By.ID, "message") or b.find_elements(By.ID, "error"),
            message="no answer page after the form's submit",
        )[0]
        assert "catalogd: DEBUG" in message.text, browser.page_source
    finally:
        assert server.stop() == 0
