"""A heartbeat read straight from its bytes is the heartbeat the general way decodes,
and anything else is left to the general way."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subscriber.protocol import codec, wire
from subscriber.protocol.errors import ProtocolError
from subscriber.protocol.heartbeat_scan import scan_heartbeat
from subscriber.protocol.messages import Heartbeat


def general(body: bytes) -> Heartbeat | None:
    """What the general way reads (None: it refuses the bytes)."""
    try:
        return wire.parse_publication(wire.TOPIC_HEARTBEAT, body)  # type: ignore[return-value]
    except ProtocolError:
        return None


@settings(max_examples=300, deadline=None)
@given(
    service_id=st.text(max_size=40),
    version=st.integers(0, 2**63 - 1),
    interval_s=st.floats(0.0, 3600.0),
    now_ms=st.integers(0, 2**62),
    report=st.booleans(),
)
def test_catalogds_heartbeats_are_scanned_as_decoded(
    service_id: str, version: int, interval_s: float, now_ms: int, report: bool
) -> None:
    topic, body = wire.heartbeat_message(service_id, version, interval_s, now_ms, report=report)
    beat = scan_heartbeat(body)
    assert beat is not None and beat == general(body)
    frame = wire.publication(topic, body)
    assert scan_heartbeat(frame, len(topic)) == beat == wire.parse_frame(frame)


def test_a_heartbeat_is_not_decoded_the_general_way(monkeypatch: pytest.MonkeyPatch) -> None:
    topic, body = wire.heartbeat_message("s", 7, 1.0, 0, report=True)

    def refuse(*args: object, **kw: object) -> None:
        raise AssertionError("decoded the general way")

    monkeypatch.setattr(codec, "unpack", refuse)
    assert wire.parse_frame(wire.publication(topic, body)) == Heartbeat("s", 7, 1.0, True)


@pytest.mark.parametrize("report", [False, True])
def test_every_mutation_is_scanned_as_decoded_or_left_to_the_general_way(report: bool) -> None:
    _, body = wire.heartbeat_message("svc-é", 42, 0.2, 1_700_000_000_000, report=report)
    mutants = [body[:cut] for cut in range(len(body))]
    mutants += [
        body + b"\x00",
        body + b"\x02\x00\x05\x01\x00",
        codec.frame(body[1:], compress_threshold=0),
    ]
    for at in range(len(body)):
        for byte in (0x00, 0x01, 0x02, 0x05, 0x08, 0x0A, 0x0B, 0x7F, 0xFF):
            mutants.append(body[:at] + bytes([byte]) + body[at + 1 :])
    for mutant in mutants:
        beat = scan_heartbeat(mutant)
        assert beat is None or beat == general(mutant), mutant.hex()
    assert scan_heartbeat(body + bytes(1 << 20)) is None  # noise after it: not copied, refused


def test_a_reported_false_field_reads_as_absent() -> None:
    # catalogd leaves report out when false; another writer may send it false.
    beat = codec.pack(idl_heartbeat(report=False))
    assert scan_heartbeat(beat) == general(beat) == Heartbeat("s", 1, 1.0, False)


def idl_heartbeat(report: bool | None) -> object:
    return wire.svc.THeartbeat(
        service_id="s", version=1, sent_at_ms=0, interval_ms=1000, report=report
    )
