"""zlib frames stitched from pieces: a body deflated once, framed many times.

Pure functions, safe from any thread. catalogd streams the same encoded snapshot
chunks to many joining subscribers; only a few bytes in front of each chunk (the
request id and the chunk's ``seq``) differ per subscriber. This module lets those
bytes vary without compressing the chunk again:

* :func:`deflate_segment` compresses a body once into a **raw deflate segment**
  (zlib level 1, ended by a ``Z_SYNC_FLUSH``: byte-aligned, no final block), and
  keeps its length and its Adler-32.
* :func:`stitched_frame` builds a :func:`codec.pack`-style frame around it::

      0x01 | 78 01 | stored(prefix) | segment... | stored-final(suffix) | adler32(be)

  i.e. a standard zlib stream (header, deflate blocks, trailer) whose blocks come
  from independent compressors: the prefix and suffix as *stored* (uncompressed)
  blocks, the segment as it was deflated. A deflate decoder keeps no state
  between blocks other than the window, and a segment's compressor never refers
  back before its own start, so the concatenation inflates to
  ``prefix + body + suffix``. The trailer's Adler-32 is combined arithmetically
  (:func:`adler32_combine`, zlib's formula), so the work per frame is one memory
  copy, independent of the body's size.

Several segments may follow each other in one frame, each as it was deflated.

Invariant: ``zlib.decompress(stitched_frame(p, [deflate_segment(b)], s)[1:]) == p + b + s``;
so :func:`codec.unpack` reads a stitched frame exactly as it reads
``codec.frame(p + b + s)``: receivers need no change.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Segment", "adler32_combine", "deflate_segment", "stitched_frame"]

_BASE = 65521  # the largest prime below 2**16 (Adler-32's modulus)
_ZLIB_HEADER = b"\x78\x01"  # deflate, 32 KiB window, "fastest" level hint; FCHECK valid
_FLAG_ZLIB = b"\x01"  # codec.FLAG_ZLIB (codec imports nothing of this module)
_STORED_MAX = 0xFFFF


@dataclass(frozen=True, slots=True)
class Segment:
    """A body deflated once: raw deflate blocks, sync-flushed, and what a trailer needs."""

    deflated: bytes
    size: int
    """The body's length before compression."""
    adler: int
    """The body's Adler-32."""


def deflate_segment(body: bytes, level: int = 1) -> Segment:
    """Compress ``body`` into a raw deflate segment that other segments may follow."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, -15)
    deflated = compressor.compress(body) + compressor.flush(zlib.Z_SYNC_FLUSH)
    return Segment(deflated, len(body), zlib.adler32(body))


def adler32_combine(adler1: int, adler2: int, len2: int) -> int:
    """The Adler-32 of ``a + b`` from ``adler32(a)``, ``adler32(b)`` and ``len(b)``
    (zlib's ``adler32_combine``)."""
    rem = len2 % _BASE
    sum1 = adler1 & 0xFFFF
    sum2 = (rem * sum1) % _BASE
    sum1 = (sum1 + (adler2 & 0xFFFF) + _BASE - 1) % _BASE
    sum2 = (sum2 + ((adler1 >> 16) & 0xFFFF) + ((adler2 >> 16) & 0xFFFF) + _BASE - rem) % _BASE
    return sum1 | (sum2 << 16)


def _stored(data: bytes, *, final: bool) -> list[bytes]:
    """``data`` as byte-aligned stored deflate blocks (the last one final if ``final``)."""
    parts: list[bytes] = []
    pieces = [data[i : i + _STORED_MAX] for i in range(0, len(data), _STORED_MAX)] or [b""]
    for n, piece in enumerate(pieces):
        last = final and n == len(pieces) - 1
        size = len(piece)
        parts.append(struct.pack("<BHH", 1 if last else 0, size, size ^ 0xFFFF))
        parts.append(piece)
    return parts


def stitched_frame(prefix: bytes, segments: Sequence[Segment], suffix: bytes) -> bytes:
    """A zlib frame (flag byte included) that inflates to ``prefix``, then the bodies
    ``segments`` were deflated from, then ``suffix``. Costs one copy of the parts."""
    adler = zlib.adler32(prefix)
    for segment in segments:
        adler = adler32_combine(adler, segment.adler, segment.size)
    adler = adler32_combine(adler, zlib.adler32(suffix), len(suffix))
    return b"".join(
        [
            _FLAG_ZLIB,
            _ZLIB_HEADER,
            *_stored(prefix, final=False),
            *(segment.deflated for segment in segments),
            *_stored(suffix, final=True),
            struct.pack(">I", adler),
        ]
    )
