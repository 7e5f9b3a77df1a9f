"""A publication is one frame, topic then body (protocol 3): split back exactly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subscriber.protocol import wire
from subscriber.protocol.delta import Delta, Entry
from subscriber.protocol.errors import ProtocolError

NAMES = st.text(st.characters(blacklist_characters="\0", blacklist_categories=["Cs"]), max_size=20)


@given(databases=st.lists(NAMES, min_size=1, max_size=4, unique=True))
def test_every_message_splits_into_its_topic_and_body(databases: list[str]) -> None:
    entries = tuple(Entry(f"TABLE:{db}.t", 2, b"object") for db in databases)
    messages = wire.delta_messages("s", Delta(1, 2, entries))
    messages.append(wire.heartbeat_message("s", 2, 0.5, 0))
    for topic, body in messages:
        frame = wire.publication(topic, body)
        assert wire.split_publication(frame) == (topic, body)
        assert wire.parse_frame(frame) == wire.parse_publication(topic, body)


@pytest.mark.parametrize(
    "frame",
    [b"", b"x", b"zz\0body", b"da", b"dno end of the name", b"i" + b"n" * 100],
)
def test_a_frame_without_a_known_topic_is_refused(frame: bytes) -> None:
    with pytest.raises(ProtocolError):
        wire.split_publication(frame)
    with pytest.raises(ProtocolError):
        wire.parse_frame(frame)


def test_a_topic_alone_splits_into_an_empty_body() -> None:
    # what a protocol-2 catalogd's topic frame is: the body follows in the next frame
    assert wire.split_publication(b"da\0") == (b"da\0", b"")
    assert wire.split_publication(b"h") == (b"h", b"")
    assert wire.parse_frame(b"da\0") is None and wire.parse_frame(b"h") is None
