"""The change detector in events mode, in-process, against real events-enabled metastores.

Replayed, late and repeated event ids, and ids that are gone (expired), must all end
with the catalog equal to a fresh load of the same HMS, and never wedge the detector.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import idl
from catalogd.freshness.detector import ChangeDetector
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.loading.table_loader import TableLoader
from catalogd.runtime_info import RuntimeInfo
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import ThriftSource
from catalogd.writes.operations import Operations

pytestmark = [pytest.mark.hms, pytest.mark.timeout(240)]

hms_thrift = idl.hive_metastore
# The metastore's own RawStore: event ids are then taken unlocked, as in upstream HMS 2.3.
UNORDERED_IDS = {"hive.metastore.rawstore.impl": "org.apache.hadoop.hive.metastore.ObjectStore"}


@pytest.fixture(scope="module")
def events_hms(
    tmp_path_factory: pytest.TempPathFactory, hms_cache_dir: Path
) -> Iterator[EmbeddedMetastore]:
    with EmbeddedMetastore(
        tmp_path_factory.mktemp("hms-detector"), cache_dir=hms_cache_dir, notification_events=True
    ) as metastore:
        yield metastore


@dataclass
class InProcess:
    server: CatalogServer
    ops: Operations
    loader: TableLoader
    detector: ChangeDetector

    def cycle(self) -> None:
        """One detection cycle, then wait for the loads it queued."""
        self.detector.run_once()
        assert self.loader.wait_idle(60)

    def state(self) -> dict[str, bytes | None]:
        return self.server.submit(lambda c: {e.key: e.payload for e in c.live_entries()}).result()


@contextmanager
def catalogd(uri: str, **detector_options: Any) -> Iterator[InProcess]:
    """Server, operations, loader and an (unstarted) events-mode detector, loaded from ``uri``."""
    with ExitStack() as stack:
        server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*"))
        ops = Operations(server, lambda: ThriftSource(MetastoreClient(uri)))
        stack.callback(ops.close)
        # As the daemon does: the event id before the initial load.
        start_event = ops.source().current_notification_id()
        ops.load_names()
        server.start()
        stack.callback(server.close)
        loader = TableLoader(ops, pool_size=2).start()
        stack.callback(loader.close)
        loader.enqueue_unloaded()
        options = {"interval_s": 0.05, "max_calls_per_s": 1e6, "start_event_id": start_event}
        detector = ChangeDetector(
            ops, loader, RuntimeInfo(), mode="events", **{**options, **detector_options}
        )
        stack.callback(detector.close)
        assert loader.wait_idle(60)
        yield InProcess(server, ops, loader, detector)


def fresh_load(uri: str) -> dict[str, bytes | None]:
    """What a catalogd started now would hold: the same HMS loaded from scratch."""
    with catalogd(uri) as fresh:
        return fresh.state()


def create_database(client: MetastoreClient, hms: EmbeddedMetastore, name: str) -> str:
    location = f"file:{hms.warehouse_dir}/{name}.db"
    client.call(
        "create_database",
        hms_thrift.Database(name=name, description="", parameters={}, locationUri=location),
    )
    return location


def test_replayed_events_are_skipped_and_late_ones_do_not_resurrect(
    events_hms: EmbeddedMetastore,
) -> None:
    db = "det_replay"
    # Remembered long enough for the replay below, however slow this machine is today.
    with (
        catalogd(events_hms.uri, event_late_s=120) as cd,
        MetastoreClient(events_hms.uri) as client,
    ):
        start = cd.detector.stats.last_event_id
        location = create_database(client, events_hms, db)
        table = thrift_table(
            db, "t", f"{location}/t", columns=[("id", "int")], partition_keys=[("dt", "string")]
        )
        client.call("create_table", table)
        client.call("add_partitions", thrift_partitions(table, [["a"], ["b"]]))
        client.call("create_table", thrift_table(db, "gone", f"{location}/gone", columns=[]))
        client.call("drop_table", db, "gone", True)
        cd.cycle()
        assert cd.state() == fresh_load(events_hms.uri)
        assert f"TABLE:{db}.t" in cd.state() and f"TABLE:{db}.gone" not in cd.state()

        # The same events again (a re-read after a reconnect, a duplicate delivery).
        end, reloads, version = (
            cd.detector.stats.last_event_id,
            cd.detector.stats.reloads,
            cd.ops.version(),
        )
        duplicates = cd.detector.stats.duplicate_events
        cd.detector.stats.last_event_id = start
        cd.cycle()
        assert cd.detector.stats.duplicate_events - duplicates == end - start
        assert cd.detector.stats.reloads == reloads and cd.ops.version() == version
        assert cd.detector.stats.last_event_id == end

    # Older ids after newer ones, one event per cycle, by a detector that never saw them:
    # CREATE_TABLE of "gone" arrives after the table was dropped, and must not bring it back.
    with catalogd(events_hms.uri, start_event_id=start, event_batch=1) as late:
        for _ in range(end - start):
            late.cycle()
            assert f"TABLE:{db}.gone" not in late.state()
        assert late.detector.stats.last_event_id == end
        assert late.state() == fresh_load(events_hms.uri)


def test_repeated_ids_from_racing_writers_are_all_applied(
    tmp_path: Path, hms_cache_dir: Path
) -> None:
    db, writers, per_writer = "det_race", 6, 6
    with (
        EmbeddedMetastore(
            tmp_path / "hms",
            cache_dir=hms_cache_dir,
            notification_events=True,
            extra_conf=UNORDERED_IDS,
        ) as hms,
        MetastoreClient(hms.uri) as client,
    ):
        location = create_database(client, hms, db)
        tables = [
            [
                thrift_table(
                    db,
                    f"t{w}_{i}",
                    f"{location}/t{w}_{i}",
                    columns=[("id", "int")],
                    partition_keys=[("p", "string")],
                )
                for i in range(per_writer)
            ]
            for w in range(writers)
        ]
        for table in (t for own in tables for t in own):
            client.call("create_table", table)
        with catalogd(hms.uri) as cd:
            first = cd.detector.stats.last_event_id

            def write(own: list[Any]) -> None:
                # One event per table: a table whose event is lost stays without its partition.
                with MetastoreClient(hms.uri) as writer:
                    for table in own:
                        writer.call("add_partitions", thrift_partitions(table, [["x"]]))

            threads = [threading.Thread(target=write, args=(own,)) for own in tables]
            cd.detector.start()  # reading while they write: late commits happen here
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
            cd.detector.close()
            cd.cycle()
            ids = [e.eventId for e in client.get_next_notification(first, 10_000)]
            assert len(ids) == writers * per_writer
            assert len(set(ids)) < len(ids), "no repeated ids this time: the race did not happen"
            assert cd.state() == fresh_load(hms.uri)


def test_expired_events_lead_to_a_fingerprint_pass(tmp_path: Path, hms_cache_dir: Path) -> None:
    db = "det_gap"
    with (
        EmbeddedMetastore(
            tmp_path / "hms",
            cache_dir=hms_cache_dir,
            notification_events=True,
            extra_conf={"hive.metastore.event.db.listener.timetolive": "1s"},
        ) as hms,
        MetastoreClient(hms.uri) as client,
    ):
        location = create_database(client, hms, db)
        for name in ("kept", "dropped"):
            client.call("create_table", thrift_table(db, name, f"{location}/{name}", columns=[]))
        with catalogd(hms.uri) as cd:
            assert f"TABLE:{db}.dropped" in cd.state()
            client.call("drop_table", db, "dropped", True)
            dropped_at = client.get_current_notification_event_id()
            # Every new event also removes events older than the time-to-live.
            deadline = time.monotonic() + 60
            while client.get_next_notification(0, 1)[0].eventId <= dropped_at:
                assert time.monotonic() < deadline, "events did not expire"
                found = client.get_database(db)
                found.parameters = {"tick": str(time.monotonic())}
                client.call("alter_database", db, found)
                time.sleep(0.2)  # lets the clock pass the time-to-live; not a readiness check
            cd.cycle()
            assert cd.detector.stats.event_gaps == 1
            assert f"TABLE:{db}.dropped" not in cd.state()
            assert cd.state() == fresh_load(hms.uri)
            assert cd.detector.stats.last_event_id == client.get_current_notification_event_id()
            cd.cycle()  # and it keeps following events afterwards
            assert cd.detector.stats.event_gaps == 1 and cd.detector.stats.errors == 0


def test_a_rename_into_another_database_leaves_no_table_behind(
    events_hms: EmbeddedMetastore,
) -> None:
    # HMS names an ALTER_TABLE event after the new table; the old name is only in the
    # event's message. Relisting the new table's database alone would keep the old one.
    src, dst = "det_mv_from", "det_mv_to"
    with catalogd(events_hms.uri) as cd, MetastoreClient(events_hms.uri) as client:
        location = create_database(client, events_hms, src)
        create_database(client, events_hms, dst)
        client.call(
            "create_table", thrift_table(src, "t", f"{location}/t", columns=[("id", "int")])
        )
        cd.cycle()
        assert f"TABLE:{src}.t" in cd.state()
        moved = client.call("get_table", src, "t")
        moved.dbName = dst
        client.call("alter_table", src, "t", moved)
        cd.cycle()
        state = cd.state()
        assert f"TABLE:{dst}.t" in state and f"TABLE:{src}.t" not in state
        assert state == fresh_load(events_hms.uri)
