"""File metadata of a partition: catalogd's compact ``THdfsFileDesc.file_desc_data``.

Impala puts a FlatBuffer (``FbFileDesc``) in ``file_desc_data``; catalogd puts
this smaller encoding there instead, which is what a Spark reader can use
(Spark plans with path, length and modification time; block locations and
erasure coding are HDFS-only)::

    byte 0      format version (1)
    varint      length in bytes
    varint      modification time, ms since the epoch
    rest        the path relative to the partition's location, UTF-8

A 60-character file name costs ~70 bytes here and ~80 bytes as a list element
of the encoded partition (measured in bench/stats_bench.py), which is what a
subscriber keeps resident: partitions are decoded on demand.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import idl
from subscriber.protocol.errors import ProtocolError

FORMAT = 1


@dataclass(frozen=True)
class FileInfo:
    """One data file: its path relative to the partition's location, length, mtime."""

    relative_path: str
    length: int
    mtime_ms: int


def _varint(value: int, out: bytearray) -> None:
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def encode(info: FileInfo) -> bytes:
    """The ``file_desc_data`` bytes of one file."""
    out = bytearray((FORMAT,))
    _varint(max(0, info.length), out)
    _varint(max(0, info.mtime_ms), out)
    out += info.relative_path.encode()
    return bytes(out)


def decode(data: bytes) -> FileInfo:
    """The :class:`FileInfo` in ``file_desc_data`` bytes.

    Raises:
        ProtocolError: not this encoding (another format, truncated).
    """
    if not data or data[0] != FORMAT:
        raise ProtocolError("file_desc_data is not catalogd's file encoding (format 1)")
    pos = 1
    numbers = []
    for _ in range(2):
        value = shift = 0
        while True:
            if pos >= len(data):
                raise ProtocolError("truncated file_desc_data")
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        numbers.append(value)
    return FileInfo(data[pos:].decode(errors="replace"), numbers[0], numbers[1])


def file_descs(files: Iterable[FileInfo]) -> list[Any]:
    """``THdfsFileDesc`` s for ``files``, sorted by path (deterministic bytes)."""
    desc = idl.catalog_objects.THdfsFileDesc
    return [desc(file_desc_data=encode(f)) for f in sorted(files, key=lambda f: f.relative_path)]


def partition_files(partition: Any) -> list[FileInfo] | None:
    """The files of a ``THdfsPartition`` (or its ``TCatalogObject``); None when the
    catalog holds no file metadata for it (the table did not opt in)."""
    partition = getattr(partition, "hdfs_partition", None) or partition
    descs = getattr(partition, "file_desc", None)
    if descs is None:
        return None
    return [decode(d.file_desc_data) for d in descs]
