"""The HA lease decisions and role states (catalogd.ha.lease), exhaustively.

Every combination of a small lease-row space is checked against the rules, and a
simulation of two and three processes with arbitrary pauses, failed renewals and
step orders checks the safety property HA exists for: at no instant may two
processes both be allowed to publish, and epochs only grow.
"""

from __future__ import annotations

import itertools
import random

import pytest

from catalogd.ha.lease import (
    SAFETY,
    Claim,
    Decision,
    LeaseRow,
    Outcome,
    Role,
    RoleState,
    decide,
    release,
)

pytestmark = pytest.mark.timeout(60)

ME = Claim("me", "tcp://me:26500", "tcp://me:26502")
LEASE_US = 1_000_000
NOW = 10_000_000

HOLDERS = ["", "me", "other"]
EPOCHS = [0, 1, 2]
EXPIRIES = [0, NOW - 1, NOW, NOW + 1, NOW + LEASE_US]
MINE = [None, 0, 1, 2]


@pytest.mark.parametrize(
    ("holder", "epoch", "expires", "my_epoch"),
    list(itertools.product(HOLDERS, EPOCHS, EXPIRIES, MINE)),
)
def test_decide_follows_the_rules(holder: str, epoch: int, expires: int, my_epoch: int | None):
    row = LeaseRow(holder, epoch, expires, "e", "a")
    decision = decide(row, ME, my_epoch, NOW, LEASE_US)
    live = bool(holder) and expires > NOW
    if my_epoch is not None:
        if holder == "me" and epoch == my_epoch:
            assert decision == Decision(
                Outcome.RENEWED,
                LeaseRow("me", epoch, NOW + LEASE_US, ME.endpoint, ME.admin),
                True,
            )
        else:
            assert decision == Decision(Outcome.LOST, row, False)
    elif not live or holder == "me":  # expired, or our own claim not taken up
        assert decision == Decision(
            Outcome.ACQUIRED, LeaseRow("me", epoch + 1, NOW + LEASE_US, ME.endpoint, ME.admin), True
        )
    else:
        assert decision == Decision(Outcome.HELD, row, False)
    # Whatever happened: the epoch never goes down, a write always makes us the holder.
    assert decision.row.epoch >= epoch
    if decision.write:
        assert decision.row.holder == "me" and decision.row.expires_us == NOW + LEASE_US


@pytest.mark.parametrize(
    ("holder", "epoch", "my_epoch"), list(itertools.product(HOLDERS, EPOCHS, MINE))
)
def test_release_only_by_the_holder(holder: str, epoch: int, my_epoch: int | None) -> None:
    row = LeaseRow(holder, epoch, NOW + LEASE_US, "e", "a")
    decision = release(row, ME, my_epoch)
    if holder == "me" and epoch == my_epoch:
        assert decision.write and decision.row == LeaseRow("me", epoch, 0, "e", "a")
        # Released: anyone acquires at once, under the next epoch.
        after = decide(decision.row, Claim("b", "", ""), None, NOW, LEASE_US)
        assert after.outcome is Outcome.ACQUIRED and after.row.epoch == epoch + 1
    else:
        assert not decision.write and decision.row == row


def test_decide_rejects_a_non_positive_lease() -> None:
    with pytest.raises(ValueError):
        decide(LeaseRow(), ME, None, NOW, 0)


def _decision(outcome: Outcome, epoch: int = 1) -> Decision:
    return Decision(outcome, LeaseRow("me", epoch, NOW + LEASE_US, "e", "a"), True)


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("outcome", list(Outcome))
@pytest.mark.parametrize("late", [False, True])
def test_role_transitions(role: Role, outcome: Outcome, late: bool) -> None:
    start = RoleState(role, 1 if role is not Role.STANDBY else None, 5.0)
    started = 6.0 if late else 4.0  # the renewal began after / before the deadline
    new = start.after(_decision(outcome), started, 1.0)
    if role is Role.FENCED:
        assert new.role is Role.FENCED  # fenced for good
    elif outcome in (Outcome.ACQUIRED, Outcome.RENEWED):
        if role is Role.ACTIVE and late:
            assert new.role is Role.FENCED
        else:
            assert new.role is Role.ACTIVE
            assert new.valid_until == started + SAFETY
            assert new.may_publish(started) and not new.may_publish(started + SAFETY)
    elif outcome in (Outcome.LOST, Outcome.RELEASED):
        assert new.role is Role.FENCED and not new.may_publish(started)
    else:
        assert new.role is role  # HELD: nothing changes but what we know of the lease
    assert new.lease.holder == "me"


