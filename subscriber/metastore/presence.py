"""Field presence as HMS 2.3 sends it, fixed on encoded ``Table``/``Partition`` bytes (pure).

thriftpy2 has no "is set" bit, so two fields travel differently from HMS's own
encoding unless fixed here (both measured on HMS 2.3.10):

* ``Table.temporary`` (14, ``optional bool = false``): HMS never sends it; a
  decoded thriftpy2 ``Table`` carries the default ``False`` and would send it.
  :func:`table_for_wire` clears it on a shallow copy.
* ``SkewedInfo.skewedColValueLocationMaps`` (3, ``map<list<string>, string>``):
  HMS sends it (empty) in every table's and partition's ``sd.skewedInfo``; our
  IDL leaves it out because thriftpy2 cannot decode list keys.
  :func:`with_skew_maps` inserts an empty one into encoded bytes.

MARKED SPOT (IDL regeneration): once ``SkewedInfo`` declares field 3 and thriftpy2
decodes it, encoded structs carry it already; :func:`with_skew_maps` leaves a
``SkewedInfo`` that has field 3 untouched, so it keeps working either way.
"""

from __future__ import annotations

import copy
import struct
from typing import Any

from subscriber.protocol.binary import LIST, MAP, STOP, STRING, STRUCT, skip

TABLE_SD = 7
PARTITION_SD = 6
_SD_SKEWED_INFO = 11
_SKEW_MAPS = 3
_EMPTY_SKEW_MAPS = bytes((MAP,)) + struct.pack(">h", _SKEW_MAPS) + bytes((LIST, STRING)) + b"\0" * 4
_DEPTH = 64


def table_for_wire(table: Any) -> Any:
    """``table`` without the ``temporary`` default HMS does not send (a copy when needed)."""
    if getattr(table, "temporary", None) is False:
        table = copy.copy(table)
        table.temporary = None
    return table


def with_skew_maps(data: bytes, sd_field: int) -> bytes:
    """``data`` (an encoded Table or Partition) with an empty
    ``sd.skewedInfo.skewedColValueLocationMaps`` when ``skewedInfo`` is there
    without it; otherwise ``data`` unchanged."""
    sd = _field(data, 0, sd_field, STRUCT)
    if sd is None:
        return data
    skewed = _field(data, sd, _SD_SKEWED_INFO, STRUCT)
    if skewed is None or _field(data, skewed, _SKEW_MAPS, MAP) is not None:
        return data
    end = _end(data, skewed)  # the STOP byte of SkewedInfo
    return data[:end] + _EMPTY_SKEW_MAPS + data[end:]


def _field(data: bytes, pos: int, fid: int, ttype: int) -> int | None:
    """Where the value of field ``fid`` (of type ``ttype``) of the struct at ``pos`` starts."""
    while data[pos] != STOP:
        ftype = data[pos]
        (found,) = struct.unpack_from(">h", data, pos + 1)
        if found == fid and ftype == ttype:
            return pos + 3
        pos = skip(data, pos + 3, ftype, _DEPTH, len(data))
    return None


def _end(data: bytes, pos: int) -> int:
    """The position of the STOP byte ending the struct whose fields start at ``pos``."""
    while data[pos] != STOP:
        pos = skip(data, pos + 3, data[pos], _DEPTH, len(data))
    return pos
