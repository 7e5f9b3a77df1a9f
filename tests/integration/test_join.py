"""Joining with no fixed wait, over real sockets: the subscription itself brings the first
heartbeat, and a small catalog comes whole in the welcome (no snapshot request)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import zmq
from polling import wait_until

from catalogd.server.thread import CatalogServer, ServerConfig
from subscriber.api import CatalogSubscriber
from subscriber.protocol import wire
from subscriber.protocol.messages import Heartbeat

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server() -> Iterator[CatalogServer]:
    # A heartbeat interval far beyond the test: any heartbeat seen after the first one
    # answers a subscription.
    config = ServerConfig(
        bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*", heartbeat_interval_s=600
    )
    srv = CatalogServer(config).start()
    yield srv
    srv.close()


def test_a_subscription_arriving_brings_a_heartbeat_at_once(server: CatalogServer) -> None:
    wait_until(lambda: server.stats.heartbeats >= 1, what="the first heartbeat")
    context = zmq.Context()
    sub = context.socket(zmq.SUB)
    try:
        for prefix in wire.subscriptions(["a"]):  # no hello: the subscription alone
            sub.setsockopt(zmq.SUBSCRIBE, prefix)
        sub.connect(server.pub_endpoint)
        assert sub.poll(30_000), "no heartbeat after subscribing"
        beat = wire.parse_publication(*wire.split_publication(sub.recv()))
        assert isinstance(beat, Heartbeat) and beat.service_id == server.service_id
    finally:
        sub.close(linger=0)
        context.term()


@pytest.mark.parametrize("databases", [None, ["a"]])
def test_an_empty_selection_joins_without_a_snapshot_request(
    server: CatalogServer, databases: list[str] | None
) -> None:
    if databases:
        server.commit({"TABLE:other.t": b"t"}).result(10)  # outside the filter
    with CatalogSubscriber(server.endpoint, databases=databases) as sub:
        sub.start()
        sub.wait_synced(30)
        assert sub.version == server.submit(lambda c: c.version).result(10)
        assert sub.service_id == server.service_id
    assert server.stats.snapshots == 0  # the welcome carried it


def test_a_change_during_the_join_is_not_lost(server: CatalogServer) -> None:
    # The welcome's snapshot is at version V; a delta published before the SUB is live
    # is caught up (the first heartbeat shows the gap), never missed.
    with CatalogSubscriber(server.endpoint) as sub:
        sub.start()
        published = server.commit({"TABLE:a.t": b"t"}).result(10)
        sub.wait_for_version(published.to_version, 30)
        assert sub.cache_view().get("TABLE:a.t") is not None
