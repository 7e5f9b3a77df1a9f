"""catalogd's HMS listener: real notification events from the embedded metastore.

One events-enabled metastore for the module (the session ``hms`` has no listener).
Each Thrift DDL kind must log the event types Impala's event processor expects,
committed with the change, with ids that only grow.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.measurements import record_measurement

import idl
from catalogd.hms import listener
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore, find_pyspark_jars
from catalogd.hms.javac import find_javac
from subscriber.protocol.errors import CatalogError, MetastoreUnavailableError

pytestmark = [pytest.mark.hms, pytest.mark.timeout(240)]

hms_thrift = idl.hive_metastore


@pytest.fixture(scope="module")
def events_hms(
    tmp_path_factory: pytest.TempPathFactory, hms_cache_dir: Path
) -> Iterator[EmbeddedMetastore]:
    metastore = EmbeddedMetastore(
        tmp_path_factory.mktemp("hms-events"), cache_dir=hms_cache_dir, notification_events=True
    )
    with metastore:
        record_measurement("HMS start (Derby, events)", metastore.startup_seconds or 0.0, "s")
        yield metastore


def database(hms: EmbeddedMetastore, name: str) -> Any:
    return hms_thrift.Database(
        name=name, description="", parameters={}, locationUri=f"file:{hms.warehouse_dir}/{name}.db"
    )


def events_since(client: MetastoreClient, last: int) -> list[tuple[int, str, str, str | None]]:
    return [
        (e.eventId, e.eventType, e.dbName, e.tableName)
        for e in client.get_next_notification(last, 10_000)
    ]


def test_the_compiled_listener_is_reused(
    events_hms: EmbeddedMetastore, hms_cache_dir: Path
) -> None:
    started = time.monotonic()
    jar = listener.listener_jar(find_pyspark_jars(), hms_cache_dir)
    assert time.monotonic() - started < 1.0  # no javac run: the fixture compiled it
    assert jar.is_file() and jar.name.startswith("hms-listener-")
    assert listener.STORE_CLASS in (events_hms.conf_dir / "hive-site.xml").read_text()


def test_missing_javac_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A java found on PATH with no javac beside it or anywhere on PATH (a JRE-only machine).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    java = bin_dir / "java"
    java.write_text(f'#!/bin/sh\nexec {Path(find_javac("java")).with_name("java")} "$@"\n')
    java.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    metastore = EmbeddedMetastore(
        tmp_path / "hms", java=str(java), cache_dir=tmp_path / "cache", notification_events=True
    )
    with pytest.raises(
        MetastoreUnavailableError, match="no javac .* install a JDK.*openjdk-17-jdk-headless"
    ):
        metastore.start()
    assert not metastore.running


def test_each_thrift_ddl_logs_its_event(events_hms: EmbeddedMetastore) -> None:
    db, wh = "ev_kinds", f"file:{events_hms.warehouse_dir}/ev_kinds.db"
    with MetastoreClient(events_hms.uri) as client:
        first = client.get_current_notification_event_id()
        client.call("create_database", database(events_hms, db))
        found = client.get_database(db)
        found.parameters = {"team": "web"}
        client.call("alter_database", db, found)
        table = thrift_table(
            db, "t", f"{wh}/t", columns=[("id", "bigint")], partition_keys=[("dt", "string")]
        )
        client.call("create_table", table)
        client.call("add_partitions", thrift_partitions(table, [["a"], ["b"]]))
        part = client.get_partition_by_name(db, "t", "dt=a")
        part.parameters = {**part.parameters, "numRows": "7"}
        client.call("alter_partition", db, "t", part)
        client.call("drop_partition", db, "t", ["b"], True)
        altered = client.get_table(db, "t")
        altered.parameters = {**altered.parameters, "owner_team": "web"}
        client.call("alter_table", db, "t", altered)
        client.call(
            "create_function",
            hms_thrift.Function(
                functionName="mask",
                dbName=db,
                className="com.example.Mask",
                ownerName="me",
                ownerType=hms_thrift.PrincipalType.USER,
                createTime=int(time.time()),
                functionType=hms_thrift.FunctionType.JAVA,
                resourceUris=[],
            ),
        )
        client.call("drop_function", db, "mask")
        client.call("create_table", thrift_table(db, "u", f"{wh}/u", columns=[("x", "int")]))
        with pytest.raises(CatalogError):  # a failed change logs nothing
            client.call("create_table", thrift_table(db, "u", f"{wh}/u", columns=[("x", "int")]))
        client.call("drop_table", db, "t", True)
        client.call("drop_database", db, True, True)  # cascade: drops u first
        events = events_since(client, first)
        current = client.get_current_notification_event_id()
        messages = client.get_next_notification(first, 1)
    assert [(kind, name, table) for _, kind, name, table in events] == [
        ("CREATE_DATABASE", db, None),
        ("ALTER_DATABASE", db, None),
        ("CREATE_TABLE", db, "t"),
        ("ADD_PARTITION", db, "t"),
        ("ALTER_PARTITION", db, "t"),
        ("DROP_PARTITION", db, "t"),
        ("ALTER_TABLE", db, "t"),
        ("CREATE_FUNCTION", db, None),
        ("DROP_FUNCTION", db, None),
        ("CREATE_TABLE", db, "u"),
        ("DROP_TABLE", db, "t"),
        ("DROP_TABLE", db, "u"),
        ("DROP_DATABASE", db, None),
    ]
    ids = [event_id for event_id, *_ in events]
    assert ids == list(range(first + 1, first + 1 + len(ids))) and current == ids[-1]
    assert messages[0].messageFormat.startswith("json") and f'"{db}"' in messages[0].message


def test_concurrent_writers_get_unique_ids_in_commit_order(events_hms: EmbeddedMetastore) -> None:
    db, threads, per_thread = "ev_race", 6, 8
    with MetastoreClient(events_hms.uri) as client:
        client.call("create_database", database(events_hms, db))
        first = client.get_current_notification_event_id()
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            with MetastoreClient(events_hms.uri) as client:
                for i in range(per_thread):
                    name = f"t{worker}_{i}"
                    location = f"file:{events_hms.warehouse_dir}/{db}.db/{name}"
                    client.call("create_table", thrift_table(db, name, location, columns=[]))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    workers = [threading.Thread(target=write, args=(w,)) for w in range(threads)]
    seen: list[int] = []
    started = time.monotonic()
    for worker in workers:
        worker.start()
    with MetastoreClient(events_hms.uri) as reader:
        # Read while they write: a smaller id must never commit after a larger one.
        last = first
        while any(w.is_alive() for w in workers) or last < first + threads * per_thread:
            batch = events_since(reader, last)
            seen += [event_id for event_id, *_ in batch]
            last = max([last, *seen])
            assert time.monotonic() - started < 120, "writers did not finish"
    for worker in workers:
        worker.join()
    assert not errors
    assert seen == list(range(first + 1, first + 1 + threads * per_thread))
    record_measurement(
        f"events: {threads * per_thread} concurrent create_table", time.monotonic() - started, "s"
    )
