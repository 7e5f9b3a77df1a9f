"""The HA lease and fencing in the state store, against real PostgreSQL and MariaDB.

Two StateStore objects on one database stand for two catalogd processes. Checked:
one holder at a time, epochs that grow, every write (version reservation, pools,
marks, audit) refused to a standby and to an old active once a new one took over,
the high-water mark monotonic across the takeover, release for a graceful
handover, the keeper thread, the schema upgrade from version 1, and SQLite's refusal.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from polling import wait_until
from support.databases import POSTGRES, execute, scratch_database

from catalogd.config import Config, ConfigError, HaConfig
from catalogd.ha import node as ha_node
from catalogd.ha.keeper import LeaseKeeper
from catalogd.ha.lease import Claim, Outcome, Role
from catalogd.state import lease as lease_sql
from catalogd.state import schema
from catalogd.state.store import StateStore, sqlite_url
from subscriber.protocol.errors import NotActiveError

pytestmark = pytest.mark.timeout(120)

A = Claim("a", "tcp://a:26500", "tcp://a:26502")
B = Claim("b", "tcp://b:26500", "tcp://b:26502")


@pytest.fixture(
    params=[
        pytest.param("postgresql", marks=pytest.mark.postgres),
        pytest.param("mysql", marks=pytest.mark.mysql),
    ]
)
def db_url(request: pytest.FixtureRequest) -> Iterator[str]:
    with scratch_database(request.param, "catalogd_ha") as url:
        yield url


@pytest.fixture
def pair(db_url: str) -> Iterator[tuple[StateStore, StateStore]]:
    with StateStore.open(db_url, block=10) as a, StateStore.open(db_url, block=10) as b:
        a.enable_fencing()
        b.enable_fencing()
        yield a, b


def _become(store: StateStore, me: Claim, lease_s: float) -> Outcome:
    decision, _ = store.step_lease(me, lease_s)
    if decision.outcome in (Outcome.ACQUIRED, Outcome.RENEWED):
        store.set_epoch(decision.row.epoch)
    return decision.outcome


def _writes(store: StateStore, tag: str) -> list[object]:
    """Every kind of state write; each returns a value or raises."""
    now = datetime.now(timezone.utc)
    return [
        lambda: store.reserve(store.high_water_mark() + 1),
        lambda: store.add_pool(f"pool_{tag}"),
        lambda: store.record_admin("refresh", {"db": "x"}, "tester", "ok", 1, now),
    ]


def test_one_holder_and_fenced_writes(pair: tuple[StateStore, StateStore]) -> None:
    a, b = pair
    assert _become(a, A, 30.0) is Outcome.ACQUIRED
    assert _become(b, B, 30.0) is Outcome.HELD
    row, _ = b.read_lease()
    assert (row.holder, row.epoch, row.admin) == ("a", 1, A.admin)
    mark = a.reserve(5)
    a.add_pool("p1")
    a.mark_cached("db", "t", None, "p1")
    # The standby writes nothing, and is told where the active is.
    for write in _writes(b, "b"):
        with pytest.raises(NotActiveError) as refused:
            write()  # type: ignore[operator]
        assert refused.value.active_admin == A.admin
    assert b.high_water_mark() == mark


def test_takeover_fences_the_old_active(pair: tuple[StateStore, StateStore]) -> None:
    a, b = pair
    assert _become(a, A, 0.2) is Outcome.ACQUIRED
    old_mark = a.reserve(100)
    wait_until(lambda: not b.read_lease()[0].live(b.read_lease()[1]), timeout=10)
    assert _become(b, B, 30.0) is Outcome.ACQUIRED
    assert b.read_lease()[0].epoch == 2
    # The old active still believes it holds epoch 1: every write is refused.
    a.set_epoch(1)
    for write in _writes(a, "a"):
        with pytest.raises(NotActiveError):
            write()  # type: ignore[operator]
    decision, _ = a.step_lease(A, 0.2)
    assert decision.outcome is Outcome.LOST and not decision.write
    # The new active continues strictly above everything the old one reserved.
    new_mark = b.reserve(b.high_water_mark() + 1)
    assert new_mark > old_mark
    b.add_pool("after_takeover")


def test_members_are_listed_and_forgotten(pair: tuple[StateStore, StateStore]) -> None:
    a, b = pair
    a.touch_member(A)
    members, now_us = b.touch_member(B)
    assert [(h, e, ad) for h, e, ad, _ in members] == [
        ("a", A.endpoint, A.admin),
        ("b", B.endpoint, B.admin),
    ]
    assert all(0 <= now_us - seen < 60_000_000 for *_, seen in members)
    with a._engine.begin() as conn:  # a member silent for longer than PEER_FORGET_S
        conn.execute(sa.text("UPDATE ha_member SET seen_us = 0 WHERE holder = 'a'"))
    members, _ = b.touch_member(B)
    assert [m[0] for m in members] == ["b"]


def test_a_write_in_flight_holds_off_the_takeover(pair: tuple[StateStore, StateStore]) -> None:
    """The epoch check and the write are one transaction: a takeover waits for it."""
    a, b = pair
    assert _become(a, A, 0.2) is Outcome.ACQUIRED
    wait_until(lambda: not b.read_lease()[0].live(b.read_lease()[1]), timeout=10)
    done = threading.Event()
    outcome: list[Outcome] = []

    def take_over() -> None:
        outcome.append(_become(b, B, 30.0))
        done.set()

    with a._engine.begin() as conn:  # the old active's write, checked under epoch 1
        lease_sql.check_epoch(conn, 1)
        conn.execute(sa.text("INSERT INTO cache_pool (name) VALUES ('in_flight')"))
        thread = threading.Thread(target=take_over, daemon=True)
        thread.start()
        assert not done.wait(0.5)  # blocked on the share lock the write holds
    thread.join(10)
    assert outcome == [Outcome.ACQUIRED]
    assert "in_flight" in {p.name for p in b.list_pools()}  # committed before epoch 2
    a.set_epoch(1)
    with pytest.raises(NotActiveError):
        a.add_pool("after")


def test_release_hands_over_at_once(pair: tuple[StateStore, StateStore]) -> None:
    a, b = pair
    assert _become(a, A, 300.0) is Outcome.ACQUIRED
    assert _become(b, B, 300.0) is Outcome.HELD
    assert a.release_lease(A).outcome is Outcome.RELEASED
    assert _become(b, B, 300.0) is Outcome.ACQUIRED  # no waiting for the 300 s expiry
    with pytest.raises(NotActiveError):
        a.add_pool("late")


def test_keepers_elect_one_and_fail_over(pair: tuple[StateStore, StateStore]) -> None:
    a, b = pair
    changes: list[tuple[str, str]] = []
    lock = threading.Lock()

    def recorder(name: str):  # noqa: ANN202
        def record(old, new) -> None:  # noqa: ANN001
            with lock:
                changes.append((name, new.role.value))

        return record

    ka = LeaseKeeper(a, A, lease_s=0.6, renew_interval_s=0.1, on_change=recorder("a")).start()
    kb = LeaseKeeper(b, B, lease_s=0.6, renew_interval_s=0.1, on_change=recorder("b")).start()
    try:
        assert ka.state.role is Role.ACTIVE and kb.state.role is Role.STANDBY
        ka.check()
        with pytest.raises(NotActiveError):
            kb.check()
        ka.close()  # the active dies (no release): b takes over after the expiry
        wait_until(lambda: kb.state.role is Role.ACTIVE, timeout=10)
        kb.check()
        assert ka.state.role is Role.FENCED  # its local deadline passed
        with pytest.raises(NotActiveError):
            ka.check()
        assert ("a", "fenced") in changes and ("b", "active") in changes
        # Graceful: b releases, a fresh keeper on a's store takes over at the next step.
        kb.release()
        a.set_epoch(None)
        kc = LeaseKeeper(a, A, lease_s=60.0, renew_interval_s=0.1).start()
        assert kc.state.role is Role.ACTIVE and kc.state.epoch == 3
        kc.close()
    finally:
        ka.close()
        kb.close()


def test_schema_upgrade_adds_the_lease(db_url: str) -> None:
    engine = sa.create_engine(db_url)
    try:
        with engine.begin() as conn:  # a version-1 database, as an older catalogd left it
            schema.schema_version.create(conn)
            conn.execute(schema.schema_version.insert().values(id=1, version=1))
            schema.STEPS[1](conn)
    finally:
        engine.dispose()
    with StateStore.open(db_url) as store:
        row, now_us = store.read_lease()
        assert (row.holder, row.epoch) == ("", 0) and not row.live(now_us)
        assert store.high_water_mark() == 0


def test_sqlite_refuses_ha(tmp_path: Path) -> None:
    config = Config(ha=HaConfig(enabled=True))
    with (
        StateStore.open(sqlite_url(str(tmp_path / "s.db"))) as store,
        pytest.raises(ConfigError, match="SQLite"),
    ):
        ha_node.open_keeper(config, store, threading.Event())


@pytest.mark.postgres
def test_renew_interval_must_fit_the_lease(tmp_path: Path) -> None:
    name = f"catalogd_ha_{secrets.token_hex(4)}"
    execute(POSTGRES.format(db="postgres"), f"CREATE DATABASE {name}")
    try:
        config = Config(ha=HaConfig(enabled=True, lease_s=1.0, renew_interval_s=0.9))
        with (
            StateStore.open(POSTGRES.format(db=name)) as store,
            pytest.raises(ConfigError, match="renew_interval_s"),
        ):
            ha_node.open_keeper(config, store, threading.Event())
    finally:
        execute(POSTGRES.format(db="postgres"), f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
