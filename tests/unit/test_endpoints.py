"""catalogd endpoints as users type them, and the PUB address a welcome advertises."""

from __future__ import annotations

import pytest

from subscriber.endpoints import parse_endpoint, parse_endpoints, pub_endpoint
from subscriber.protocol.errors import InvalidRequestError


def test_host_and_port_mean_tcp_and_other_schemes_are_refused() -> None:
    assert parse_endpoint("db1:26500") == "tcp://db1:26500"
    assert parse_endpoint("ipc:///run/catalogd") == "ipc:///run/catalogd"
    assert parse_endpoints("a:1,b:2") == ("tcp://a:1", "tcp://b:2")
    for bad in ("thrift://a:1", "a", "a:70000"):
        with pytest.raises(InvalidRequestError):
            parse_endpoint(bad)


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "*", "[::]"])
def test_a_wildcard_pub_address_is_reached_where_the_welcome_came_from(wildcard: str) -> None:
    assert pub_endpoint(f"tcp://{wildcard}:26501", "tcp://db1:26500") == "tcp://db1:26501"


def test_a_named_pub_address_is_taken_as_advertised() -> None:
    assert pub_endpoint("tcp://pub.example:9", "tcp://db1:26500") == "tcp://pub.example:9"
