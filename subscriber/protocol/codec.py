"""The wire codec: thriftpy2 structs to bytes and back, with framing and compression.

Pure functions (bytes in, objects out; no I/O, no shared mutable state), safe to
call from any thread.

Format
------
* **encode / decode**: one struct in Thrift's *binary* protocol (strict, no
  message header), the bytes of nothing else. Binary was chosen by measurement
  (``bench/codec_bench.py``): thriftpy2 accelerates it in Cython, while its
  compact protocol is pure Python and several times slower both ways.
* **pack / unpack**: one flag byte, then the payload::

      0x00 | encode(obj)                 raw
      0x01 | zlib(level 1, encode(obj))  when encode(obj) exceeds the threshold

* **encode_object / decode_object**: ``encode``/``decode`` of a
  ``TCatalogObject``; the result travels as ``TCatalogEntry.object``, so caches
  can keep blobs and decode on demand.

Invariants
----------
* ``decode(type(x), encode(x)) == x`` for every struct ``x`` whose values have
  their declared types; likewise ``unpack``/``pack``. ``encode`` refuses (by
  default) a struct missing a required field, since no receiver would accept it.
* ``decode`` and ``unpack`` raise :class:`~subscriber.protocol.errors.ProtocolError`, and
  nothing else, for bytes that are not exactly one well-formed struct of the
  asked type: truncated, trailing bytes, lengths beyond the input, unknown type
  codes, invalid UTF-8, missing required fields (at any depth), nesting deeper
  than MAX_DEPTH, a corrupt zlib stream or one expanding beyond ``max_size``.
* Their work is linear in the input size, and the objects they build are
  bounded by ``min(max_decoded_size, EXPANSION * len(input) + 64 KiB)`` (a
  conservative estimate of CPython's footprint): garbage cannot make them
  allocate more than a small multiple of its own size.
* Unknown fields are skipped, so peers may add optional fields freely.

Why a validator
---------------
thriftpy2's Cython decoder trusts its input. Over its memory transport a read
past the end yields zeros instead of an error: a 14-byte input declaring a
50-million-item list allocated 2 GB here. Skipping an unknown field loops over
its declared item count even when the item type occupies no bytes: 7 bytes
cost 4.6 s of CPU (a list) or 8.8 s (a map). A list of empty structs turns 1
input byte into ~300 bytes of objects. So :func:`decode` first walks the bytes
in pure Python along the struct's spec, checking type codes, lengths, required
fields and the memory estimate, and rejects whatever the Cython decoder would
mishandle; only then does the Cython decoder build the objects, over a
transport that raises at end of input. The walk roughly doubles decoding time
(see the bench); nothing cheaper gives the guarantees above.

Thread safety: the functions share only a cache of per-struct tables, filled
idempotently on first use.
"""

from __future__ import annotations

import io
import struct
import zlib
from typing import Any, TypeVar

from thriftpy2.protocol import TCyBinaryProtocolFactory
from thriftpy2.thrift import TType
from thriftpy2.transport import TCyBufferedTransport, TCyMemoryBuffer

import idl
from subscriber.protocol.errors import InvalidRequestError, ProtocolError

__all__ = [
    "COMPRESS_THRESHOLD",
    "EXPANSION",
    "FLAG_RAW",
    "FLAG_ZLIB",
    "MAX_DECODED_SIZE",
    "MAX_DEPTH",
    "MAX_MESSAGE_SIZE",
    "decode",
    "decode_object",
    "encode",
    "encode_object",
    "pack",
    "unpack",
    "validate",
]

T = TypeVar("T")

