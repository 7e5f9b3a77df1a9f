"""The validator: walks Thrift binary bytes along a struct's spec before thriftpy2 decodes them.

Pure functions (bytes in, a verdict out; no I/O), safe to call from any thread:
they share only per-struct tables and walkers, made on first use and published
once complete (racing threads make equal ones).
:mod:`subscriber.protocol.codec` runs :func:`validate` on every decode (and, by
default, on every encode).

Invariants
----------
* :func:`validate` raises :class:`~subscriber.protocol.errors.ProtocolError`,
  and nothing else, for bytes that are not exactly one well-formed struct of
  the asked type: truncated, trailing bytes, lengths beyond the input, unknown
  type codes, missing required fields (at any depth), nesting deeper than
  MAX_DEPTH. (Invalid UTF-8 is left to the decoder, which checks it strictly.)
* Its work is linear in the input size, and it accepts only input whose
  objects are bounded by ``min(max_decoded_size, EXPANSION * len(input) + 64 KiB)``
  (a conservative estimate of CPython's footprint).

Why a validator
---------------
thriftpy2's Cython decoder trusts its input. Over its memory transport a read
past the end yields zeros instead of an error: a 14-byte input declaring a
50-million-item list allocated 2 GB here. Skipping an unknown field loops over
its declared item count even when the item type occupies no bytes: 7 bytes
cost 4.6 s of CPU (a list) or 8.8 s (a map). A list of empty structs turns 1
input byte into ~300 bytes of objects. So the codec first walks the bytes
in pure Python along the struct's spec, checking type codes, lengths, required
fields and the memory estimate, and rejects whatever the Cython decoder would
mishandle; only then does the Cython decoder build the objects, over a
transport that raises at end of input. The walk costs about as much as the
decoding itself (see ``bench/codec_bench.py``), with each struct's walker generated
from its spec (below); nothing cheaper gives the guarantees above.

Why one module of over 400 lines: the generic walk and the walkers generated from it
must judge every input alike, so they are read and changed together.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from subscriber.protocol import binary
from subscriber.protocol.binary import TYPES_WITH_BINARY, skip
from subscriber.protocol.errors import ProtocolError

__all__ = ["EXPANSION", "MAX_DECODED_SIZE", "MAX_DEPTH", "prepare", "validate"]

# Refuse input whose objects would take (by estimate) more memory than this, or
# than EXPANSION times the input size plus 64 KiB. Real catalog objects take
# 1-7x their encoded size; the estimate errs high by up to ~2x (a whole-table
# THdfsTable of 100k partitions: 53 MB in, ~350 MB of objects, estimated
# 800 MB). Publish partitions one by one rather than raise this.
MAX_DECODED_SIZE = 1024 * 1024 * 1024
EXPANSION = 64
MAX_DEPTH = 64

_I32 = struct.Struct("!i").unpack_from
# The wire type codes of :mod:`subscriber.protocol.binary` (thriftpy2's TType numbers),
# as module constants: the walkers' loops use them a lot.
_FIXED_WIDTH = binary.FIXED_WIDTH
_STOP, _STRUCT, _MAP = binary.STOP, binary.STRUCT, binary.MAP
_STRING, _BINARY_WIRE = binary.STRING, binary.BINARY
_BINARY = frozenset({_STRING, _BINARY_WIRE})
_LISTS = frozenset({binary.LIST, binary.SET})


class _Malformed(Exception):
    """Internal: the validator's verdict, turned into ProtocolError at the edge."""


# ---------------------------------------------------------------- the walkers
#
# Each walker takes the input, a position and the remaining memory budget (a
# one-item list, charged with an estimate of what thriftpy2 will allocate) and
# returns the position after the value, raising _Malformed, IndexError or
# struct.error on bad input. It accepts exactly what thriftpy2's Cython decoder
# handles soundly, mirroring its choices: a field (or element) whose wire type
# differs from the spec is skipped by its wire type; STRING and BINARY are
# interchangeable. It runs on every decode, so the struct loop is flattened.
# Values the spec does not claim are stepped over by the one binary-protocol walker,
# :func:`subscriber.protocol.binary.skip` (which the HMS endpoint's framing uses too).

_Table = tuple[dict[int, tuple[int, Any, int, int]], int, int]
# cls -> ({field id: (wire type, sub-spec, required bit, fixed width or 0)},
#         all required bits, estimated instance size)
_TABLES: dict[Any, _Table] = {}
# Estimated CPython footprints in bytes (3.11, 64-bit), rounded up.
_OBJECT_COST = 64  # a str, bytes, int or float value
_ITEM_COST = 80  # a dict entry, or a list slot and its value


