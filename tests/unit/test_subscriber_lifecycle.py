"""CatalogSubscriber's lifecycle: LATENT -> STARTED -> CLOSED, never started again."""

from __future__ import annotations

import pytest

from subscriber.api import CatalogSubscriber, Lifecycle
from subscriber.protocol.errors import CatalogTimeoutError, ConflictError, InvalidRequestError
from subscriber.sockets import TransportConfig

pytestmark = pytest.mark.timeout(30)
NOWHERE = "tcp://127.0.0.1:9"  # nothing answers: the thread just keeps trying


def test_start_close_then_start_again_raises() -> None:
    sub = CatalogSubscriber(NOWHERE)
    assert sub.state is Lifecycle.LATENT
    assert sub.start() is sub and sub.start() is sub  # idempotent while started
    assert sub.state is Lifecycle.STARTED
    sub.close()
    sub.close()  # idempotent
    assert sub.state is Lifecycle.CLOSED
    with pytest.raises(ConflictError, match="closed"):
        sub.start()
    with pytest.raises(ConflictError, match="closed"), sub:
        pass


def test_close_before_start_is_final_too() -> None:
    sub = CatalogSubscriber(NOWHERE)
    sub.close()
    assert sub.state is Lifecycle.CLOSED
    with pytest.raises(ConflictError):
        sub.start()


def test_a_wait_on_a_closed_subscriber_ends_at_once() -> None:
    with CatalogSubscriber(NOWHERE) as sub:
        pass
    with pytest.raises(CatalogTimeoutError, match="the first sync"):
        sub.wait_synced(timeout=60)


def test_the_transport_takes_one_list_of_endpoints() -> None:
    config = TransportConfig(endpoints=("tcp://a:1", "tcp://b:1"))
    assert config.endpoints == ("tcp://a:1", "tcp://b:1")
    with pytest.raises(InvalidRequestError, match="at least one"):
        TransportConfig(endpoints=())
    with pytest.raises(InvalidRequestError, match="at least one"):
        CatalogSubscriber([])