FLAG_RAW = 0x00
FLAG_ZLIB = 0x01
# pack() compresses encodings longer than this. Measured (bench/codec_bench.py):
# a one-partition delta (~650 B) shrinks only 1.7x for ~15 us of zlib work at
# the two ends; from ~2.5 KB (4 partitions) on it shrinks 4-12x.
COMPRESS_THRESHOLD = 2048
# unpack() refuses to expand a payload beyond this (a zip bomb guard).
MAX_MESSAGE_SIZE = 256 * 1024 * 1024
# decode() refuses input whose objects would take (by estimate) more memory than
# this, or than EXPANSION times the input size plus 64 KiB. Real catalog
# objects take 1-7x their encoded size; the estimate errs high by up to ~2x
# (a whole-table THdfsTable of 100k partitions: 53 MB in, ~350 MB of objects,
# estimated 800 MB). Publish partitions one by one rather than raise this.
MAX_DECODED_SIZE = 1024 * 1024 * 1024
EXPANSION = 64
MAX_DEPTH = 64

# strict_decode: invalid UTF-8 in a string field raises instead of silently
# yielding bytes.
_PROTOCOL = TCyBinaryProtocolFactory(strict_decode=True)
_I32 = struct.Struct("!i").unpack_from
_FIXED_WIDTH = {
    TType.BOOL: 1,
    TType.BYTE: 1,
    TType.I16: 2,
    TType.I32: 4,
    TType.I64: 8,
    TType.DOUBLE: 8,
}
# Module constants, not TType attributes: the validator's loops use them a lot.
_STOP, _STRUCT, _MAP = TType.STOP, TType.STRUCT, TType.MAP
_STRING, _BINARY_WIRE = TType.STRING, TType.BINARY
_BINARY = frozenset({_STRING, _BINARY_WIRE})
_LISTS = frozenset({TType.LIST, TType.SET})
_KNOWN = frozenset(_FIXED_WIDTH) | _BINARY | _LISTS | {_STRUCT, _MAP}


class _Malformed(Exception):
    """Internal: the validator's verdict, turned into ProtocolError at the edge."""


def encode(obj: Any, *, check: bool = True) -> bytes:
    """Encode one struct in the binary protocol.

    :param check: also run the decoder's validation on the result, so that a
        struct missing a required field fails here rather than at every
        receiver. Costs about twice the encoding itself (see the bench);
        pass False only on hot paths whose builders are tested.
    :raises InvalidRequestError: a field holds a value of the wrong type, or
        (with ``check``) a required field is unset.
    """
    buf = TCyMemoryBuffer()
    try:
        _PROTOCOL.get_protocol(buf).write_struct(obj)
    except Exception as exc:  # thriftpy2 raises TDecodeException, TypeError, ...
        raise InvalidRequestError(f"cannot encode {type(obj).__name__}: {exc}") from exc
    data: bytes = buf.getvalue()
    if check:
        try:
            _check(type(obj), data, MAX_DECODED_SIZE)
        except ProtocolError as exc:
            raise InvalidRequestError(f"cannot encode {type(obj).__name__}: {exc}") from exc
    return data


def validate(cls: type, data: bytes, *, max_decoded_size: int = MAX_DECODED_SIZE) -> None:
    """Check that ``data`` is exactly one well-formed ``cls`` struct, building nothing.

    :raises ProtocolError: it is not (see the module invariants).
    """
    _check(cls, data, max_decoded_size)


def decode(cls: type[T], data: bytes, *, max_decoded_size: int = MAX_DECODED_SIZE) -> T:
    """Decode ``data`` (exactly one struct, as :func:`encode` writes it) into a ``cls``.

    :param max_decoded_size: refuse input whose objects would take more memory
        (an estimate; the input-relative bound EXPANSION applies as well).
    :raises ProtocolError: ``data`` is not one well-formed ``cls`` struct.
    """
    _check(cls, data, max_decoded_size)
    obj = cls()
    # The buffered transport raises at end of input, where the memory
    # transport would read zeros: a second line of defence behind _check.
    trans = TCyBufferedTransport(io.BytesIO(data), buf_size=max(4096, len(data)))
    try:
        _PROTOCOL.get_protocol(trans).read_struct(obj)
    except Exception as exc:  # EOF, UnicodeDecodeError, MemoryError, ...
        raise ProtocolError(f"undecodable {cls.__name__}: {exc!r}") from exc
    return obj