def validate(cls: type, data: bytes, *, max_decoded_size: int = MAX_DECODED_SIZE) -> None:
    """Check that ``data`` is exactly one well-formed ``cls`` struct, building nothing.

    :param max_decoded_size: refuse input whose objects would take more memory
        (an estimate; the input-relative bound EXPANSION applies as well).
    :raises ProtocolError: it is not (see the module invariants).
    """
    budget = [min(max_decoded_size, EXPANSION * len(data) + 65536)]
    try:
        end = _struct(data, 0, cls, MAX_DEPTH, budget)
    except (_Malformed, ProtocolError, IndexError, struct.error, RecursionError) as exc:
        raise ProtocolError(f"malformed {cls.__name__}: {exc or type(exc).__name__}") from None
    if end != len(data):
        raise ProtocolError(f"malformed {cls.__name__}: {len(data) - end} bytes after the end")


def prepare(cls: type) -> int:
    """Generate the walkers of ``cls`` and of every struct it can hold, now rather than
    on first use (compiling them is most of a first validation's cost); the number of
    structs. Idempotent and thread-safe (as :func:`validate`)."""
    found: dict[Any, None] = {}
    pending: list[Any] = [cls]
    while pending:
        current = pending.pop()
        if current in found:
            continue
        found[current] = None
        for field in current.thrift_spec.values():
            pending.extend(_structs_in(field[0], field[2] if len(field) > 3 else None))
    for struct_class in found:
        _walker(struct_class)
    return len(found)


def _structs_in(ttype: int, sub: Any) -> list[Any]:
    """The struct classes a thriftpy2 spec entry (type code, its type argument) holds."""
    if ttype == _STRUCT:
        return [sub]
    if ttype in _LISTS and isinstance(sub, tuple) and len(sub) == 2:
        return _structs_in(sub[0], sub[1])
    if ttype == _MAP and isinstance(sub, tuple) and len(sub) == 2:
        key, value = sub
        return [
            *(_structs_in(*key) if isinstance(key, tuple) else _structs_in(key, None)),
            *(_structs_in(*value) if isinstance(value, tuple) else _structs_in(value, None)),
        ]
    return []


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
    walk = _WALKERS.get(cls) or _walker(cls)
    return walk(data, pos, depth, budget)


def _rest(
    data: bytes, pos: int, cls: Any, depth: int, budget: list[int], seen: int, cost: int
) -> tuple[int, int, int]:
    """The struct's fields from ``pos`` to its stop, in any order: ``(position of the
    stop, required bits seen, cost)``. Where a generated walker's fast path ends."""
    fields = _TABLES[cls][0]
    while True:
        wire = data[pos]
        if wire == _STOP:
            return pos, seen, cost
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


def _missing(cls: Any, seen: int) -> str:
    fields, required, _ = _TABLES[cls]
    names = [
        s[1] for fid, s in cls.thrift_spec.items() if fields[fid & 0xFFFF][2] & ~seen & required
    ]
    return f"{cls.__name__} lacks required {', '.join(names)}"


# ------------------------------------------------------- the generated walkers
#
# A struct's walker is generated from its spec (Python source, compiled once per
# class, like dataclasses' __init__): straight-line code that claims the fields in
# the order thriftpy2 writes them (spec order), each by one test of its three header
# bytes, with the checks of _rest for its declared type; lists of structs stepped
# through inline. Anything else (another order, an unknown field, another wire type,
# a repeated field) is left to _rest from there, so a walker accepts exactly what
# _rest alone would (tested against it); it only does so faster (a table object 1.35-1.6x, hot).

_WALKERS: dict[Any, Any] = {}  # published walkers of each struct class


def _walker(cls: Any) -> Any:
    """The walker of ``cls``, generated (in a namespace of its own, published once
    complete: racing threads only make equal walkers). The walkers of the structs it
    holds are bound to stubs that generate them when first called, so a first
    validation compiles only the structs its bytes hold: a table object's first
    ``get_table`` compiled all 74 structs a ``TCatalogObject`` can reach, 46 ms."""
    published = _WALKERS.get(cls)
    if published is not None:
        return published
    namespace: dict[str, Any] = {"_Malformed": _Malformed, "_I32": _I32, "_size": _size}
    namespace.update(_rest=_rest, _container=_container, _missing=_missing)
    names: dict[Any, str] = {}

    def name_of(struct_class: Any) -> str:
        name = names.get(struct_class)
        if name is None:
            name = names[struct_class] = f"walk_{len(names)}_{struct_class.__name__}"
            if struct_class is not cls:
                namespace[name] = _WALKERS.get(struct_class) or _later(
                    namespace, name, struct_class
                )
        return name

    source = _source(cls, name_of(cls), namespace, name_of)
    exec(compile(source, f"<walker of {cls.__name__}>", "exec"), namespace)
    return _WALKERS.setdefault(cls, namespace[names[cls]])


