"""Result shapes the HMS endpoint writes as bytes, and what decides ``get_fields`` (pure)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from subscriber.metastore.framing import success_struct
from subscriber.protocol.binary import LIST, STRING, STRUCT


class Forward(Exception):
    """This call cannot be answered exactly from the cache: forward it to HMS.
    ``learn``: given the method name and HMS's reply, teaches the cache what it
    lacked (see :mod:`subscriber.metastore.orders`)."""

    def __init__(self, reason: str, learn: Callable[[str, bytes], None] | None = None) -> None:
        super().__init__(reason)
        self.learn = learn


# HMS 2.3's default hive.serdes.using.metastore.for.schema: get_fields answers sd.cols
# for these (and for no serde); for any other serde HMS asks the serde itself.
METASTORE_SCHEMA_SERDES = frozenset(
    {
        "org.apache.hadoop.hive.ql.io.orc.OrcSerde",
        "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
        "org.apache.hadoop.hive.serde2.columnar.ColumnarSerDe",
        "org.apache.hadoop.hive.serde2.dynamic_type.DynamicSerDe",
        "org.apache.hadoop.hive.serde2.MetadataTypedColumnsetSerDe",
        "org.apache.hadoop.hive.serde2.columnar.LazyBinaryColumnarSerDe",
        "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
        "org.apache.hadoop.hive.serde2.lazybinary.LazyBinarySerDe",
    }
)


def struct_field(fid: int, ttype: int, value: bytes) -> bytes:
    """A struct of one field ``fid`` holding encoded ``value``."""
    return bytes((ttype,)) + fid.to_bytes(2, "big") + value + b"\x00"


def struct_list(items: list[bytes]) -> bytes:
    return bytes((STRUCT,)) + len(items).to_bytes(4, "big") + b"".join(items)


def strings(values: list[str]) -> bytes:
    body = (
        bytes((STRING,))
        + len(values).to_bytes(4, "big")
        + b"".join(len(raw).to_bytes(4, "big") + raw for raw in (v.encode() for v in values))
    )
    return success_struct(LIST, body)


def hms_function(fn: Any) -> Any | None:
    """The HMS ``Function`` kept in a catalog ``TFunction`` (its ``hms_function``)."""
    return getattr(fn, "hms_function", None) if fn is not None else None


def matching(names: list[str], pattern: str | None) -> list[str]:
    """HMS's name patterns: ``|``-separated alternatives, ``*`` any run, case-insensitive,
    the rest a Java regex matched in full (a pattern Python reads otherwise: forward)."""
    if pattern is None:
        return names
    try:
        regexes = [
            re.compile(part.replace("*", ".*"), re.IGNORECASE)
            for part in pattern.strip().split("|")
        ]
    except re.error as exc:
        raise Forward(f"pattern {pattern!r}: {exc}") from exc
    return [n for n in names if any(r.fullmatch(n) for r in regexes)]