def pack(obj: Any, *, compress_threshold: int = COMPRESS_THRESHOLD, check: bool = True) -> bytes:
    """Frame one struct: a flag byte, then its encoding, zlib-compressed (level 1)
    when the encoding is longer than ``compress_threshold`` bytes.

    :raises InvalidRequestError: as :func:`encode`.
    """
    data = encode(obj, check=check)
    if len(data) > compress_threshold:
        return bytes((FLAG_ZLIB,)) + zlib.compress(data, 1)
    return bytes((FLAG_RAW,)) + data


def unpack(
    cls: type[T],
    data: bytes,
    *,
    max_size: int = MAX_MESSAGE_SIZE,
    max_decoded_size: int = MAX_DECODED_SIZE,
) -> T:
    """Reverse :func:`pack`.

    :param max_size: the largest payload a compressed frame may expand to.
    :raises ProtocolError: an empty frame, an unknown flag, a corrupt or
        truncated zlib stream, a payload beyond ``max_size``, or a payload
        :func:`decode` rejects.
    """
    if not data:
        raise ProtocolError("empty frame")
    flag, body = data[0], memoryview(data)[1:]
    if flag == FLAG_RAW:
        return decode(cls, bytes(body), max_decoded_size=max_decoded_size)
    if flag != FLAG_ZLIB:
        raise ProtocolError(f"unknown frame flag 0x{flag:02x}")
    inflater = zlib.decompressobj()
    try:
        payload = inflater.decompress(body, max_size)
    except zlib.error as exc:
        raise ProtocolError(f"corrupt zlib payload: {exc}") from exc
    if inflater.unconsumed_tail:
        raise ProtocolError(f"payload expands beyond {max_size} bytes")
    if not inflater.eof or inflater.unused_data:
        raise ProtocolError("truncated zlib payload, or bytes after its end")
    return decode(cls, payload, max_decoded_size=max_decoded_size)


def encode_object(obj: Any, *, check: bool = True) -> bytes:
    """Encode a ``TCatalogObject`` for ``TCatalogEntry.object``.

    :raises InvalidRequestError: as :func:`encode`, or ``obj`` is not a TCatalogObject.
    """
    if not isinstance(obj, _CATALOG_OBJECT):
        raise InvalidRequestError(f"expected TCatalogObject, got {type(obj).__name__}")
    return encode(obj, check=check)


def decode_object(data: bytes, *, max_decoded_size: int = MAX_DECODED_SIZE) -> Any:
    """Decode a ``TCatalogEntry.object`` blob into a ``TCatalogObject``.

    :raises ProtocolError: as :func:`decode`.
    """
    return decode(_CATALOG_OBJECT, data, max_decoded_size=max_decoded_size)


_CATALOG_OBJECT = idl.catalog_objects.TCatalogObject


# ---------------------------------------------------------------- the validator
#
# Each walker takes the input, a position and the remaining memory budget (a
# one-item list, charged with an estimate of what thriftpy2 will allocate) and
# returns the position after the value, raising _Malformed, IndexError or
# struct.error on bad input. It accepts exactly what thriftpy2's Cython decoder
# handles soundly, mirroring its choices: a field (or element) whose wire type
# differs from the spec is skipped by its wire type; STRING and BINARY are
# interchangeable. It runs on every decode, so the struct loop is flattened.

_Table = tuple[dict[int, tuple[int, Any, int, int]], int, int]
# cls -> ({field id: (wire type, sub-spec, required bit, fixed width or 0)},
#         all required bits, estimated instance size)
_TABLES: dict[Any, _Table] = {}
# Estimated CPython footprints in bytes (3.11, 64-bit), rounded up.
_OBJECT_COST = 64  # a str, bytes, int or float value
_ITEM_COST = 80  # a dict entry, or a list slot and its value


