"""Joining with the welcome's snapshot: no snapshot request, and still no loss."""

from __future__ import annotations

from catalogd.core.catalog import Catalog
from subscriber.protocol.delta import Entry
from subscriber.protocol.messages import Commit, DeltaPart, Heartbeat, Welcome
from subscriber.sync import ActionKind, Phase, SyncMachine


def joined(snapshot: tuple[Entry, ...] | None, version: int = 4, *, databases=None) -> SyncMachine:
    machine = SyncMachine(databases=databases)
    machine.on_connected(0.0, Welcome("s", "tcp://pub", version, None, snapshot))
    assert machine.phase is Phase.JOINING and not machine.synced
    return machine


def kinds(step) -> list[ActionKind]:
    return [a.kind for a in step.actions]


def test_the_first_heartbeat_installs_the_welcome_snapshot_without_a_request() -> None:
    machine = joined(())
    step = machine.on_heartbeat(Heartbeat("s", 4, 1.0), 0.01)
    assert step.installed and not step.actions and machine.synced
    assert machine.cache.view.version == 4 and machine.cache.view.service_id == "s"
    assert step.report is not None and step.report.version == 4  # synced: reported at once
    assert machine.lag_seconds(0.01) == 0.0


def test_entries_of_the_welcome_snapshot_are_installed_with_their_events() -> None:
    entry = Entry("DATABASE:a", 3, b"db")
    machine = joined((entry,))
    step = machine.on_heartbeat(Heartbeat("s", 4, 1.0), 0.01)
    assert [e.key for e in step.events] == ["DATABASE:a"]
    assert machine.cache.view.get("DATABASE:a") == entry


def test_a_change_published_before_the_sub_was_live_is_caught_up() -> None:
    # The welcome said version 4; two deltas went out before the subscription took
    # effect, so the first heartbeat names 6: the gap asks for a catch-up from 4.
    machine = joined(())
    step = machine.on_heartbeat(Heartbeat("s", 6, 1.0), 0.01)
    assert [(a.kind, a.from_version) for a in step.actions] == [(ActionKind.REQUEST_CATCH_UP, 4)]
    assert machine.phase is Phase.CATCHING_UP and machine.gaps == 1


def test_a_first_delta_that_follows_the_welcome_is_applied() -> None:
    catalog = Catalog(version=4)
    delta = catalog.commit({"TABLE:a.t": b"t"})
    machine = joined(())
    part = DeltaPart("s", 4, 5, "a", delta.entries, {"a": 1})
    step = machine.on_part(part, 0.01)
    assert step.installed and not step.actions
    assert machine.synced and machine.cache.view.version == 5
    assert [e.key for e in step.events] == ["TABLE:a.t"]


def test_a_first_delta_beyond_the_welcome_is_a_gap() -> None:
    machine = joined((), databases=["a"])
    step = machine.on_commit(Commit("s", 5, 6, {"a": 0}), 0.01)
    assert [(a.kind, a.from_version) for a in step.actions] == [(ActionKind.REQUEST_CATCH_UP, 4)]


def test_a_first_message_from_another_service_asks_for_a_snapshot() -> None:
    machine = joined(())  # catalogd restarted between the welcome and the first message
    step = machine.on_heartbeat(Heartbeat("t", 9, 1.0), 0.01)
    assert kinds(step) == [ActionKind.REQUEST_SNAPSHOT] and not step.installed
    assert machine.phase is Phase.SNAPSHOTTING


def test_without_a_welcome_snapshot_the_join_asks_for_one() -> None:
    machine = joined(None)
    step = machine.on_heartbeat(Heartbeat("s", 4, 1.0), 0.01)
    assert kinds(step) == [ActionKind.REQUEST_SNAPSHOT]


def test_a_new_session_forgets_the_last_welcome_snapshot() -> None:
    machine = joined(())
    machine.on_connected(1.0)  # reconnected, and this welcome carried none
    step = machine.on_heartbeat(Heartbeat("s", 4, 1.0), 1.01)
    assert kinds(step) == [ActionKind.REQUEST_SNAPSHOT]


def test_a_reconnect_to_the_same_service_takes_the_welcome_snapshot() -> None:
    machine = joined(())
    machine.on_heartbeat(Heartbeat("s", 4, 1.0), 0.01)
    machine.on_connected(1.0, Welcome("s", "tcp://pub", 7, None, (Entry("DATABASE:b", 7, b"b"),)))
    step = machine.on_heartbeat(Heartbeat("s", 7, 1.0), 1.01)
    assert step.installed and not step.actions
    assert machine.cache.view.version == 7 and machine.cache.view.get("DATABASE:b") is not None
