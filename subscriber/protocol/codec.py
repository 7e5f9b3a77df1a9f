"""The wire codec: thriftpy2 structs to bytes and back, with framing and compression.

Pure functions (bytes in, objects out; no I/O, no shared mutable state), safe to
call from any thread.

Format
------
* **encode / decode**: one struct in Thrift's *binary* protocol (strict, no
  message header), the bytes of nothing else. Binary was chosen by measurement
  (``bench/codec_bench.py``): thriftpy2 accelerates it in Cython, while its
  compact protocol is pure Python and several times slower both ways.
* **pack / unpack**: one flag byte, then the payload (:func:`frame` frames bytes
  encoded already)::

      0x00 | encode(obj)                 raw
      0x01 | zlib(level 1, encode(obj))  when encode(obj) exceeds the threshold

* **encode_object / decode_object**: ``encode``/``decode`` of a
  ``TCatalogObject``; the result travels as ``TCatalogEntry.object``, so caches
  can keep blobs and decode on demand. A table's columns that its HMS table
  gives are left out and derived again (:mod:`subscriber.protocol.table_columns`).

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
thriftpy2's Cython decoder trusts its input: garbage can make it allocate
gigabytes or spin for seconds. So :func:`decode` first runs
:func:`subscriber.protocol.validator.validate` (a pure-Python walk of the bytes
along the struct's spec; ``validate`` is re-exported here), and only then lets
the Cython decoder build the objects, over a transport that raises at end of
input. See that module for the attacks it stops and what it costs.

Thread safety: the functions share only the validator's cache of per-struct
tables, filled idempotently on first use.
"""

from __future__ import annotations

import copy
import io
import zlib
from typing import Any, TypeVar

from thriftpy2.protocol import TCyBinaryProtocolFactory
from thriftpy2.transport import TCyBufferedTransport, TCyMemoryBuffer

import idl
from subscriber.protocol import table_columns
from subscriber.protocol.errors import InvalidRequestError, ProtocolError
from subscriber.protocol.validator import (
    EXPANSION,
    MAX_DECODED_SIZE,
    MAX_DEPTH,
    prepare,
    validate,
)

__all__ = [
    "COMPRESS_THRESHOLD",
    "EXPANSION",
    "FLAG_RAW",
    "RAW",
    "FLAG_ZLIB",
    "MAX_DECODED_SIZE",
    "MAX_DEPTH",
    "MAX_MESSAGE_SIZE",
    "decode",
    "decode_object",
    "encode",
    "encode_object",
    "frame",
    "pack",
    "prepare_objects",
    "unpack",
    "validate",
]

T = TypeVar("T")

FLAG_RAW = 0x00
FLAG_ZLIB = 0x01
RAW = bytes((FLAG_RAW,))
"""A raw frame's first byte (:data:`FLAG_RAW`), as bytes."""
# pack() compresses encodings longer than this. Measured (bench/codec_bench.py):
# a one-partition delta (~650 B) shrinks only 1.7x for ~15 us of zlib work at
# the two ends; from ~2.5 KB (4 partitions) on it shrinks 4-12x.
COMPRESS_THRESHOLD = 2048
# unpack() refuses to expand a payload beyond this (a zip bomb guard).
MAX_MESSAGE_SIZE = 256 * 1024 * 1024
# decode()'s memory bound MAX_DECODED_SIZE (and EXPANSION, MAX_DEPTH) belong
# to the validator: see subscriber.protocol.validator.

# strict_decode: invalid UTF-8 in a string field raises instead of silently
# yielding bytes.
_PROTOCOL = TCyBinaryProtocolFactory(strict_decode=True)


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
            validate(type(obj), data)
        except ProtocolError as exc:
            raise InvalidRequestError(f"cannot encode {type(obj).__name__}: {exc}") from exc
    return data


def decode(cls: type[T], data: bytes, *, max_decoded_size: int = MAX_DECODED_SIZE) -> T:
    """Decode ``data`` (exactly one struct, as :func:`encode` writes it) into a ``cls``.

    :param max_decoded_size: refuse input whose objects would take more memory
        (an estimate; the input-relative bound EXPANSION applies as well).
    :raises ProtocolError: ``data`` is not one well-formed ``cls`` struct.
    """
    validate(cls, data, max_decoded_size=max_decoded_size)
    obj = cls()
    # The buffered transport raises at end of input, where the memory
    # transport would read zeros: a second line of defence behind validate().
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
    return frame(encode(obj, check=check), compress_threshold=compress_threshold)


def frame(data: bytes, *, compress_threshold: int = COMPRESS_THRESHOLD) -> bytes:
    """:func:`pack` of a struct already encoded (``data``, as :func:`encode` writes it)."""
    if len(data) > compress_threshold:
        return bytes((FLAG_ZLIB,)) + zlib.compress(data, 1)
    return RAW + data


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
    if obj.table is not None:
        wire = table_columns.wire_form(obj.table)
        if wire is not None:
            obj = copy.copy(obj)
            obj.table = wire
    return encode(obj, check=check)


def decode_object(data: bytes, *, max_decoded_size: int = MAX_DECODED_SIZE) -> Any:
    """Decode a ``TCatalogEntry.object`` blob into a ``TCatalogObject``.

    :raises ProtocolError: as :func:`decode`, or a table's left-out columns cannot be
        derived again.
    """
    obj = decode(_CATALOG_OBJECT, data, max_decoded_size=max_decoded_size)
    if obj.table is not None and obj.table.column_stats is not None:
        try:
            table_columns.restore(obj.table)
        except InvalidRequestError as exc:
            raise ProtocolError(f"undecodable TCatalogObject: {exc}") from None
    return obj


def prepare_objects() -> int:
    """Make the validator's walkers for catalog objects now (compiling them on first use
    cost a subscriber's first ``get_table`` 46 ms): the subscriber calls it while
    catalogd prepares its snapshot. The number of struct classes; idempotent."""
    return prepare(_CATALOG_OBJECT)


_CATALOG_OBJECT = idl.catalog_objects.TCatalogObject
