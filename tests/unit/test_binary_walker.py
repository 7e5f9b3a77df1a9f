"""The one Thrift binary-protocol walker (subscriber.protocol.binary), used by both the
validator and the HMS endpoint's framing."""

from __future__ import annotations

import struct

import pytest
from thriftpy2.thrift import TType

import idl
from subscriber.metastore import framing
from subscriber.protocol import binary, codec
from subscriber.protocol.binary import TYPES, TYPES_WITH_BINARY, skip
from subscriber.protocol.errors import ProtocolError

pytestmark = pytest.mark.timeout(30)
I32 = struct.Struct(">i").pack
STATUS = idl.catalog_service.TStatus


def test_type_codes_are_thriftpys() -> None:
    for name in ("STOP", "BOOL", "BYTE", "DOUBLE", "I16", "I32", "I64", "STRING", "STRUCT"):
        assert getattr(binary, name) == getattr(TType, name)
    for name in ("MAP", "SET", "LIST", "BINARY"):
        assert getattr(binary, name) == getattr(TType, name)


@pytest.mark.parametrize(
    ("ttype", "value"),
    [
        (binary.BOOL, b"\x01"),
        (binary.I64, bytes(8)),
        (binary.STRING, I32(3) + b"abc"),
        (binary.STRUCT, b"\x08\x00\x01" + bytes(4) + b"\x00"),
        (binary.LIST, b"\x08" + I32(3) + bytes(12)),
        (binary.SET, b"\x0b" + I32(2) + I32(1) + b"a" + I32(0)),
        (binary.MAP, b"\x0b\x08" + I32(1) + I32(1) + b"k" + bytes(4)),
        (binary.MAP, b"\x08\x0a" + I32(2) + bytes(24)),
    ],
)
def test_skip_steps_over_one_value_and_every_prefix_is_short(ttype: int, value: bytes) -> None:
    assert skip(value + b"rest", 0, ttype, 8, 1 << 20) == len(value)
    for cut in range(len(value)):
        try:
            end = skip(value[:cut], 0, ttype, 8, 1 << 20)
        except (IndexError, struct.error):
            continue
        assert end > cut


@pytest.mark.parametrize(
    ("ttype", "value", "message"),
    [
        (1, b"", "unknown type code 1"),
        (binary.STRING, I32(-1), "bad string length"),
        (binary.STRING, I32(1 << 21), "bad string length"),
        (binary.LIST, b"\x08" + I32(-2), "bad container size"),
        (binary.LIST, b"\x0c" + I32(1 << 21), "bad container size"),
        (binary.LIST, b"\x07" + I32(0), "unknown element type code 7"),  # even when empty
        (binary.MAP, b"\x0b\x01" + I32(0), "unknown element type code 1"),
        (binary.LIST, (b"\x0f" + I32(1)) * 9 + b"\x08" + I32(0), "nesting too deep"),
        (binary.STRUCT, b"\x0c\x00\x01" * 9 + b"\x00" * 9, "nesting too deep"),
    ],
)
def test_skip_refuses_what_cannot_be_a_value(ttype: int, value: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        skip(value, 0, ttype, 8, 1 << 20)


def test_thriftpys_binary_code_is_a_string_only_for_thriftpy_peers() -> None:
    value = I32(2) + b"ab"
    assert skip(value, 0, binary.BINARY, 8, 100, TYPES_WITH_BINARY) == 6
    with pytest.raises(ProtocolError, match="unknown type code 18"):
        skip(value, 0, binary.BINARY, 8, 100, TYPES)


def test_framing_and_validator_walk_with_it() -> None:
    # Deeply nested lists: framing refuses them (they once recursed without bound) ...
    deep = (b"\x0f" + I32(1)) * 2000 + b"\x08" + I32(0)
    message = framing.header_bytes("m", framing.CALL, 1) + b"\x0f\x00\x01" + deep[5:] + b"\x00"
    with pytest.raises(ProtocolError, match="nesting too deep"):
        framing.message_end(message)
    # ... and the validator skips an unclaimed field the same way.
    status = codec.encode(STATUS(code=0, message="ok"))
    unclaimed = b"\x0f\x00\x63" + b"\x07" + I32(0)  # field 99: a list of type code 7
    with pytest.raises(ProtocolError, match="unknown element type code 7"):
        codec.decode(STATUS, status[:-1] + unclaimed + b"\x00")
