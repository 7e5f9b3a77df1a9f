"""HA end to end: two ``catalogd serve --ha`` processes, one PostgreSQL state database.

Real processes, a real HMS (the session's embedded one; changes found by polling),
real PostgreSQL in a database of this test's own. Leases are short (1.5 s, renewed
every 0.3 s) so each failover costs a second or two. Checked:

* ``kill -9`` of the active during a burst of admin and HMS changes: the standby
  takes over, every subscriber (given both endpoints) ends equal to HMS, and the
  versions each one saw only grew; an on-demand subscriber beside them moves to the
  new active and reads what HMS holds (nothing cached from the old one outlives it);
* SIGSTOP of the active for longer than the lease, then SIGCONT: the old active
  exits (fenced) without publishing; no subscriber sees an old-service version
  after its first one from the new active;
* the state database's sessions killed under both (``pg_terminate_backend``): the
  pool reconnects, exactly one stays active, service continues;
* the state database *server* stopped for longer than the lease and started again
  (a private PostgreSQL run with ``pg_ctl`` in a temporary directory, never the
  machine's): the active fences itself, nobody is active while the database is
  down, the standby takes over once it is back;
* SIGTERM of the active hands the lease over at once (well before it would expire).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from polling import wait_until
from support.catalogd_process import CatalogdProcess

import idl
from catalogd.addresses import free_port
from catalogd.admin.client import AdminClient, response_dict
from catalogd.hms.builders import thrift_table
from catalogd.hms.client import MetastoreClient
from subscriber.api import CatalogSubscriber
from subscriber.protocol.errors import CatalogError

pytestmark = [pytest.mark.hms, pytest.mark.postgres, pytest.mark.timeout(300)]

hms_thrift = idl.hive_metastore
Cmd = idl.catalog_service.TAdminCommand
POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/{db}"
EXIT_FENCED = 75


def _execute(statement: str) -> None:
    engine = sa.create_engine(POSTGRES.format(db="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(statement))
    finally:
        engine.dispose()


@pytest.fixture
def state_db() -> Iterator[str]:
    name = f"catalogd_ha_e2e_{secrets.token_hex(4)}"
    _execute(f"CREATE DATABASE {name}")
    try:
        yield name
    finally:
        _execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def hms_db(hms: Any) -> Iterator[str]:  # noqa: ANN401
    name = f"ha_{secrets.token_hex(3)}"
    with MetastoreClient(hms.uri) as client:
        client.call(
            "create_database",
            hms_thrift.Database(
                name=name,
                description="",
                parameters={},
                locationUri=f"file:{hms.warehouse_dir}/{name}.db",
            ),
        )
        for i in range(3):
            _create_table(client, hms, name, f"t{i}")
    yield name
    with MetastoreClient(hms.uri) as client:
        client.call("drop_database", name, True, True)


def _create_table(client: MetastoreClient, hms: Any, db: str, table: str) -> None:  # noqa: ANN401
    location = f"file:{hms.warehouse_dir}/{db}.db/{table}"
    client.call("create_table", thrift_table(db, table, location, columns=[("x", "int")]))


def _node(hms: Any, tmp: Path, name: str, state_db: str) -> CatalogdProcess:  # noqa: ANN401
    return CatalogdProcess(
        hms.uri,
        tmp / name,
        extra=[
            "--ha",
            "--ha-lease",
            "1.5",
            "--ha-renew-interval",
            "0.3",
            "--state-db",
            POSTGRES.format(db=state_db),
            "--change-detection",
            "poll",
            "--poll-interval",
            "0.3",
        ],
    )


@pytest.fixture
def pair(
    hms: Any,  # noqa: ANN401
    hms_db: str,
    state_db: str,
    tmp_path: Path,
) -> Iterator[tuple[CatalogdProcess, CatalogdProcess]]:
    first = _node(hms, tmp_path, "a", state_db).start()
    second = _node(hms, tmp_path, "b", state_db)
    try:
        second.start(standby=True)
        yield first, second
    finally:
        for proc in (first, second):
            proc.kill()


class _Watcher:
    """Subscribers given both endpoints, recording (service id, cache version) at every
    change and the version of each changed key.

    Events of one delta or snapshot come in key order, not version order, so the
    guarantee checked is the one the protocol makes: the cache's version and each
    key's version never go back."""

    def __init__(self, endpoints: list[str], count: int = 3) -> None:
        self.subs = [CatalogSubscriber(endpoints, stale_after_heartbeats=3) for _ in range(count)]
        self.seen: list[list[tuple[str, int]]] = [[] for _ in self.subs]
        self.keys: list[dict[str, list[int]]] = [{} for _ in self.subs]
        for sub, seen, keys in zip(self.subs, self.seen, self.keys, strict=True):
            sub.add_listener(
                lambda event, sub=sub, seen=seen, keys=keys: (
                    seen.append((sub.service_id, sub.version)),
                    keys.setdefault(event.key, []).append(event.version),
                )
            )
            sub.start()

    def __enter__(self) -> _Watcher:
        for sub in self.subs:
            sub.wait_synced(60)
        return self

    def __exit__(self, *exc: object) -> None:
        for sub in self.subs:
            sub.close()

    def all_on(self, service_id: str) -> bool:
        return all(sub.service_id == service_id and sub.is_synced for sub in self.subs)

    def assert_versions_grew(self) -> None:
        for seen, keys in zip(self.seen, self.keys, strict=True):
            versions = [v for _, v in seen]
            assert versions == sorted(versions), "a subscriber's version went back"
            for key, key_versions in keys.items():
                assert key_versions == sorted(key_versions), f"{key}'s version went back"