def _check(cls: type, data: bytes, max_decoded_size: int) -> None:
    budget = [min(max_decoded_size, EXPANSION * len(data) + 65536)]
    try:
        end = _struct(data, 0, cls, MAX_DEPTH, budget)
    except (_Malformed, IndexError, struct.error, RecursionError) as exc:
        raise ProtocolError(f"malformed {cls.__name__}: {exc or type(exc).__name__}") from None
    if end != len(data):
        raise ProtocolError(f"malformed {cls.__name__}: {len(data) - end} bytes after the end")


def _table(cls: Any) -> _Table:
    table = _TABLES.get(cls)
    if table is None:
        fields, required = {}, 0
        for n, (fid, spec) in enumerate(cls.thrift_spec.items()):
            bit = 1 << n if spec[-1] is True else 0
            required |= bit
            sub = _compile(spec[0], spec[2] if len(spec) > 3 else None)
            # Keyed by the id's two wire bytes read unsigned, as _struct does.
            wire = _wire(spec[0])
            fields[fid & 0xFFFF] = (wire, sub, bit, _FIXED_WIDTH.get(wire, 0))
        # An instance holds every declared field, set or not.
        table = _TABLES[cls] = (fields, required, 96 + 16 * len(fields))
    return table


def _compile(ttype: int, spec: Any) -> Any:
    """thriftpy2's sub-spec of a declared type, with wire types spelled out:
    a struct class; (item wire type, item sub-spec) for a list or set; (key
    wire type, key sub-spec, value wire type, value sub-spec) for a map."""
    if ttype in _LISTS:
        return _item(spec)
    if ttype == _MAP:
        return _item(spec[0]) + _item(spec[1])
    return spec


def _item(spec: Any) -> tuple[int, Any]:
    if isinstance(spec, int):
        return _wire(spec), None
    return _wire(spec[0]), _compile(spec[0], spec[1])


def _wire(ttype: int) -> int:
    return _STRING if ttype == _BINARY_WIRE else ttype


def _charge(budget: list[int], cost: int) -> None:
    budget[0] -= cost
    if budget[0] < 0:
        raise _Malformed("decoding would take too much memory")


def _struct(data: bytes, pos: int, cls: Any, depth: int, budget: list[int]) -> int:
    if depth <= 0:
        raise _Malformed("nested too deep")
    fields, required, cost = _TABLES.get(cls) or _table(cls)
    seen = 0
    while True:
        wire = data[pos]
        if wire == _STOP:
            break
        field = fields.get((data[pos + 1] << 8) | data[pos + 2])
        pos += 3
        if wire == _BINARY_WIRE:
            wire = _STRING
        if field is None or field[0] != wire:
            pos = _skip(data, pos, wire, depth - 1)
            continue
        cost += _OBJECT_COST
        width = field[3]
        if width:
            pos += width
        elif wire == _STRING:
            size = _I32(data, pos)[0]
            if size < 0:
                raise _Malformed("negative string length")
            pos += 4 + size
        elif wire == _STRUCT:
            pos = _struct(data, pos, field[1], depth - 1, budget)
        else:
            pos = _container(data, pos, wire, field[1], depth - 1, budget)
        seen |= field[2]
    budget[0] -= cost
    if budget[0] < 0:
        raise _Malformed("decoding would take too much memory")
    if seen & required != required:
        missing = [
            spec[1]
            for fid, spec in cls.thrift_spec.items()
            if fields[fid & 0xFFFF][2] & ~seen & required
        ]
        raise _Malformed(f"{cls.__name__} lacks required {', '.join(missing)}")
    return pos + 1


def _value(data: bytes, pos: int, wire: int, spec: Any, depth: int, budget: list[int]) -> int:
    """Step over a container item whose wire type matches its declared type."""
    width = _FIXED_WIDTH.get(wire)
    if width is not None:
        return pos + width
    if wire == _STRING:
        return _binary(data, pos)
    if wire == _STRUCT:
        return _struct(data, pos, spec, depth, budget)
    return _container(data, pos, wire, spec, depth, budget)


