"""The state store against real databases: SQLite, the local PostgreSQL and MariaDB.

Every test runs once per backend, each time in a database of its own (random
name, dropped afterwards). The kill -9 test reserves versions in a child
process, SIGKILLs it mid-burst and checks the reopened mark covers every
version the child reported reserved.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from support.databases import scratch_database

from catalogd.core.cache_pools import CacheMark, CachePool
from catalogd.state.schema import LATEST, schema_version
from catalogd.state.store import StateStore, sqlite_url
from subscriber.protocol.errors import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    UnavailableError,
)

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgresql", marks=pytest.mark.postgres),
        pytest.param("mysql", marks=pytest.mark.mysql),
    ]
)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty database of its own on one backend."""
    if request.param == "sqlite":
        yield sqlite_url(str(tmp_path / "state.db"))
        return
    with scratch_database(request.param, "catalogd_state") as url:
        yield url


@pytest.fixture
def store(db_url: str) -> Iterator[StateStore]:
    with StateStore.open(db_url, block=10) as opened:
        yield opened


# ---------------------------------------------------------------- schema


def test_schema_is_created_once_and_reopened_idempotently(db_url: str) -> None:
    with StateStore.open(db_url) as first:
        assert first.high_water_mark() == 0
        first.add_pool("kept")
    with StateStore.open(db_url) as again:  # upgrade is a no-op; data stays
        assert [p.name for p in again.list_pools()] == ["kept"]
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.select(schema_version.c.version)).scalars().all() == [LATEST]
    finally:
        engine.dispose()


def test_newer_schema_is_refused(db_url: str) -> None:
    StateStore.open(db_url).close()
    engine = sa.create_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(schema_version.update().values(version=LATEST + 1))
    finally:
        engine.dispose()
    with pytest.raises(ConflictError, match="newer"):
        StateStore.open(db_url)


# ---------------------------------------------------------------- the version mark


def test_reserve_persists_blocks_and_never_goes_down(db_url: str) -> None:
    with StateStore.open(db_url, block=100) as store:
        assert store.reserve(1) == 100
        assert store.high_water_mark() == 100
        assert store.reserve(100) == 100  # inside the block: nothing written
        assert store.reserve(101) == 200
        assert store.high_water_mark() == 200
        with pytest.raises(InvalidRequestError):
            store.reserve(-1)
    with StateStore.open(db_url, block=1) as exact:
        assert exact.high_water_mark() == 200
        assert exact.reserve(5) == 200  # a lower request never lowers the mark
        assert exact.reserve(201) == 201
        assert exact.reserve(202) == 202


def test_a_second_writer_cannot_lower_the_mark(db_url: str) -> None:
    with StateStore.open(db_url, block=1) as a, StateStore.open(db_url, block=1) as b:
        assert a.reserve(1000) == 1000
        assert b.reserve(7) == 1000
        assert b.reserve(1500) == 1500
        assert a.reserve(1001) == 1500


def test_concurrent_reserves_from_threads(store: StateStore) -> None:
    errors: list[BaseException] = []

    def run(offset: int) -> None:
        try:
            for v in range(offset, 400, 4):
                assert store.reserve(v) >= v
        except BaseException as exc:  # noqa: BLE001 -- reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,), name=f"reserve-{i}") for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert store.high_water_mark() >= 399


_CHILD = """
import sys
from catalogd.state.store import StateStore
store = StateStore.open(sys.argv[1], block=int(sys.argv[2]))
version = 0
while True:
    version += 1
    store.reserve(version)
    print(version, flush=True)
"""


@pytest.mark.parametrize("block", [1, 7])
def test_mark_survives_kill_9_in_a_burst(db_url: str, block: int) -> None:
    StateStore.open(db_url).close()  # schema first, so the child starts reserving at once
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, db_url, str(block)],
        stdout=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    reported = 0
    try:
        reported = _read_until(child, at_least=150, deadline_s=60)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        assert child.stdout is not None
        # Lines written before the kill count too: each was printed after reserve returned.
        for line in child.stdout.read().split(b"\n"):
            if line.strip().isdigit():
                reported = max(reported, int(line))
        child.stdout.close()
    assert reported >= 150
    with StateStore.open(db_url) as reopened:
        assert reopened.high_water_mark() >= reported


def _read_until(child: subprocess.Popen[bytes], *, at_least: int, deadline_s: float) -> int:
    """Read the child's reported versions until one reaches ``at_least``."""
    assert child.stdout is not None
    fd = child.stdout.fileno()
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + deadline_s
    buffer, last = b"", 0
    try:
        while last < at_least:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or child.poll() is not None:
                raise AssertionError(f"child reported only up to {last} (exit {child.poll()})")
            if not selector.select(remaining):
                continue
            chunk = os.read(fd, 65536)
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                last = max(last, int(line))
    finally:
        selector.close()
    return last


# ---------------------------------------------------------------- cache pools


