"""Published heartbeats read straight from their bytes (pure).

Pure functions (bytes in, values out), safe from any thread.

catalogd heartbeats every subscriber once a heartbeat interval (a second by default),
all of them at once, and each subscriber reports its applied version with the
heartbeat (:mod:`subscriber.reports`). Decoding the ``THeartbeat`` the general way
(the validator's walk, thriftpy2 building the struct) ran ~180 us per heartbeat cold
in each subscriber of ``bench/propagation.py``. :func:`scan_heartbeat` reads the layout
catalogd writes (:func:`subscriber.protocol.wire.heartbeat_message`, thriftpy2's
binary protocol: every field in id order, ``report`` only when set)::

    00 | 0b 0001 len service_id | 0a 0002 version | 0a 0003 sent_at_ms
       | 08 0004 interval_ms | [02 0005 report] | 00

Contract (as :func:`subscriber.protocol.delta_scan.scan_delta`): it returns a heartbeat
only for an uncompressed frame in exactly that layout whose service id is UTF-8 and
whose framing ends exactly at the frame's end; anything else gives None, and the
caller decodes the frame the general way, which reads every valid layout and raises on
garbage. The heartbeat it returns is the one the general way gives for the same bytes
(tested on catalogd's heartbeats and on every mutation of them).
"""

from __future__ import annotations

import struct

from subscriber.protocol.codec import RAW
from subscriber.protocol.messages import Heartbeat, interval_s

__all__ = ["scan_heartbeat"]

_HEAD = struct.Struct(">c3si")  # the frame's flag, field 1 (string): header, length
_SERVICE_HEADER = b"\x0b\x00\x01"
_FIELDS = struct.Struct(">3sq3sq3si")  # fields 2, 3 (i64) and 4 (i32): header, value
_HEADERS = (b"\x0a\x00\x02", b"\x0a\x00\x03", b"\x08\x00\x04")
_ENDS = {b"\x00": False, b"\x02\x00\x05\x00\x00": False, b"\x02\x00\x05\x01\x00": True}
"""What may follow ``interval_ms``: the end, or ``report`` (false, true) and the end."""


def scan_heartbeat(frame: bytes, start: int = 0) -> Heartbeat | None:
    """The heartbeat in ``frame[start:]`` (a PUB body: ``start`` skips the topic of a
    one-frame publication), when it is in the layout above; None otherwise."""
    try:
        flag, header, length = _HEAD.unpack_from(frame, start)
        if flag != RAW or header != _SERVICE_HEADER or length < 0:
            return None
        at = start + 8 + length
        service_id = frame[start + 8 : at].decode()
        h_version, version, h_sent, _, h_interval, interval_ms = _FIELDS.unpack_from(frame, at)
        if (h_version, h_sent, h_interval) != _HEADERS:
            return None
        at += _FIELDS.size
        report = _ENDS.get(frame[at : at + 6])  # 6: longer than every end, so no garbage copy
        if report is None:
            return None
        return Heartbeat(service_id, version, interval_s(interval_ms), report)
    except (struct.error, UnicodeDecodeError):
        return None