def _burst(admins: list[str], hms: Any, db: str, stop: threading.Event) -> threading.Thread:  # noqa: ANN401
    """Admin changes (cache pools) and HMS changes (new tables) until ``stop``."""

    def run() -> None:
        client = AdminClient(admins[0], timeout_s=2)
        i = 0
        with MetastoreClient(hms.uri) as metastore:
            while not stop.is_set():
                try:
                    client.call(Cmd.CACHE_POOL_ADD, options={"pool": f"burst{i}"})
                    if i % 3 == 0:
                        _create_table(metastore, hms, db, f"burst{i}")
                except CatalogError:
                    # The active was killed under us: try the other node, which
                    # answers itself once active, or names the active while standby.
                    client.endpoint = admins[(admins.index(client.endpoint) + 1) % 2]
                    time.sleep(0.05)
                i += 1

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _equal_to_hms(watcher: _Watcher, hms: Any, db: str, admin: str) -> None:  # noqa: ANN401
    with MetastoreClient(hms.uri) as client:
        tables = sorted(t.lower() for t in client.get_all_tables(db))
    listed = response_dict(AdminClient(admin, timeout_s=10).call(Cmd.CACHE_POOL_LIST))
    pools = sorted(p["name"] for p in listed["detail"]["pools"])

    def equal() -> bool:
        return all(
            sorted(sub.list_tables(db)) == tables
            and sorted(p.pool_name for p in sub.list_cache_pools()) == pools
            for sub in watcher.subs
        )

    wait_until(equal, timeout=60, what="every subscriber equal to HMS and the pools")


def test_kill_9_of_the_active_fails_over(
    pair: tuple[CatalogdProcess, CatalogdProcess],
    hms: Any,  # noqa: ANN401
    hms_db: str,
) -> None:
    a, b = pair
    stop = threading.Event()
    # Beside the replicas, an on-demand subscriber (issue 25): it caches what it read
    # from the old active and must neither keep it past the failover nor miss a change.
    lazy = CatalogSubscriber([a.endpoint, b.endpoint], mode="on-demand", stale_after_heartbeats=3)
    with _Watcher([a.endpoint, b.endpoint]) as watcher, lazy:
        lazy.wait_synced(60)
        assert watcher.all_on(a.service_id) and lazy.service_id == a.service_id
        first_tables = lazy.list_tables(hms_db)  # fetched from a, now cached
        burst = _burst([a.admin_endpoint, b.admin_endpoint], hms, hms_db, stop)
        wait_until(lambda: min(s.version for s in watcher.subs) > a.version + 10, what="a burst")
        a.kill()
        assert all(sub.list_tables(hms_db) for sub in watcher.subs)  # reads go on
        b.wait_active(30)
        wait_until(lambda: watcher.all_on(b.service_id), timeout=30, what="failover")
        wait_until(lambda: lazy.is_synced and lazy.service_id == b.service_id, timeout=30)
        wait_until(
            lambda: min(s.version for s in watcher.subs) > b.version + 5,
            what="changes on the new active",
        )
        stop.set()
        burst.join(10)
        _equal_to_hms(watcher, hms, hms_db, b.admin_endpoint)
        watcher.assert_versions_grew()
        with MetastoreClient(hms.uri) as client:
            _create_table(client, hms, hms_db, "after_failover")  # a change b publishes
            tables = sorted(t.lower() for t in client.get_all_tables(hms_db))
        assert set(first_tables) < set(tables)
        wait_until(lambda: sorted(lazy.list_tables(hms_db)) == tables, timeout=30)
        assert lazy.get_table(f"{hms_db}.after_failover").tbl_name == "after_failover"
        # The admin CLI given the dead node's address answers nothing; given the
        # standby-turned-active it answers, with the HA facts.
        code, status, _ = b.admin("status")
        ha = status["detail"]["ha"]
        assert code == 0 and ha["role"] == "active" and ha["epoch"] == 2
        assert ha["active"]["endpoint"] == b.endpoint and ha["active"]["expires_in_s"] > 0
        assert any(p["self"] and p["role"] == "active" for p in ha["peers"]), ha["peers"]
        assert {p["admin"] for p in ha["peers"]} >= {b.admin_endpoint}


