"""Admin commands and freshness under hostile load, in-process against a real HMS.

Waiting ``--sync`` commands never starve ``status``; refreshes are never starved
by invalidates; bad input is ``ERROR``/``NOTFOUND``, never OK or an internal
error; the loader's counts are true.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
import zmq

import idl
from catalogd.admin.barrier import SubscriberBarrier
from catalogd.admin.client import AdminClient
from catalogd.admin.endpoint import AdminServer
from catalogd.admin.handlers import handlers
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.loading.table_loader import TableLoader
from catalogd.runtime_info import RuntimeInfo
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import ThriftSource
from catalogd.state.store import StateStore, sqlite_url
from catalogd.writes.operations import Operations
from subscriber.protocol import codec
from subscriber.protocol.errors import BusyError

pytestmark = [pytest.mark.hms, pytest.mark.timeout(180)]
svc = idl.catalog_service
hms_thrift = idl.hive_metastore
Cmd, Code = svc.TAdminCommand, svc.TStatusCode
DB = "faults_admin"


@dataclass
class InProcess:
    server: CatalogServer
    ops: Operations
    loader: TableLoader
    admin: AdminServer
    client: AdminClient


@pytest.fixture(scope="module")
def tables(hms: EmbeddedMetastore) -> Iterator[str]:
    with MetastoreClient(hms.uri) as client:
        location = f"file:{hms.warehouse_dir}/{DB}.db"
        db = hms_thrift.Database(name=DB, description="", parameters={}, locationUri=location)
        client.call("create_database", db)
        table = thrift_table(
            DB, "p", f"{location}/p", columns=[("a", "int")], partition_keys=[("d", "string")]
        )
        client.call("create_table", table)
        client.call("add_partitions", thrift_partitions(table, [("1",), ("2",)]))
        client.call("create_table", thrift_table(DB, "flat", f"{location}/flat", columns=[]))
        yield hms.uri
        client.call("drop_database", DB, True, True)


@pytest.fixture
def cd(tables: str, tmp_path: Path) -> Iterator[InProcess]:
    with ExitStack() as stack:
        server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*"))
        ops = Operations(server, lambda: ThriftSource(MetastoreClient(tables)))
        stack.callback(ops.close)
        ops.load_names(DB)
        server.start()
        stack.callback(server.close)
        loader = TableLoader(ops, pool_size=2).start()
        stack.callback(loader.close)
        store = StateStore.open(sqlite_url(str(tmp_path / "state.db")))
        stack.callback(store.close)
        # A long dead_after: a silent subscriber stays "live" for the whole wait.
        barrier = SubscriberBarrier(lambda: dict(server.stats.subscribers), dead_after_s=600)
        table = handlers(server, ops, loader, RuntimeInfo(), barrier.live, store)
        admin = AdminServer(
            "tcp://127.0.0.1:*", table, barrier, workers=2, max_sync_timeout_s=60
        ).start()
        stack.callback(admin.close)
        yield InProcess(server, ops, loader, admin, AdminClient(admin.endpoint, timeout_s=20))


def silent_subscriber(server: CatalogServer, stack: ExitStack) -> None:
    """A subscriber that joins, reports version 0 once, and never again."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    stack.callback(sock.close, 0)
    sock.connect(server.endpoint)
    sock.send(codec.pack(svc.TRequest(hello=svc.THello(client_id="silent"))))
    assert sock.poll(10_000)
    sock.recv()
    report = svc.TSubscriberReport(
        client_id="silent", service_id=server.service_id, applied_version=0
    )
    sock.send(codec.pack(svc.TRequest(report=report)))
    deadline = 200
    while "silent" not in server.stats.subscribers and deadline:
        sock.poll(50)
        deadline -= 1
    assert "silent" in server.stats.subscribers


