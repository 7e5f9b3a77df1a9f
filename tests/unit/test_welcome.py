"""The welcome's ``hms_uri`` (issue 23 item 8): optional, bounded, and compatible both
ways with peers built before it existed (their ``TWelcome`` has fields 1-6 only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import thriftpy2

import idl
from subscriber.protocol import codec, wire
from subscriber.protocol.errors import ProtocolError

svc = idl.catalog_service

OLD_WELCOME = """
struct TWelcome {
  1: required string service_id
  2: required string pub_endpoint
  3: required i64 version
  4: required i32 heartbeat_interval_ms
  5: optional i64 oldest_catch_up_version
  6: optional i32 protocol_version
}
"""


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``CatalogService.thrift``'s TWelcome as it was before ``hms_uri``."""
    path = Path(tmp_path_factory.mktemp("idl")) / "old_welcome.thrift"
    path.write_text(OLD_WELCOME)
    return thriftpy2.load(str(path), module_name="old_welcome_thrift")


def new_welcome(hms_uri: str | None) -> Any:
    return svc.TWelcome(
        service_id="svc-1",
        pub_endpoint="tcp://h:26501",
        version=7,
        heartbeat_interval_ms=1000,
        oldest_catch_up_version=1,
        protocol_version=svc.PROTOCOL_VERSION,
        hms_uri=hms_uri,
    )


def test_an_old_subscriber_decodes_a_new_welcome(old: Any) -> None:
    decoded = codec.unpack(old.TWelcome, codec.pack(new_welcome("thrift://hms:9083")))
    assert (decoded.service_id, decoded.pub_endpoint, decoded.version) == (
        "svc-1",
        "tcp://h:26501",
        7,
    )
    assert not hasattr(decoded, "hms_uri")


def test_a_new_subscriber_decodes_an_old_welcome(old: Any) -> None:
    sent = old.TWelcome(
        service_id="svc-1", pub_endpoint="tcp://h:26501", version=7, heartbeat_interval_ms=1000
    )
    welcome = wire.parse_welcome(codec.unpack(svc.TWelcome, codec.pack(sent)))
    assert welcome.hms_uri is None
    assert (welcome.service_id, welcome.pub_endpoint, welcome.version) == (
        "svc-1",
        "tcp://h:26501",
        7,
    )


@pytest.mark.parametrize(
    ("sent", "told"),
    [("thrift://hms.example:9083", "thrift://hms.example:9083"), (None, None), ("", None)],
)
def test_parse_welcome_passes_the_hms_uri_on(sent: str | None, told: str | None) -> None:
    decoded = codec.unpack(svc.TWelcome, codec.pack(new_welcome(sent)))
    assert wire.parse_welcome(decoded).hms_uri == told


def test_an_oversized_hms_uri_is_refused() -> None:
    fits = "thrift://" + "h" * (wire.MAX_HMS_URI - 14) + ":9083"
    assert wire.parse_welcome(new_welcome(fits)).hms_uri == fits
    with pytest.raises(ProtocolError, match="hms_uri of 1025 characters"):
        wire.parse_welcome(new_welcome(fits + "0"))


def test_a_welcome_lacking_a_required_field_is_refused() -> None:
    with pytest.raises(ProtocolError, match="lacks pub_endpoint"):
        wire.parse_welcome(svc.TWelcome(service_id="s", version=1, heartbeat_interval_ms=1))