def test_sigstop_longer_than_the_lease_fences_the_old_active(
    pair: tuple[CatalogdProcess, CatalogdProcess],
    hms: Any,  # noqa: ANN401
    hms_db: str,
) -> None:
    a, b = pair
    assert a.proc is not None
    stop = threading.Event()
    with _Watcher([a.endpoint, b.endpoint], count=2) as watcher:
        burst = _burst([a.admin_endpoint, b.admin_endpoint], hms, hms_db, stop)
        wait_until(lambda: min(s.version for s in watcher.subs) > a.version + 5, what="a burst")
        a.proc.send_signal(signal.SIGSTOP)
        try:
            b.wait_active(30)
            wait_until(lambda: watcher.all_on(b.service_id), timeout=30, what="failover")
        finally:
            a.proc.send_signal(signal.SIGCONT)
        # The old active notices at once that its deadline passed, and exits.
        assert a.proc.wait(15) == EXIT_FENCED
        assert "lost the lease" in a.log_tail()
        # Changes published by the new active reach every subscriber (so each saw b).
        wait_until(
            lambda: min(s.version for s in watcher.subs) > b.version + 5,
            what="changes on the new active",
        )
        stop.set()
        burst.join(10)
        _equal_to_hms(watcher, hms, hms_db, b.admin_endpoint)
        watcher.assert_versions_grew()
        for seen in watcher.seen:
            first_new = next(i for i, (sid, _) in enumerate(seen) if sid == b.service_id)
            assert all(sid == b.service_id for sid, _ in seen[first_new:]), "old epoch seen"


def test_state_database_sessions_killed_under_both(
    pair: tuple[CatalogdProcess, CatalogdProcess],
    state_db: str,
    hms: Any,  # noqa: ANN401
    hms_db: str,
) -> None:
    a, b = pair
    with _Watcher([a.endpoint, b.endpoint], count=1) as watcher:
        for _ in range(3):
            _execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                f"WHERE datname = '{state_db}' AND pid <> pg_backend_pid()"
            )
            time.sleep(0.3)  # noqa: TID251 - spacing the outages, not waiting for readiness
        # Exactly one active afterwards (whichever), and it serves an admin change.
        actives = []
        for node in (a, b):
            if node.proc is not None and node.proc.poll() is None:
                code, status, _ = node.admin("status")
                if code == 0 and status["detail"]["ha"]["role"] == "active":
                    actives.append(node)
        assert len(actives) == 1
        client = AdminClient(a.admin_endpoint if a.proc.poll() is None else b.admin_endpoint)  # type: ignore[union-attr]
        answer = response_dict(client.call(Cmd.CACHE_POOL_ADD, options={"pool": "after_db"}))
        assert answer["status"] == "OK"
        watcher.subs[0].wait_for_version(answer["version"], 30)
        assert "after_db" in {p.pool_name for p in watcher.subs[0].list_cache_pools()}