def test_waiting_sync_commands_never_starve_status_or_other_commands(cd: InProcess) -> None:
    with ExitStack() as stack:
        silent_subscriber(cd.server, stack)
        waiting = []
        for _ in range(6):  # more than the workers
            sock = zmq.Context.instance().socket(zmq.DEALER)
            stack.callback(sock.close, 0)
            sock.connect(cd.admin.endpoint)
            request = svc.TAdminRequest(
                command=Cmd.INVALIDATE, db_name=DB, tbl_name="flat", sync=True,
                sync_timeout_ms=2**31 - 1,
            )  # fmt: skip
            sock.send_multipart([b"", codec.pack(request)])
            waiting.append(sock)
        for _ in range(3):
            assert cd.client.call(Cmd.STATUS).status.code == Code.OK
            reply = cd.client.call(Cmd.INVALIDATE, db_name=DB, tbl_name="flat")
            assert reply.status.code == Code.OK
        assert not any(sock.poll(0) for sock in waiting)  # still waiting for "silent"
        huge = svc.TAdminRequest(command=Cmd.INVALIDATE, sync=True, sync_timeout_ms=2**31 - 1)
        assert cd.admin.sync_timeout(huge) == 60


def test_refresh_of_a_partition_nobody_has_is_notfound_naming_it(cd: InProcess) -> None:
    assert cd.client.call(Cmd.REFRESH, db_name=DB, tbl_name="p").status.code == Code.OK
    before = cd.ops.version()
    reply = cd.client.call(Cmd.REFRESH, db_name=DB, tbl_name="p", partitions=["d=1", "d=404"])
    assert reply.status.code == Code.NOTFOUND
    assert "d=404" in reply.status.message and "d=1" not in reply.status.message
    assert cd.ops.version() == before  # nothing changed
    reply = cd.client.call(Cmd.REFRESH, db_name=DB, tbl_name="p", partitions=["d=2"])
    assert reply.status.code == Code.OK


def test_a_refresh_always_wins_against_a_storm_of_invalidates(cd: InProcess) -> None:
    stop = threading.Event()
    errors: list[BaseException] = []

    def storm() -> None:
        while not stop.is_set():
            try:
                cd.ops.invalidate_table(DB, "p")
            except BusyError:
                pass  # the stated overload bound: never reached with 6 threads
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    threads = [threading.Thread(target=storm, daemon=True) for _ in range(6)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(8):
            cd.ops.load_table(DB, "p")  # a whole-table refresh: BusyError would fail here
            cd.ops.refresh_partitions(DB, "p", ["d=1"])
        futures = [cd.loader.request(DB, "p", urgent=True) for _ in range(5)]
        for future in futures:
            future.result(60)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    assert errors == []
    assert cd.loader.stats.failed == 0


def test_a_command_beyond_the_overload_bound_is_busy_at_once(cd: InProcess) -> None:
    cd.ops.turns.max_waiting = 1
    outcome: list[BaseException] = []

    def other() -> None:
        try:
            cd.ops.load_table(DB, "p")
        except BaseException as exc:  # noqa: BLE001 - examined below
            outcome.append(exc)

    with cd.ops.turns.turn((DB, "p")):
        cd.ops.load_table(DB, "p")  # the holder itself may go on (re-entrant)
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(30)
    assert len(outcome) == 1 and isinstance(outcome[0], BusyError)
    assert "overloaded" in str(outcome[0])


def test_a_non_numeric_audit_limit_is_an_error_naming_the_field(cd: InProcess) -> None:
    reply = cd.client.call(Cmd.AUDIT, options={"limit": "lots"})
    assert reply.status.code == Code.ERROR
    assert "limit" in reply.status.message


def test_loads_of_tables_that_do_not_exist_are_not_counted(cd: InProcess) -> None:
    cd.loader.enqueue_unloaded(DB)
    assert cd.loader.wait_idle(60)
    loaded = cd.loader.stats.loaded
    futures = [cd.loader.request(DB, f"nope{i}", urgent=True) for i in range(30)]
    futures += [cd.loader.request(DB, "flat", urgent=True) for _ in range(30)]
    for future in futures:
        future.exception(60)
    assert cd.loader.wait_idle(60)
    assert cd.loader.stats.loaded == loaded  # "flat" was loaded already, the rest do not exist
    assert cd.loader.queued == 0