def _container(data: bytes, pos: int, wire: int, spec: Any, depth: int, budget: list[int]) -> int:
    if depth <= 0:
        raise _Malformed("nested too deep")
    if wire in _LISTS:
        etype, espec = spec
        actual, size = data[pos], _size(data, pos + 1, 1)
        pos += 5
        if actual != etype and _wire(actual) != etype:
            return _skip_items(data, pos, (actual,), size, depth - 1)
        budget[0] -= _ITEM_COST * size
        if budget[0] < 0:
            raise _Malformed("decoding would take too much memory")
        if etype in _FIXED_WIDTH:
            return pos + size * _FIXED_WIDTH[etype]
        if etype == _STRUCT:
            for _ in range(size):
                pos = _struct(data, pos, espec, depth - 1, budget)
            return pos
        for _ in range(size):
            pos = _value(data, pos, etype, espec, depth - 1, budget)
        return pos
    if wire == _MAP:
        ktype, kspec, vtype, vspec = spec
        kwire, vwire, size = data[pos], data[pos + 1], _size(data, pos + 2, 2)
        pos += 6
        # thriftpy2 reads a STRING-typed key or value by the *declared* type,
        # whatever that is: refuse the mismatch it would misread.
        if (kwire in _BINARY and ktype != _STRING) or (vwire in _BINARY and vtype != _STRING):
            raise _Malformed("map key or value typed STRING where the spec says otherwise")
        if _wire(kwire) != ktype or _wire(vwire) != vtype:
            return _skip_items(data, pos, (kwire, vwire), size, depth - 1)
        _charge(budget, (_ITEM_COST + 2 * _OBJECT_COST) * size)
        if ktype == vtype == _STRING:  # the common map<string, string>
            for _ in range(2 * size):
                pos = _binary(data, pos)
            return pos
        for _ in range(size):
            pos = _value(data, pos, ktype, kspec, depth - 1, budget)
            pos = _value(data, pos, vtype, vspec, depth - 1, budget)
        return pos
    raise _Malformed(f"unsupported declared type {wire}")


def _binary(data: bytes, pos: int) -> int:
    size = _I32(data, pos)[0]
    if size < 0:
        raise _Malformed("negative string length")
    return pos + 4 + size


def _size(data: bytes, pos: int, min_item: int) -> int:
    # Every item takes at least min_item bytes, so a longer claim is a lie.
    size: int = _I32(data, pos)[0]
    if size < 0 or size * min_item > len(data) - pos:
        raise _Malformed(f"container size {size} exceeds the input")
    return size


def _skip(data: bytes, pos: int, wire: int, depth: int) -> int:
    """Step over a value of wire type ``wire`` that the spec does not claim."""
    width = _FIXED_WIDTH.get(wire)
    if width is not None:
        return pos + width
    if wire in _BINARY:
        return _binary(data, pos)
    if depth <= 0:
        raise _Malformed("nested too deep")
    if wire == _STRUCT:
        while True:
            ftype = data[pos]
            if ftype == _STOP:
                return pos + 1
            pos = _skip(data, pos + 3, ftype, depth - 1)
    if wire in _LISTS:
        return _skip_items(data, pos + 5, (data[pos],), _size(data, pos + 1, 1), depth - 1)
    if wire == _MAP:
        types = (data[pos], data[pos + 1])
        return _skip_items(data, pos + 6, types, _size(data, pos + 2, 2), depth - 1)
    # thriftpy2 would "skip" such a value by reading nothing, then loop on.
    raise _Malformed(f"unknown wire type {wire}")


def _skip_items(data: bytes, pos: int, types: tuple[int, ...], size: int, depth: int) -> int:
    for wire in types:
        if wire not in _KNOWN:
            raise _Malformed(f"unknown element type {wire}")
    if all(wire in _FIXED_WIDTH for wire in types):
        return pos + size * sum(_FIXED_WIDTH[wire] for wire in types)
    for _ in range(size):
        for wire in types:
            pos = _skip(data, pos, wire, depth)
    return pos
