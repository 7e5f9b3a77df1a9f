"""The report every subscriber sends with each heartbeat, packed without thriftpy2, is
byte for byte what ``codec.pack`` makes of :func:`subscriber.requests.report`, and
catalogd reads it as such."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from subscriber import requests
from subscriber.protocol import codec

svc = requests.svc


@settings(max_examples=300, deadline=None)
@given(
    client_id=st.text(max_size=200),
    service_id=st.text(max_size=64),
    version=st.integers(-(2**63), 2**63 - 1),
)
def test_a_report_frame_is_the_packed_report(client_id: str, service_id: str, version: int) -> None:
    frame = requests.report_frame(client_id, service_id, version)
    assert frame == codec.pack(requests.report(client_id, service_id, version))
    report = codec.unpack(svc.TRequest, frame).report
    assert (report.client_id, report.service_id, report.applied_version) == (
        client_id,
        service_id,
        version,
    )
