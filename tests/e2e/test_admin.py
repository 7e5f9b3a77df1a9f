"""Admin commands against a running catalogd process with subscribers (real HMS)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from polling import wait_until
from support.catalogd_process import CatalogdProcess

import idl
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.api import CatalogSubscriber
from subscriber.cache import ChangeEvent

pytestmark = [pytest.mark.hms, pytest.mark.timeout(600)]
hms_thrift = idl.hive_metastore
UNLOADED = idl.catalog_objects.TTableType.UNLOADED_TABLE


@pytest.fixture(scope="module")
def admin_db(hms: EmbeddedMetastore) -> Iterator[str]:
    """A database of its own: a partitioned table with two partitions."""
    db = f"adm_{uuid.uuid4().hex[:6]}"
    with MetastoreClient(hms.uri) as client:
        client.raw.create_database(
            hms_thrift.Database(
                name=db,
                description="",
                locationUri=f"file:{hms.warehouse_dir}/{db}.db",
                parameters={},
            )
        )
        table = thrift_table(
            db,
            "events",
            f"file:{hms.warehouse_dir}/{db}.db/events",
            columns=[("id", "bigint")],
            partition_keys=[("dt", "string"), ("region", "string")],
        )
        client.raw.create_table(table)
        client.raw.add_partitions(thrift_partitions(table, [("d1", "eu"), ("d1", "us")]))
    yield db


@pytest.fixture(scope="module")
def server(
    hms: EmbeddedMetastore, admin_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CatalogdProcess]:
    proc = CatalogdProcess(
        hms.uri, tmp_path_factory.mktemp("catalogd-admin"), extra=["--change-detection", "off"]
    ).start()
    proc.wait_loaded()
    yield proc
    proc.stop()


@pytest.fixture
def sub(server: CatalogdProcess) -> Iterator[CatalogSubscriber]:
    with CatalogSubscriber(server.endpoint) as s:
        s.wait_synced(30)
        yield s


def test_status_reports_the_catalog_and_its_subscribers(
    server: CatalogdProcess, sub: CatalogSubscriber
) -> None:
    wait_until(
        lambda: sub.client_id in server.admin("status")[1]["detail"]["subscribers"], what="report"
    )
    code, answer, _ = server.admin("status")
    detail = answer["detail"]
    assert code == 0 and answer["status"] == "OK"
    assert detail["service_id"] == server.service_id == sub.service_id
    assert detail["version"] >= sub.version > 0
    assert detail["objects"]["DATABASE"] >= 2 and detail["tables_not_loaded"] == 0
    assert detail["delta_log"]["to"] == detail["version"]
    assert detail["names_published_s"] < detail["uptime_s"]
    assert detail["hms"]["healthy"] is True


def catalogd_admin(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "catalogd.cli", "admin", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_status_prints_a_readable_summary(server: CatalogdProcess, sub: CatalogSubscriber) -> None:
    wait_until(
        lambda: sub.client_id in server.admin("status")[1]["detail"]["subscribers"], what="report"
    )
    # The shared options also work after the command.
    result = catalogd_admin("status", "--endpoint", server.admin_endpoint, "--timeout", "30")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(rf"^service id\s+{server.service_id}$", out, re.M), out
    assert re.search(r"^version\s+\d+ \(delta log from \d+\)$", out, re.M), out
    assert re.search(r"^tables\s+(\d+) loaded / \1 known", out, re.M), out
    assert re.search(rf"^HMS\s+{re.escape(server.hms_uri)}, healthy$", out, re.M), out
    assert re.search(r"^change detection\s+off$", out, re.M), out
    subscriber = rf"^\s+{re.escape(sub.client_id)}\s+(up to date|\d+ versions? behind)"
    assert re.search(subscriber, out, re.M), out
    assert not re.search(r"\d\.\d{3,}", out) and "{" not in out, out  # nothing raw


def test_options_after_the_command(server: CatalogdProcess, admin_db: str) -> None:
    result = catalogd_admin(
        "refresh", f"{admin_db}.events", "--json", "--endpoint", server.admin_endpoint
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["status"] == "OK" and answer["detail"]["target"] == f"{admin_db}.events"


def test_refresh_partition_publishes_only_that_partition(
    server: CatalogdProcess, sub: CatalogSubscriber, hms: EmbeddedMetastore, admin_db: str
) -> None:
    events: list[ChangeEvent] = []
    sub.add_listener(events.append)
    with MetastoreClient(hms.uri) as client:
        table = client.get_table(admin_db, "events")
        client.raw.add_partitions(thrift_partitions(table, [("d2", "eu")]))
    code, answer, err = server.admin(
        "refresh", f"{admin_db}.events", "--partition", "dt=d2/region=eu"
    )
    assert code == 0, err
    sub.wait_for_version(answer["version"], 10)
    assert [p.partition_name for p in sub.list_partitions(f"{admin_db}.events", {"dt": "d2"})] == [
        "dt=d2/region=eu"
    ]
    assert [(e.kind.value, e.key) for e in events] == [
        ("added", f"HDFS_PARTITION:{admin_db}.events:dt=d2/region=eu")
    ]
    # A second refresh of an unchanged table publishes nothing.
    code, again, _ = server.admin("refresh", f"{admin_db}.events")
    assert code == 0 and again["version"] == answer["version"]


def test_invalidate_table_database_and_all(
    server: CatalogdProcess, sub: CatalogSubscriber, admin_db: str
) -> None:
    seen: list[ChangeEvent] = []
    sub.add_listener(seen.append)
    for target in (f"{admin_db}.events", admin_db, None):
        args = ["invalidate"] + ([target] if target else [])
        code, answer, err = server.admin(*args)
        assert code == 0, err
        sub.wait_for_version(answer["version"], 10)
        assert answer["detail"]["target"] == (target or "*")
        # Reloaded lazily: the table is back, loaded, soon after.
        wait_until(
            lambda: sub.get_table(f"{admin_db}.events").table_type != UNLOADED,
            what=f"reload after invalidate {target}",
        )
    assert any(e.key == f"TABLE:{admin_db}.events" for e in seen)
    assert len(sub.list_partitions(f"{admin_db}.events")) >= 2


def test_errors_are_clear_and_the_daemon_keeps_serving(
    server: CatalogdProcess, sub: CatalogSubscriber, admin_db: str
) -> None:
    code, answer, _ = server.admin("refresh", f"{admin_db}.nope")
    assert code == 4 and answer["status"] == "NOTFOUND" and f"{admin_db}.nope" in answer["message"]
    code, answer, _ = server.admin("invalidate", "no_such_db_xyz")
    assert code == 4 and "no_such_db_xyz" in answer["message"]
    code, answer, _ = server.admin("refresh", f"{admin_db}.events", "--partition", "dt=d1")
    assert code == 2 and "dt=VALUE/region=VALUE" in answer["message"]
    code, answer, _ = server.admin("refresh", f"{admin_db}.events", "--partition", "garbage")
    assert code == 2 and "k=v/k2=v2" in answer["message"] or "dt=VALUE" in answer["message"]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "catalogd.cli",
            "admin",
            "--endpoint",
            server.admin_endpoint,
            "refresh",
            "nodot",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "DB.TABLE" in result.stderr
    assert server.admin("status")[0] == 0 and sub.is_synced


SUBSCRIBER_SCRIPT = """
import sys, time
from subscriber.api import CatalogSubscriber
sub = CatalogSubscriber(sys.argv[1], client_id=sys.argv[2]).start()
sub.wait_synced(30)
print("synced", flush=True)
time.sleep(600)
"""


def test_refresh_sync_names_a_killed_subscriber(
    server: CatalogdProcess, sub: CatalogSubscriber, admin_db: str
) -> None:
    doomed = f"doomed-{uuid.uuid4().hex[:6]}"
    proc = subprocess.Popen(
        [sys.executable, "-c", SUBSCRIBER_SCRIPT, server.endpoint, doomed],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "synced"
        wait_until(
            lambda: doomed in server.admin("status")[1]["detail"]["subscribers"],
            what="doomed reports",
        )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        with MetastoreClient(server.hms_uri) as client:  # something new to publish
            table = client.get_table(admin_db, "events")
            client.raw.add_partitions(thrift_partitions(table, [(doomed, "eu")]))
        started = time.monotonic()
        code, answer, err = server.admin(
            "refresh", f"{admin_db}.events", "--sync", "--sync-timeout", "20"
        )
        elapsed = time.monotonic() - started
        assert code == 5, err
        assert answer["unconfirmed_subscribers"] == [doomed]
        assert sub.client_id in answer["detail"]["confirmed_subscribers"]
        assert elapsed < 15, (
            f"the barrier should drop a dead subscriber quickly, took {elapsed:.1f}s"
        )
    finally:
        proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_refresh_sync_gives_read_your_writes(
    server: CatalogdProcess, sub: CatalogSubscriber, admin_db: str
) -> None:
    wait_until(
        lambda: sub.client_id in server.admin("status")[1]["detail"]["subscribers"], what="report"
    )
    code, answer, err = server.admin("refresh", f"{admin_db}.events", "--sync")
    # 5 only when an earlier test's killed subscriber is still named (within a minute).
    assert code in (0, 5), err
    assert sub.client_id in answer["detail"]["confirmed_subscribers"]
    assert sub.client_id not in answer["unconfirmed_subscribers"]
    assert sub.version >= answer["version"]


def test_priority_load_jumps_the_background_queue(hms: EmbeddedMetastore, tmp_path: Path) -> None:
    db = f"prio_{uuid.uuid4().hex[:6]}"
    with MetastoreClient(hms.uri) as client:
        client.raw.create_database(
            hms_thrift.Database(
                name=db,
                description="",
                locationUri=f"file:{hms.warehouse_dir}/{db}.db",
                parameters={},
            )
        )
        for i in range(120):
            table = thrift_table(
                db,
                f"t{i:03d}",
                f"file:{hms.warehouse_dir}/{db}.db/t{i:03d}",
                columns=[("id", "bigint")],
                partition_keys=[("p", "string")],
            )
            client.raw.create_table(table)
    proc = CatalogdProcess(
        hms.uri,
        tmp_path / "catalogd",
        extra=["--loader-pool-size", "1", "--change-detection", "off"],
    ).start()
    try:
        with CatalogSubscriber(proc.endpoint) as sub:
            sub.wait_synced(30)
            last = f"{db}.t119"  # the background pool reaches it last
            assert sub.get_table(last).table_type == UNLOADED
            table = sub.get_table(last, load=True, timeout=60)
            assert table.table_type != UNLOADED and [
                c.columnName for c in table.clustering_columns
            ] == ["p"]
            still_unloaded = [
                t for t in sub.list_tables(db) if sub.get_table(f"{db}.{t}").table_type == UNLOADED
            ]
            assert still_unloaded, "the background pool should not have finished yet"
    finally:
        proc.stop()


def test_hms_down_is_reported_while_catalogd_keeps_serving(tmp_path: Path) -> None:
    with EmbeddedMetastore(tmp_path / "hms") as private:
        proc = CatalogdProcess(
            private.uri, tmp_path / "catalogd", extra=["--change-detection", "off"]
        ).start()
        try:
            proc.wait_loaded()
            with CatalogSubscriber(proc.endpoint) as sub:
                sub.wait_synced(30)
                uri = private.uri
                private.stop()
                code, answer, _ = proc.admin("refresh", "default.whatever", timeout=180)
                assert code == 3 and answer["status"] == "UNAVAILABLE"
                assert uri in answer["message"]
                assert proc.admin("status")[0] == 0
                assert sub.is_synced and "default" in sub.list_databases()
        finally:
            proc.stop()