def _later(namespace: dict[str, Any], name: str, cls: Any) -> Any:
    """A stand-in for the walker of ``cls`` under ``name`` in ``namespace``: on its first
    call it generates the walker and puts it in its place."""

    def walk_later(data: bytes, pos: int, depth: int, budget: list[int]) -> int:
        walker = namespace[name] = _walker(cls)
        return walker(data, pos, depth, budget)  # type: ignore[no-any-return]

    return walk_later


def _source(cls: Any, name: str, namespace: dict[str, Any], name_of: Callable[[Any], str]) -> str:
    """The walker of ``cls`` named ``name``, its constants put in ``namespace``; the
    walkers it calls are named by ``name_of``."""
    fields, required, cost = _table(cls)
    namespace[f"{name}_cls"] = cls
    lines = [
        f"def {name}(data, pos, depth, budget):",
        "    if depth <= 0:",
        "        raise _Malformed('nested too deep')",
        f"    seen, cost, inner = 0, {cost}, depth - 1",
    ]
    for fid in cls.thrift_spec:
        wire, sub, bit, width = fields[fid & 0xFFFF]
        hi, lo = (fid >> 8) & 0xFF, fid & 0xFF
        step = f"{name}_{fid & 0xFFFF}"
        lines.append(
            f"    if data[pos] == {wire} and data[pos + 2] == {lo} and data[pos + 1] == {hi}:"
        )
        if width:
            lines.append(f"        pos += {3 + width}")
        elif wire == _STRING:
            lines += [
                "        size = _I32(data, pos + 3)[0]",
                "        if size < 0:",
                "            raise _Malformed('negative string length')",
                "        pos += 7 + size",
            ]
        elif wire == _STRUCT:
            lines.append(f"        pos = {name_of(sub)}(data, pos + 3, inner, budget)")
        elif wire in _LISTS and sub[0] == _STRUCT:
            namespace[step] = sub
            lines += [
                f"        if data[pos + 3] != {_STRUCT} or inner <= 0:",
                f"            pos = _container(data, pos + 3, {wire}, {step}, inner, budget)",
                "        else:",
                "            count = _size(data, pos + 4, 1)",
                "            pos += 8",
                f"            budget[0] -= {_ITEM_COST} * count",
                "            if budget[0] < 0:",
                "                raise _Malformed('decoding would take too much memory')",
                "            for _ in range(count):",
                f"                pos = {name_of(sub[1])}(data, pos, inner - 1, budget)",
            ]
        else:
            namespace[step] = sub
            lines.append(f"        pos = _container(data, pos + 3, {wire}, {step}, inner, budget)")
        if bit:
            lines.append(f"        seen |= {bit}")
        lines.append(f"        cost += {_OBJECT_COST}")
    lines += [
        "    if data[pos]:",
        f"        pos, seen, cost = _rest(data, pos, {name}_cls, depth, budget, seen, cost)",
        "    budget[0] -= cost",
        "    if budget[0] < 0:",
        "        raise _Malformed('decoding would take too much memory')",
    ]
    if required:
        lines += [
            f"    if seen & {required} != {required}:",
            f"        raise _Malformed(_missing({name}_cls, seen))",
        ]
    lines.append("    return pos + 1")
    return "\n".join(lines) + "\n"


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
        actual = data[pos]
        if actual != etype and _wire(actual) != etype:
            return _skip(data, pos, wire, depth)  # the whole list, by its wire types
        size = _size(data, pos + 1, 1)
        pos += 5
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
        kwire, vwire = data[pos], data[pos + 1]
        # thriftpy2 reads a STRING-typed key or value by the *declared* type,
        # whatever that is: refuse the mismatch it would misread.
        if (kwire in _BINARY and ktype != _STRING) or (vwire in _BINARY and vtype != _STRING):
            raise _Malformed("map key or value typed STRING where the spec says otherwise")
        if _wire(kwire) != ktype or _wire(vwire) != vtype:
            return _skip(data, pos, wire, depth)  # the whole map, by its wire types
        size = _size(data, pos + 2, 2)
        pos += 6
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
    """Step over a value of wire type ``wire`` that the spec does not claim (as
    thriftpy2 skips it; a code it would "skip" by reading nothing is refused)."""
    return skip(data, pos, wire, depth, len(data), TYPES_WITH_BINARY)
