"""Thrift's binary protocol: its type codes, and the one walker that steps over a value (pure).

Two readers walk binary-protocol bytes without building anything: the HMS
endpoint's framing (:mod:`subscriber.metastore.framing`: where does a message end
on an unframed stream?) and the validator (:mod:`subscriber.protocol.validator`:
step over a field its spec does not claim). Both call :func:`skip`.

Peers differ in one type code: Java (HMS and its clients) knows only the codes of
:data:`TYPES`; thriftpy2 also reads code 18 (``BINARY``) as a string, which
:data:`TYPES_WITH_BINARY` accepts. A caller passes the table of its peer.

Invariants of :func:`skip`:

* It returns the position right after one whole value, or raises
  :class:`~subscriber.protocol.errors.ProtocolError` for bytes that cannot be one:
  a type code not in the table (a container's item types are checked even when
  it holds no items), a negative length, a string longer than ``limit`` bytes, a
  container declaring more items than ``limit - pos`` bytes could hold, nesting
  of structs and containers deeper than ``depth``.
* It never reads past the end of ``buf`` silently: ``IndexError`` or
  ``struct.error`` mean ``buf`` ended inside the value, and so does a returned
  position beyond ``len(buf)`` (a string or fixed-width value not all there).
  The caller decides what that means (more bytes to come, or truncated input).
* Its work is linear in the bytes walked; containers of fixed-width items are
  stepped over at once.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from subscriber.protocol.errors import ProtocolError

__all__ = [
    "BINARY",
    "BOOL",
    "BYTE",
    "DOUBLE",
    "FIXED_WIDTH",
    "I16",
    "I32",
    "I64",
    "LIST",
    "MAP",
    "SET",
    "STOP",
    "STRING",
    "STRUCT",
    "TYPES",
    "TYPES_WITH_BINARY",
    "Buffer",
    "skip",
]

# The wire type codes (thriftpy2's TType uses the same numbers).
STOP, BOOL, BYTE, DOUBLE, I16, I32, I64 = 0, 2, 3, 4, 6, 8, 10
STRING, STRUCT, MAP, SET, LIST = 11, 12, 13, 14, 15
BINARY = 18
"""thriftpy2's own code for ``binary``: read as a STRING by thriftpy2, unknown to Java."""

FIXED_WIDTH: Mapping[int, int] = {BOOL: 1, BYTE: 1, DOUBLE: 8, I16: 2, I32: 4, I64: 8}
"""Bytes taken by a value of each fixed-width type."""

# A type table maps a code to its fixed width (> 0) or to one of these kinds.
_STRING_KIND, _STRUCT_KIND, _MAP_KIND, _LIST_KIND = -1, -2, -3, -4
TYPES: Mapping[int, int] = {
    **FIXED_WIDTH,
    STRING: _STRING_KIND,
    STRUCT: _STRUCT_KIND,
    MAP: _MAP_KIND,
    SET: _LIST_KIND,
    LIST: _LIST_KIND,
}
"""The type codes of the standard binary protocol (what Java reads and writes)."""
TYPES_WITH_BINARY: Mapping[int, int] = {**TYPES, BINARY: _STRING_KIND}
""":data:`TYPES` plus thriftpy2's ``BINARY`` code, read as a string."""

Buffer = bytes | bytearray | memoryview
_I32 = struct.Struct(">i").unpack_from


def skip(
    buf: Buffer, pos: int, ttype: int, depth: int, limit: int, types: Mapping[int, int] = TYPES
) -> int:
    """The position after the value of type ``ttype`` that starts at ``pos``.

    Args:
        depth: how many more levels of structs and containers may nest here.
        limit: the most bytes the whole input may take (bounds declared lengths).
        types: the peer's type table (:data:`TYPES` or :data:`TYPES_WITH_BINARY`).

    Raises:
        ProtocolError: not a well-formed value (see the module invariants).
        IndexError, struct.error: ``buf`` ends inside the value.
    """
    kind = types.get(ttype)
    if kind is None:
        raise ProtocolError(f"unknown type code {ttype}")
    if kind > 0:
        return pos + kind
    if kind == _STRING_KIND:
        size = _I32(buf, pos)[0]
        if size < 0 or size > limit:
            raise ProtocolError(f"bad string length {size}")
        return pos + 4 + size
    if depth <= 0:
        raise ProtocolError("nesting too deep")
    if kind == _STRUCT_KIND:
        while True:
            ftype = buf[pos]
            if ftype == STOP:
                return pos + 1
            pos = skip(buf, pos + 3, ftype, depth - 1, limit, types)
    if kind == _LIST_KIND:
        items: tuple[int, ...] = (buf[pos],)
        size, pos = _I32(buf, pos + 1)[0], pos + 5
    else:
        items = (buf[pos], buf[pos + 1])
        size, pos = _I32(buf, pos + 2)[0], pos + 6
    if size < 0 or size * len(items) > limit - pos:  # each item takes a byte at least
        raise ProtocolError(f"bad container size {size}")
    width = 0
    for item in items:
        item_kind = types.get(item)
        if item_kind is None:
            raise ProtocolError(f"unknown element type code {item}")
        width = width + item_kind if item_kind > 0 and width >= 0 else -1
    if width > 0:
        return pos + size * width
    for _ in range(size):
        for item in items:
            pos = skip(buf, pos, item, depth - 1, limit, types)
    return pos
