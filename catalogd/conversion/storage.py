"""HMS storage descriptors and counts as Impala values (pure).

What a table and its partitions share when they become catalog objects
(:mod:`.objects`, :mod:`.partitions`): the Impala file format and storage
descriptor of an HMS ``StorageDescriptor``, the basic statistics in parameters,
and HMS maps put in key order so the same metadata always encodes to the same
bytes. (A table's ``TColumn`` s: :mod:`subscriber.protocol.table_columns`.)
"""

from __future__ import annotations

import re
from typing import Any

import idl

co = idl.catalog_objects

# Hive input formats (and Spark datasource providers) to Impala file formats.
_INPUT_FORMATS = {
    "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat": co.THdfsFileFormat.PARQUET,
    "parquet.hive.DeprecatedParquetInputFormat": co.THdfsFileFormat.PARQUET,
    "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat": co.THdfsFileFormat.ORC,
    "org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat": co.THdfsFileFormat.AVRO,
    "org.apache.hadoop.mapred.SequenceFileInputFormat": co.THdfsFileFormat.SEQUENCE_FILE,
    "org.apache.hadoop.hive.ql.io.RCFileInputFormat": co.THdfsFileFormat.RC_FILE,
    "org.apache.hadoop.mapred.TextInputFormat": co.THdfsFileFormat.TEXT,
}
_PROVIDERS = {
    "parquet": co.THdfsFileFormat.PARQUET,
    "orc": co.THdfsFileFormat.ORC,
    "avro": co.THdfsFileFormat.AVRO,
    "json": co.THdfsFileFormat.JSON,
    "csv": co.THdfsFileFormat.TEXT,
    "text": co.THdfsFileFormat.TEXT,
}
_JSON_SERDES = ("JsonSerDe",)


def sorted_maps(struct: Any) -> Any:
    """Put the parameter maps of an HMS ``Database``/``Table``/``Partition`` (and of its
    storage descriptor and SerDe) in key order, in place; returns ``struct``.

    HMS answers in Java ``HashMap`` order, the SQL source in another: sorted, the
    same metadata encodes to the same bytes whichever source read it.
    """
    sd = getattr(struct, "sd", None)
    for holder in (struct, sd, getattr(sd, "serdeInfo", None)):
        params = getattr(holder, "parameters", None)
        if holder is not None and params and len(params) > 1:
            holder.parameters = dict(sorted(params.items()))
    return struct


def file_format(table: object, sd: object | None) -> int:
    """The Impala file format of a table or partition storage descriptor."""
    provider = (
        (getattr(table, "parameters", None) or {}).get("spark.sql.sources.provider") or ""
    ).lower()
    if provider in _PROVIDERS:
        return _PROVIDERS[provider]
    if sd is None:
        return co.THdfsFileFormat.TEXT
    serde = getattr(getattr(sd, "serdeInfo", None), "serializationLib", None) or ""
    if serde.endswith(_JSON_SERDES):
        return co.THdfsFileFormat.JSON
    return _INPUT_FORMATS.get(getattr(sd, "inputFormat", None) or "", co.THdfsFileFormat.TEXT)


def _delimiter(params: dict[str, str], names: tuple[str, ...], default: int) -> int:
    for name in names:
        value = params.get(name)
        if value:
            digits = value.lstrip("-")
            if digits.isascii() and digits.isdigit():  # ("²".isdigit(), but int() refuses it)
                return int(value) if -128 <= int(value) < 128 else default
            return ord(value[0]) if ord(value[0]) < 128 else default
    return default


def storage_descriptor(table: object, sd: object | None) -> object:
    params = dict(getattr(getattr(sd, "serdeInfo", None), "parameters", None) or {})
    return co.THdfsStorageDescriptor(
        lineDelim=_delimiter(params, ("line.delim",), ord("\n")),
        fieldDelim=_delimiter(params, ("field.delim", "serialization.format"), 1),
        # Hive's own key is misspelt; accept both.
        collectionDelim=_delimiter(params, ("collection.delim", "colelction.delim"), 2),
        mapKeyDelim=_delimiter(params, ("mapkey.delim",), 3),
        escapeChar=_delimiter(params, ("escape.delim",), 0),
        quoteChar=_delimiter(params, ("quote.delim",), 0),
        fileFormat=file_format(table, sd),
        blockSize=0,
    )


_INTEGER = re.compile(r"[+-]?[0-9]{1,19}")
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def parse_i64(text: str | None) -> int | None:
    """An integer as HMS and Spark write one (ASCII digits, an optional sign) that fits
    Thrift's ``i64``; None for anything else. Parameters and partition values are
    anyone's text: ``int()`` would take ``" 1_0"`` and ``"²"`` raises, and a value
    beyond ``i64`` would make the whole object unencodable."""
    if text is None:
        return None
    if len(text) < 19 and text.isascii() and text.isdigit():  # the usual case, fits i64
        return int(text)
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if I64_MIN <= value <= I64_MAX else None


def _count(params: dict[str, str], *names: str) -> int | None:
    # The first known (non-negative) count: HMS keeps numRows=-1 for tables
    # Spark analyzed, whose counts are only in spark.sql.statistics.*.
    for name in names:
        value = parse_i64(params.get(name))
        if value is not None and value >= 0:
            return value
    return None


def table_stats(params: dict[str, str] | None) -> object:
    params = params or {}
    rows = _count(params, "numRows", "spark.sql.statistics.numRows")
    return co.TTableStats(
        num_rows=rows if rows is not None else -1,
        total_file_bytes=_count(params, "totalSize", "spark.sql.statistics.totalSize"),
    )
