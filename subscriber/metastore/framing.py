"""Thrift binary-protocol messages on an unframed stream, as bytes (pure).

HMS clients (Hive 2.3+, Spark, Trino) speak ``TBinaryProtocol`` over a plain
socket: no frame length, so the only way to know where a message ends is to
walk it. :func:`message_end` does that walk without decoding anything, which
lets the endpoint forward calls it does not understand (any method name, any
arguments) byte for byte, and relay the upstream's replies the same way.

Message layout (strict form, what every Java client writes)::

    i32 0x80010000 | type   string name   i32 seqid   struct args-or-result

The old non-strict form (``string name, i8 type, i32 seqid``) is accepted too.

Invariants:

* :func:`message_end` returns None only when ``buf`` is a proper prefix of a
  well-formed message (more bytes may complete it), and raises
  :class:`~subscriber.protocol.errors.ProtocolError` as soon as the bytes
  cannot start one: garbage is refused without waiting for more input.
* Its work is linear in the bytes walked; containers declaring more items
  than could fit in ``max_size`` are refused up front. The walk is
  :func:`subscriber.protocol.binary.skip` (the validator's walker too), with
  Java's type codes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from subscriber.protocol.binary import STRUCT, TYPES, Buffer, skip
from subscriber.protocol.errors import ProtocolError

CALL, REPLY, EXCEPTION, ONEWAY = 1, 2, 3, 4
VERSION_1 = 0x80010000
VERSION_MASK = 0xFFFF0000

MAX_DEPTH = 64
MAX_NAME = 1024
MAX_MESSAGE = 512 * 1024 * 1024

_I32 = struct.Struct(">i")


class _Incomplete(Exception):
    """More bytes are needed (internal)."""


@dataclass(frozen=True, slots=True)
class Header:
    """A message header: method ``name``, message ``type``, ``seqid``; the body
    (the args or result struct) starts at ``body_start``."""

    name: str
    type: int
    seqid: int
    body_start: int


def read_header(buf: Buffer) -> Header | None:
    """The header at the start of ``buf``, or None when ``buf`` is too short.

    Raises:
        ProtocolError: the bytes cannot start a binary-protocol message.
    """
    try:
        return _header(buf)
    except _Incomplete:
        return None


def message_end(buf: Buffer, max_size: int = MAX_MESSAGE) -> int | None:
    """The length of the complete message at the start of ``buf``, or None when
    ``buf`` holds only a prefix of one.

    Raises:
        ProtocolError: not a well-formed message (bad version, unknown type
            code, negative or oversized length, nesting beyond MAX_DEPTH).
    """
    try:
        header = _header(buf)
        end = skip(buf, header.body_start, STRUCT, MAX_DEPTH, max_size, TYPES)
    except (_Incomplete, IndexError, struct.error):
        end = None  # the bytes so far are a proper prefix
    if end is None or end > len(buf):
        if len(buf) > max_size:
            raise ProtocolError(f"message larger than {max_size} bytes") from None
        return None
    return end


def _need(buf: Buffer, end: int) -> None:
    if end > len(buf):
        raise _Incomplete


def _header(buf: Buffer) -> Header:
    _need(buf, 4)
    first = _I32.unpack_from(buf, 0)[0]
    if first < 0:
        word = first & 0xFFFFFFFF
        if word & VERSION_MASK != VERSION_1:
            raise ProtocolError(f"bad protocol version 0x{word:08x}")
        kind = word & 0xFF
        name, pos = _string(buf, 4)
        _need(buf, pos + 4)
        seqid = _I32.unpack_from(buf, pos)[0]
        pos += 4
    else:  # non-strict: the name's length comes first
        name, pos = _string(buf, 0)
        _need(buf, pos + 5)
        kind = buf[pos]
        seqid = _I32.unpack_from(buf, pos + 1)[0]
        pos += 5
    if kind not in (CALL, REPLY, EXCEPTION, ONEWAY):
        raise ProtocolError(f"unknown message type {kind}")
    return Header(name, kind, seqid, pos)


def _string(buf: Buffer, pos: int) -> tuple[str, int]:
    _need(buf, pos + 4)
    size = _I32.unpack_from(buf, pos)[0]
    if size < 0 or size > MAX_NAME:
        raise ProtocolError(f"bad method name length {size}")
    _need(buf, pos + 4 + size)
    raw = bytes(buf[pos + 4 : pos + 4 + size])
    try:
        name = raw.decode()
    except UnicodeDecodeError as exc:
        raise ProtocolError("method name is not UTF-8") from exc
    if not name.isprintable():
        raise ProtocolError(f"bad method name {name!r}")
    return name, pos + 4 + size


# -- writing --------------------------------------------------------------------------


def header_bytes(name: str, kind: int, seqid: int) -> bytes:
    """A strict message header."""
    raw = name.encode()
    return _I32.pack((VERSION_1 | kind) - (1 << 32)) + _I32.pack(len(raw)) + raw + _I32.pack(seqid)


def reply(name: str, seqid: int, result_struct: bytes) -> bytes:
    """A REPLY message carrying an encoded result struct."""
    return header_bytes(name, REPLY, seqid) + result_struct


def success_struct(field_type: int, value: bytes) -> bytes:
    """A result struct whose ``success`` (field 0) is the encoded ``value``
    (for a STRUCT, the struct's bytes including its STOP)."""
    return bytes((field_type,)) + b"\x00\x00" + value + b"\x00"


def struct_list_success(items: list[bytes]) -> bytes:
    """A result struct whose ``success`` is a ``list<struct>`` of pre-encoded structs."""
    return b"\x0f\x00\x00\x0c" + _I32.pack(len(items)) + b"".join(items) + b"\x00"


def application_exception(name: str, seqid: int, message: str, kind: int = 1) -> bytes:
    """An EXCEPTION message carrying a ``TApplicationException`` (``kind`` 1 is
    UNKNOWN_METHOD, 6 INTERNAL_ERROR)."""
    raw = message.encode()
    body = b"\x0b\x00\x01" + _I32.pack(len(raw)) + raw + b"\x08\x00\x02" + _I32.pack(kind) + b"\x00"
    return header_bytes(name, EXCEPTION, seqid) + body