def test_pool_lifecycle_and_errors(db_url: str) -> None:
    with StateStore.open(db_url) as store:
        assert store.add_pool("Hot", owner="alice", limit_bytes=1 << 30) == CachePool(
            "hot", "alice", 1 << 30
        )
        store.add_pool("cold")
        with pytest.raises(ConflictError, match="'hot' already exists"):
            store.add_pool("HOT")
        for bad in ("", "two words", "tab\there"):
            with pytest.raises(InvalidRequestError):
                store.add_pool(bad)
        with pytest.raises(InvalidRequestError, match="between 0"):
            store.add_pool("neg", limit_bytes=-1)
        with pytest.raises(InvalidRequestError):
            store.alter_pool("hot", limit_bytes=-5)
        with pytest.raises(NotFoundError, match="'nope'"):
            store.alter_pool("nope", owner="x")
        with pytest.raises(NotFoundError, match="'nope'"):
            store.remove_pool("nope")
        assert store.alter_pool("HOT", limit_bytes=None) == CachePool("hot", "alice", None)
        assert store.alter_pool("hot", owner="bob") == CachePool("hot", "bob", None)
        assert store.alter_pool("hot") == CachePool("hot", "bob", None)
        assert store.list_pools() == [CachePool("cold"), CachePool("hot", "bob", None)]
    with StateStore.open(db_url) as reopened:  # persisted
        assert [p.name for p in reopened.list_pools()] == ["cold", "hot"]
        assert reopened.remove_pool("cold") == CachePool("cold")
        assert reopened.list_pools() == [CachePool("hot", "bob", None)]


def test_cache_marks_and_the_conflict_of_removing_a_pool_in_use(store: StateStore) -> None:
    store.add_pool("hot")
    store.add_pool("warm")
    with pytest.raises(NotFoundError, match="'nope'"):
        store.mark_cached("sales", "orders", None, "nope")
    with pytest.raises(InvalidRequestError):
        store.mark_cached("sales", "orders", "not a spec", "hot")
    with pytest.raises(InvalidRequestError):
        store.mark_cached("", "orders", None, "hot")
    table = store.mark_cached("Sales", "Orders", None, "HOT")
    assert table == CacheMark("sales", "orders", None, "hot")
    part = store.mark_cached("sales", "orders", "DT=2024-01-01/region=eu", "hot")
    assert part.partition == "dt=2024-01-01/region=eu"
    store.mark_cached("sales", "customers", None, "warm")
    store.mark_cached("sales", "customers", None, "hot")  # moves, no duplicate
    assert [m.display_name for m in store.list_cached("hot")] == [
        "sales.customers",
        "sales.orders",
        "sales.orders (dt=2024-01-01/region=eu)",
    ]
    assert store.list_cached("warm") == []
    with pytest.raises(NotFoundError):
        store.list_cached("nope")

    with pytest.raises(ConflictError) as refused:
        store.remove_pool("hot")
    message = str(refused.value)
    assert "in use by 3 cached tables or partitions" in message
    assert "sales.orders" in message and "sales.customers" in message

    assert store.unmark_cached("sales", "orders", "dt=2024-01-01/region=eu") == [part]
    assert store.unmark_cached("sales", "orders", "dt=2024-01-01/region=eu") == []
    store.mark_cached("sales", "orders", "dt=2024-01-02/region=eu", "hot")
    removed = store.unmark_cached("SALES", "orders", None)  # the table and its partitions
    assert [m.partition for m in removed] == [None, "dt=2024-01-02/region=eu"]
    assert [m.display_name for m in store.list_cached()] == ["sales.customers"]
    store.unmark_cached("sales", "customers", None)
    assert store.remove_pool("hot") == CachePool("hot")


# ---------------------------------------------------------------- audit log


def test_audit_log_newest_first(store: StateStore) -> None:
    start = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    for i in range(5):
        store.record_admin(
            "refresh",
            {"table": f"sales.t{i}", "partition": None},
            "alice",
            "ok",
            100 + i,
            start + timedelta(seconds=i),
        )
    store.record_admin(
        "cache-pool-remove",
        {"name": "hot"},
        None,
        "CONFLICT: in use",
        None,
        start + timedelta(seconds=9),
    )
    newest = store.audit(limit=3)
    assert [r.command for r in newest] == ["cache-pool-remove", "refresh", "refresh"]
    assert newest[0].requester is None and newest[0].version is None
    assert newest[0].outcome == "CONFLICT: in use"
    assert newest[1].args == {"table": "sales.t4", "partition": None}
    assert newest[1].at == start + timedelta(seconds=4)  # microseconds kept, UTC
    assert newest[1].version == 104
    assert len(store.audit()) == 6
    with pytest.raises(InvalidRequestError):
        store.audit(limit=0)
    with pytest.raises(InvalidRequestError, match="not JSON"):
        store.record_admin("refresh", {"when": object()}, None, "ok", None, start)


# ---------------------------------------------------------------- unreachable databases


@pytest.mark.parametrize(
    "template",
    [
        pytest.param(
            "postgresql+psycopg://postgres:s3cret@127.0.0.1:{port}/x", marks=pytest.mark.postgres
        ),
        pytest.param("mysql+pymysql://root:s3cret@127.0.0.1:{port}/x", marks=pytest.mark.mysql),
    ],
)
def test_unreachable_database_is_unavailable_without_leaking_the_password(template: str) -> None:
    from catalogd.addresses import free_port

    port = free_port()
    with pytest.raises(UnavailableError) as caught:
        StateStore.open(template.format(port=port), connect_timeout_s=2)
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_bad_urls_are_invalid_requests(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequestError):
        StateStore.open("not a url")
    with pytest.raises(InvalidRequestError):
        StateStore.open("nosuchdb+driver://x/y")
    with pytest.raises(InvalidRequestError):
        StateStore.open(sqlite_url(str(tmp_path / "s.db")), block=0)
    with pytest.raises(UnavailableError, match="unable to open"):
        StateStore.open(sqlite_url(str(tmp_path / "missing" / "dir" / "s.db")))
