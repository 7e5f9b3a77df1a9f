"""Spark DDL reaches subscribers with no admin command: change detection by HMS events.

The twin of ``test_freshness.py`` (polling): here the metastore runs catalogd's
notification listener, and ``catalogd serve --change-detection events`` follows its
events. This metastore is not the session one (that one logs no events), and Spark
runs in a child process against it (one SparkContext per process).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.catalogd_process import READY, CatalogdProcess
from support.ddl_scenario import POLL_INTERVAL, run_ddl_scenario, visible
from support.measurements import record_measurement
from support.spark_sql_server import SparkSql

import idl
from catalogd.addresses import free_port
from catalogd.admin.client import AdminClient, response_dict
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.hms.listener import LISTENER_CLASS
from subscriber.api import CatalogSubscriber

svc = idl.catalog_service

pytestmark = [pytest.mark.hms, pytest.mark.spark, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def events_hms(
    tmp_path_factory: pytest.TempPathFactory, hms_cache_dir: Path
) -> Iterator[EmbeddedMetastore]:
    with EmbeddedMetastore(
        tmp_path_factory.mktemp("hms-fresh-events"),
        cache_dir=hms_cache_dir,
        notification_events=True,
    ) as metastore:
        yield metastore


@pytest.fixture(scope="module")
def spark_sql(
    events_hms: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SparkSql]:
    session = SparkSql(
        events_hms.uri, events_hms.warehouse_dir, tmp_path_factory.mktemp("spark-events"), {}
    )
    record_measurement("Spark session start (child process)", session.startup_s, "s")
    try:
        yield session
    finally:
        session.close()


@pytest.fixture(scope="module")
def events_catalogd(
    events_hms: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CatalogdProcess]:
    proc = CatalogdProcess(
        events_hms.uri,
        tmp_path_factory.mktemp("catalogd-events"),
        extra=["--change-detection", "events", "--poll-interval", str(POLL_INTERVAL)],
    ).start()
    proc.wait_loaded()
    yield proc
    proc.stop()


def change_detection(admin_endpoint: str) -> str:
    """The detector's current mode, from ``status``."""
    answer = response_dict(AdminClient(admin_endpoint).call(svc.TAdminCommand.STATUS))
    return str(answer["detail"]["change_detection"])


def test_spark_ddl_of_each_kind_reaches_subscribers(
    events_hms: EmbeddedMetastore, spark_sql: SparkSql, events_catalogd: CatalogdProcess
) -> None:
    with MetastoreClient(events_hms.uri) as client:
        first_event = client.get_current_notification_event_id()
    with CatalogSubscriber(events_catalogd.endpoint) as sub:
        sub.wait_synced(30)
        db, times = run_ddl_scenario(spark_sql.sql, sub, alter_database=True)
        assert change_detection(events_catalogd.admin_endpoint) == "events"

    with MetastoreClient(events_hms.uri) as client:
        events = client.get_next_notification(first_event, 1000)
    # What Spark's statements logged, in order (an INSERT into a new partition adds it).
    assert [(e.eventType, e.tableName) for e in events] == [
        ("CREATE_DATABASE", None),
        ("ALTER_DATABASE", None),
        ("CREATE_TABLE", "clicks"),
        ("ADD_PARTITION", "clicks"),
        ("ADD_PARTITION", "clicks"),
        ("DROP_PARTITION", "clicks"),
        ("ALTER_TABLE", "clicks"),
        ("CREATE_TABLE", "v"),
        ("DROP_TABLE", "clicks"),
        ("DROP_TABLE", "v"),
        ("DROP_DATABASE", None),
    ]
    assert [e.eventId for e in events] == list(range(first_event + 1, first_event + 12))
    for name, seconds in times.items():
        record_measurement(f"events: {name} visible", seconds, "s")


def test_serve_with_no_hms_runs_an_embedded_one_that_logs_events(tmp_path: Path) -> None:
    """The default set-up: ``catalogd serve`` alone, its own HMS, change detection on events."""
    port, admin_port = free_port(), free_port()
    log_path = tmp_path / "catalogd.log"
    command = [
        sys.executable,
        "-m",
        "catalogd.cli",
        "serve",
        "--demo",
        "--data-dir",
        str(tmp_path / "data"),
        "--bind",
        f"tcp://127.0.0.1:{port}",
        "--pub-bind",
        "tcp://127.0.0.1:*",
        "--admin-bind",
        f"tcp://127.0.0.1:{admin_port}",
        "--web-bind",
        "127.0.0.1:0",
        "--poll-interval",
        str(POLL_INTERVAL),
    ]
    started = time.monotonic()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = started + 120
        while not READY.search(log_path.read_text(errors="replace")):
            assert proc.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.05)
        record_measurement(
            "serve, embedded HMS with events: ready", time.monotonic() - started, "s"
        )
        text = log_path.read_text()
        uri = re.search(r"embedded Hive Metastore listening at (\S+)", text)
        assert uri is not None, text
        site = (tmp_path / "data" / "hms" / "conf" / "hive-site.xml").read_text()
        assert LISTENER_CLASS in site
        with CatalogSubscriber(f"tcp://127.0.0.1:{port}") as sub, MetastoreClient(uri[1]) as hms:
            sub.wait_synced(30)
            assert hms.get_current_notification_event_id() > 0  # the demo's DDL was logged
            location = (tmp_path / "data" / "hms" / "warehouse" / "later.db").as_uri()
            hms.call(
                "create_database",
                idl.hive_metastore.Database(
                    name="later", description="", parameters={}, locationUri=location
                ),
            )
            seconds = visible(lambda: "later" in sub.list_databases(), "a database made later")
            assert change_detection(f"tcp://127.0.0.1:{admin_port}") == "events"
        record_measurement("serve, embedded HMS: create database visible", seconds, "s")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, log_path.read_text()[-3000:]