def test_a_slow_acquisition_is_not_taken_up() -> None:
    acquired = _decision(Outcome.ACQUIRED, epoch=4)
    fast = RoleState().after(acquired, 1.0, 1.0, finished=1.0 + SAFETY / 2)
    assert fast.role is Role.ACTIVE and fast.epoch == 4
    slow = RoleState().after(acquired, 1.0, 1.0, finished=1.0 + SAFETY / 2 + 0.01)
    assert slow.role is Role.STANDBY and slow.epoch is None and slow.lease.epoch == 4
    # The next step takes the (still live) claim again, under a new epoch.
    again = decide(acquired.row, ME, None, NOW, LEASE_US)
    assert again.outcome is Outcome.ACQUIRED and again.row.epoch == 5
    # A slow renewal keeps the role: its deadline counts from its start anyway.
    renewed = RoleState(Role.ACTIVE, 4, 2.0).after(
        _decision(Outcome.RENEWED, 4), 1.5, 1.0, finished=3.0
    )
    assert renewed.role is Role.ACTIVE and not renewed.may_publish(3.0)


def test_tick_fences_an_active_at_its_deadline() -> None:
    state = RoleState(Role.ACTIVE, 3, 10.0)
    assert state.tick(9.999) is state and state.may_publish(9.999)
    fenced = state.tick(10.0)
    assert fenced.role is Role.FENCED and not fenced.may_publish(10.0)
    assert RoleState().tick(1e9).role is Role.STANDBY


# -- the simulation ---------------------------------------------------------------------


class _Node:
    def __init__(self, name: str) -> None:
        self.claim = Claim(name, name, name)
        self.state = RoleState()
        self.paused_until = 0.0


def _simulate(seed: int, nodes: int, lease_s: float, renew_s: float) -> int:
    """Random steps, pauses and database outages; returns how many takeovers happened."""
    rng = random.Random(seed)
    row = LeaseRow()
    group = [_Node(f"n{i}") for i in range(nodes)]
    next_step = [rng.uniform(0, renew_s) for _ in group]
    db_down_until = 0.0
    now = 0.0
    epochs_seen = [0]
    for _ in range(3000):
        i = min(range(nodes), key=lambda k: next_step[k])
        now = next_step[i]
        node = group[i]
        # Safety at every instant we look: at most one process may publish.
        publishers = [n for n in group if n.state.tick(now).may_publish(now)]
        assert len(publishers) <= 1, f"seed {seed}: two publishers at t={now:.3f}"
        if publishers:
            assert publishers[0].state.epoch == row.epoch
        if now < node.paused_until:
            next_step[i] = node.paused_until
            continue
        roll = rng.random()
        if roll < 0.02:
            node.paused_until = now + rng.uniform(0, 3 * lease_s)  # SIGSTOP
        elif roll < 0.03:
            db_down_until = now + rng.uniform(0, 2 * lease_s)
        started = now
        node.state = node.state.tick(now)
        if now >= db_down_until:
            # The transaction reaches the database a little later than it began.
            db_now = now + rng.uniform(0, 0.05)
            decision = decide(
                row,
                node.claim,
                node.state.epoch if node.state.role is Role.ACTIVE else None,
                int(db_now * 1e6),
                int(lease_s * 1e6),
            )
            if decision.write:
                row = decision.row
            finished = started + rng.choice([0.0, 0.01, 0.3, 0.6])  # blocked on a lock
            node.state = node.state.after(decision, started, lease_s, finished)
            epochs_seen.append(row.epoch)
        if node.state.role is Role.FENCED and rng.random() < 0.5:
            node.state = RoleState()  # restarted by systemd as a standby
        next_step[i] = now + renew_s * rng.uniform(0.8, 1.2)
    assert epochs_seen == sorted(epochs_seen)
    return row.epoch


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("nodes", [2, 3])
def test_simulated_cluster_never_has_two_publishers(seed: int, nodes: int) -> None:
    epochs = _simulate(seed, nodes, lease_s=1.0, renew_s=0.25)
    assert epochs >= 1  # somebody became active


# -- the takeover renumbering (catalogd.core.catalog.Catalog.skip_to) ----------------------


def test_skip_to_renumbers_everything_above_the_mark() -> None:
    from catalogd.core.catalog import Catalog
    from subscriber.protocol.errors import CatalogError

    catalog = Catalog(version=10)
    catalog.commit({"DATABASE:a": b"1", "DATABASE:b": b"2", "DATABASE:c": b"3"})
    catalog.commit({"DATABASE:b": None, "DATABASE:a": b"1'"})
    before = [(e.key, e.payload) for e in catalog.live_entries()]
    catalog.skip_to(1000)
    entries = list(catalog.live_entries())
    assert [(e.key, e.payload) for e in entries] == before  # same objects, same order
    assert [e.version for e in entries] == [1001, 1002]
    assert catalog.version == catalog.floor == 1002
    assert catalog.get("DATABASE:b") is None  # tombstones gone: nobody can catch up
    with pytest.raises(CatalogError):
        catalog.delta_since(1000)
    delta = catalog.commit({"DATABASE:d": b"4"})
    assert (delta.from_version, delta.to_version) == (1002, 1003)


def test_metrics_expose_the_role() -> None:
    from catalogd.metrics import Metrics

    metrics = Metrics()
    metrics.set_role("standby")
    metrics.set_role("active")
    value = metrics.registry.get_sample_value
    assert value("catalogd_ha_role", {"role": "active"}) == 1
    assert value("catalogd_ha_role", {"role": "standby"}) == 0
    assert value("catalogd_ha_role", {"role": "fenced"}) == 0