class PrivatePostgres:
    """A throw-away PostgreSQL server (initdb + pg_ctl as the ``postgres`` user)."""

    def __init__(self, root: Path) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        if not found or shutil.which("runuser") is None:
            pytest.skip("no PostgreSQL server binaries (pg_ctl) or runuser here")
        self.bin = Path(found[-1]).parent
        self.dir = root
        self.data = root / "data"
        self.port = free_port()
        shutil.chown(root, "postgres")
        self._run("initdb", "-D", str(self.data), "--auth=trust", "-U", "postgres", "-E", "UTF8")

    def _run(self, tool: str, *args: str) -> None:
        as_postgres = [] if os.geteuid() != 0 else ["runuser", "-u", "postgres", "--"]
        subprocess.run(
            [*as_postgres, str(self.bin / tool), *args], check=True, capture_output=True, timeout=60
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "log"), "-w", "-o", options,
                  "start")  # fmt: skip

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def url(self, db: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{db}"


def test_state_database_server_restarted_under_both(
    hms: Any,  # noqa: ANN401
    hms_db: str,
    tmp_path: Path,
) -> None:
    root = Path(tempfile.mkdtemp(prefix="catalogd-pg-"))
    pg = PrivatePostgres(root)
    pg.start()
    nodes: list[CatalogdProcess] = []
    try:
        engine = sa.create_engine(pg.url("postgres"), isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text("CREATE DATABASE catalogd"))
        engine.dispose()
        url = pg.url("catalogd")
        a, b = (_node(hms, tmp_path, name, "unused") for name in ("a", "b"))
        for node in (a, b):
            node.extra[node.extra.index("--state-db") + 1] = url
        nodes += [a, b]
        a.start()
        b.start(standby=True)
        with _Watcher([a.endpoint, b.endpoint], count=2) as watcher:
            pg.stop()
            assert a.proc is not None and b.proc is not None
            # The active cannot renew: it fences itself (exit 75) once its deadline passes.
            wait_until(lambda: a.proc.poll() is not None, timeout=30, what="the active fenced")
            assert a.proc.returncode == EXIT_FENCED
            # Nobody can acquire while the database is down: the standby stays one.
            time.sleep(1.5)  # noqa: TID251 - a span of outage to be silent through
            assert b.proc.poll() is None and "now the active" not in b.log_tail(20_000)
            assert all(sub.list_tables(hms_db) for sub in watcher.subs)  # reads go on
            pg.start()
            b.wait_active(60)
            a.start(standby=True)  # what systemd's Restart= does
            wait_until(lambda: watcher.all_on(b.service_id), timeout=30, what="service resumed")
            answer = response_dict(
                AdminClient(a.admin_endpoint, timeout_s=10).call(  # the CLI follows a standby
                    Cmd.CACHE_POOL_ADD, options={"pool": "after_restart"}
                )
            )
            assert answer["status"] == "OK"
            for sub in watcher.subs:
                sub.wait_for_version(answer["version"], 30)
            watcher.assert_versions_grew()
    finally:
        for node in nodes:
            node.kill()
        with contextlib.suppress(subprocess.SubprocessError):
            pg.stop()
        shutil.rmtree(root, ignore_errors=True)


def _probe(url: str) -> tuple[int, str]:
    """(HTTP status, role) of a web probe."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())["role"]
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())["role"]


def test_sigterm_hands_over_without_waiting_for_expiry(
    hms: Any,  # noqa: ANN401
    hms_db: str,
    state_db: str,
    tmp_path: Path,
) -> None:
    slow = ["--ha-lease", "30", "--ha-renew-interval", "0.25"]  # expiry would take 30 s
    a = _node(hms, tmp_path, "a", state_db)
    b = _node(hms, tmp_path, "b", state_db)
    a.extra += slow
    b.extra += slow
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify.sock"))
    notify.settimeout(0.2)
    b.env["NOTIFY_SOCKET"] = str(tmp_path / "notify.sock")
    messages: list[str] = []

    def notified(text: str) -> bool:
        with contextlib.suppress(TimeoutError):
            messages.append(notify.recv(4096).decode())
        return any(text in m for m in messages)

    try:
        a.start()
        b.start(standby=True)
        # systemd: READY once loaded, on the standby too; STATUS says which it is.
        wait_until(lambda: notified("READY=1"), what="READY=1 from the standby")
        assert any("STATUS=standby (active: " + a.endpoint in m for m in messages), messages
        # The standby serves nothing that could diverge: its subscriber port is closed.
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", b.port), timeout=2).close()
        # Its web page answers the probes: healthy, not ready (the active is ready).
        assert _probe(b.web_url + "/healthz") == (200, "standby")
        assert _probe(b.web_url + "/readyz") == (503, "standby")
        assert _probe(a.web_url + "/readyz") == (200, "active")
        # The standby forwards admin commands: the CLI follows it to the active.
        code, answer, _ = b.admin("cache-pool", "add", "via_standby")
        assert code == 0, answer
        started = time.monotonic()
        assert a.stop() == 0
        b.wait_active(20)
        assert time.monotonic() - started < 15  # far below the 30 s lease
        assert "HA lease released" in a.log_path.read_text()
        wait_until(lambda: notified("STATUS=active (epoch 2)"), what="STATUS active")
        assert _probe(b.web_url + "/readyz") == (200, "active")
    finally:
        notify.close()
        a.kill()
        b.kill()
