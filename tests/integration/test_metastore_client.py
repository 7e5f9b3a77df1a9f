"""MetastoreClient: URI parsing, retries, reconnects and error mapping.

Failures are made real: a closed port, and a TCP proxy in front of the real HMS
that drops or stalls chosen connections.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from collections.abc import Iterator

import pytest

import idl
from catalogd.addresses import free_port, parse_metastore_uri
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.protocol.errors import (
    InvalidRequestError,
    MetastoreError,
    MetastoreUnavailableError,
    NotFoundError,
)

pytestmark = pytest.mark.timeout(120)

hms_thrift = idl.hive_metastore


class FaultyProxy:
    """TCP proxy to ``127.0.0.1:target``; connection n gets ``faults[n]`` if listed.

    ``"drop"`` reads the first request bytes, then closes; ``"stall"`` reads them and
    never answers; anything past ``faults`` is forwarded both ways.
    """

    def __init__(self, target: int, faults: list[str]) -> None:
        self._target = target
        self._faults = list(faults)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._accept_thread = threading.Thread(target=self._accept, name="proxy-accept")
        self._accept_thread.start()

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        self._listener.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            fault = self._faults[self.connections] if self.connections < len(self._faults) else ""
            self.connections += 1
            self._sockets.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn, fault), name="proxy-conn")
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket, fault: str) -> None:
        conn.settimeout(5)
        with contextlib.suppress(OSError):
            if fault == "drop":
                conn.recv(65536)
                conn.close()
                return
            if fault == "stall":
                conn.recv(65536)
                self._stop.wait()
                return
            upstream = socket.create_connection(("127.0.0.1", self._target))
            self._sockets.append(upstream)
            self._pump(conn, upstream)

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(a, selectors.EVENT_READ, b)
            sel.register(b, selectors.EVENT_READ, a)
            while not self._stop.is_set():
                for key, _ in sel.select(timeout=0.05):
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    if not data:
                        return
                    key.data.sendall(data)

    def close(self) -> None:
        self._stop.set()
        self._accept_thread.join(5)
        for thread in self._threads:
            thread.join(5)
        for sock in [self._listener, *self._sockets]:
            sock.close()


@contextlib.contextmanager
def faulty_proxy(hms: EmbeddedMetastore, faults: list[str]) -> Iterator[FaultyProxy]:
    proxy = FaultyProxy(hms.port, faults)
    try:
        yield proxy
    finally:
        proxy.close()


# ---------------------------------------------------------------- without a server


@pytest.mark.parametrize(
    "uri",
    [
        "thrift://127.0.0.1:9083",
        "thrift://hms.example.com:1",
        "thrift://[::1]:9083",
        "thrift://h:65535/",
    ],
)
def test_parse_accepts_thrift_host_port(uri: str) -> None:
    host, port = parse_metastore_uri(uri)
    assert host in uri and str(port) in uri


@pytest.mark.parametrize(
    "uri",
    [
        "",
        "127.0.0.1:9083",
        "http://h:9083",
        "thrift://h",
        "thrift://:9083",
        "thrift://h:0",
        "thrift://h:99999",
        "thrift://h:90x",
        "thrift://u:p@h:9083",
        "thrift://h:9083/db",
        "thrift://h:9083?x=1",
        "thrift://h:9083,h2:9083",
    ],
)
def test_parse_rejects_everything_else(uri: str) -> None:
    with pytest.raises(InvalidRequestError, match="thrift://host:9083"):
        parse_metastore_uri(uri)


def test_closed_port_is_unavailable_quickly_after_backoff() -> None:
    port = free_port()
    slept: list[float] = []
    client = MetastoreClient(
        f"thrift://127.0.0.1:{port}", retries=3, backoff_s=0.01, sleep=slept.append
    )
    started = time.monotonic()
    with client, pytest.raises(MetastoreUnavailableError) as caught:
        client.get_all_databases()
    assert time.monotonic() - started < 2.0
    assert f"thrift://127.0.0.1:{port} unreachable" in str(caught.value)
    assert slept == [0.01, 0.02, 0.04]  # exponential, then give up


def test_bad_arguments_are_rejected_before_any_call() -> None:
    with MetastoreClient(f"thrift://127.0.0.1:{free_port()}") as client:
        with pytest.raises(InvalidRequestError):
            client.get_partition_names("db", "t", max=40000)
        with pytest.raises(InvalidRequestError):
            list(client.iter_partitions("db", "t", batch_size=0))
    with pytest.raises(InvalidRequestError):
        MetastoreClient("thrift://h:1", retries=-1)


# ---------------------------------------------------------------- against the real HMS


def test_unknown_objects_are_not_found(hms_client: MetastoreClient) -> None:
    with pytest.raises(NotFoundError, match="database no_such_db"):
        hms_client.get_database("no_such_db")
    with pytest.raises(NotFoundError, match="table default.no_such_table"):
        hms_client.get_table("default", "no_such_table")
    with pytest.raises(NotFoundError, match="table no_such_db.t"):
        hms_client.get_table("no_such_db", "t")
    with pytest.raises(NotFoundError, match="database no_such_db"):
        hms_client.get_table_objects_by_name("no_such_db", ["t"])
    with pytest.raises(NotFoundError, match="table default.no_such_table"):
        hms_client.get_partition_names("default", "no_such_table")
    with pytest.raises(NotFoundError, match="table default.no_such_table"):
        hms_client.get_partitions_by_names("default", "no_such_table", ["a=1"])
    with pytest.raises(NotFoundError, match="function default.nope"):
        hms_client.get_function("default", "nope")
    # HMS 2.3 reports this one as a MetaException wrapping a NullPointerException.
    with pytest.raises(NotFoundError, match="database no_such_db"):
        hms_client.call("drop_database", "no_such_db", True, True, what="database no_such_db")
    # Unknown databases list as empty rather than failing: HMS's choice, kept.
    assert hms_client.get_all_tables("no_such_db") == []


def test_other_server_errors_are_metastore_errors(hms_client: MetastoreClient) -> None:
    with pytest.raises(MetastoreError, match="cannot be accessed"):
        hms_client.get_config_value("not.a.hive.key", "x")
    hms_client.call("create_role", hms_thrift.Role(roleName="dup_role", ownerName="t"))
    try:
        # Arrives as a TApplicationException (internal error), not a MetaException.
        with pytest.raises(MetastoreError, match="create_role"):
            hms_client.call("create_role", hms_thrift.Role(roleName="dup_role", ownerName="t"))
        assert "dup_role" in hms_client.get_role_names()  # the connection still works
    finally:
        hms_client.call("drop_role", "dup_role")


def test_a_dropped_connection_is_replaced_and_the_read_retried(hms: EmbeddedMetastore) -> None:
    slept: list[float] = []
    with (
        faulty_proxy(hms, ["drop", "drop"]) as proxy,
        MetastoreClient(proxy.uri, retries=3, backoff_s=0.01, sleep=slept.append) as client,
    ):
        assert "default" in client.get_all_databases()
        assert proxy.connections == 3 and slept == [0.01, 0.02]
        # The healthy third connection is kept for the next call.
        assert client.get_database("default").name == "default"
        assert proxy.connections == 3


def test_a_stalled_read_times_out_and_is_retried(hms: EmbeddedMetastore) -> None:
    with (
        faulty_proxy(hms, ["stall"]) as proxy,
        MetastoreClient(proxy.uri, timeout_s=0.3, retries=1, backoff_s=0) as client,
    ):
        started = time.monotonic()
        assert client.get_database("default").name == "default"
        assert 0.3 <= time.monotonic() - started < 5 and proxy.connections == 2


def test_writes_are_not_retried_once_sent(hms: EmbeddedMetastore) -> None:
    db = hms_thrift.Database(
        name="never_retried",
        description="",
        parameters={},
        locationUri=f"file:{hms.warehouse_dir}/never_retried.db",
    )
    with (
        faulty_proxy(hms, ["drop"]) as proxy,
        MetastoreClient(proxy.uri, retries=3, backoff_s=0) as client,
    ):
        with pytest.raises(MetastoreUnavailableError, match="create_database failed after 1"):
            client.call("create_database", db)
        assert proxy.connections == 1


def test_iter_partitions_fetches_names_then_batches(
    hms_client: MetastoreClient, hms: EmbeddedMetastore
) -> None:
    db = "client_batches"
    location = f"file:{hms.warehouse_dir}/{db}.db"
    hms_client.call(
        "create_database",
        hms_thrift.Database(name=db, description="", locationUri=location, parameters={}),
    )
    try:
        table = thrift_table(
            db,
            "t",
            f"{location}/t",
            columns=[("x", "int")],
            partition_keys=[("p", "int"), ("q", "string")],
        )
        hms_client.call("create_table", table)
        values = [(str(i), f"v{i % 3}") for i in range(7)]
        assert hms_client.call("add_partitions", thrift_partitions(table, values)) == 7
        names = hms_client.get_partition_names(db, "t")
        assert len(names) == 7 and "p=3/q=v0" in names
        batched = list(hms_client.iter_partitions(db, "t", batch_size=3))
        assert sorted(tuple(p.values) for p in batched) == sorted(values)
        assert {p.sd.location for p in batched} == {f"{location}/t/{n}" for n in names}
        assert hms_client.get_partition_names(db, "t", max=2) == names[:2]
        assert [p.values for p in hms_client.get_partitions_ps(db, "t", ["3"])] == [["3", "v0"]]
        assert hms_client.get_partition_names_ps(db, "t", ["", "v1"]) == sorted(
            n for n in names if n.endswith("q=v1")
        )
        assert hms_client.get_partition_by_name(db, "t", "p=5/q=v2").values == ["5", "v2"]
        with pytest.raises(NotFoundError, match="partition client_batches.t/p=99/q=x"):
            hms_client.get_partition_by_name(db, "t", "p=99/q=x")
    finally:
        hms_client.call("drop_database", db, True, True)
