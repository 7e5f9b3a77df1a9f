"""Row, null and min/max figures of Parquet files, read from their footers.

A Parquet footer keeps, per row group, the row count and, per column chunk,
statistics: the null count and the minimum and maximum value. The stats job
takes from them, without reading a row, the figures they give *exactly*, and
aggregates only the rest (distinct-value sketches, string lengths...) over
the rows. What is taken, per column and file (anything else makes the column's
figure "unknown" and the job computes it over the rows instead):

* **null counts**, of a top-level primitive column the file has once (names
  matched as Spark matches them: case-insensitively unless
  ``spark.sql.caseSensitive``), when the writer recorded them (parquet-mr does
  unless statistics are switched off); a column the file lacks is null in all
  of its rows, as Spark reads it;
* **min/max** of integers, dates and decimals whose physical and logical type
  is exactly what Spark writes for the table's type: ``INT32`` with
  ``INTEGER(8,true)``/``INTEGER(16,true)``/none for tinyint/smallint/int,
  ``INT64`` for bigint, ``INT32 DATE`` for dates from 1582-10-15 on (older
  dates may be rebased between calendars on read), ``INT32``/``INT64
  DECIMAL(p,s)`` with the table's precision and scale. Such statistics are
  exact: integer statistics are never truncated and order as the values do.
  Not taken: floats and doubles (NaN and -0.0 are not ordered as Spark orders
  them), binary and fixed-length values (truncated, or ordered by an old writer
  as unsigned bytes), timestamps (INT96 has no order).

The footers are read in the driver's JVM (parquet-mr's
``ParquetFileReader.readAllFootersInParallel``, through Hadoop's
``FileSystem``: any scheme Spark reads), then a few py4j calls per file and
column chunk (~0.13 ms each here) read the statistics; :data:`MAX_CHUNKS`
bounds that cost.
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from catalogd.files.listing import split_location

log = logging.getLogger(__name__)

MAX_CHUNKS = 20_000  # column chunks read at most (~3-7 py4j calls each)
READERS = 4  # threads making the per-file py4j calls
_SEP = "\0"  # never in a path
_EPOCH = dt.date(1970, 1, 1)
_GREGORIAN_DAYS = (dt.date(1582, 10, 15) - _EPOCH).days  # no calendar rebase from here on
_LAST_DAYS = (dt.date.max - _EPOCH).days
# Spark type -> (physical type, logical type annotations) whose min/max are exact.
_BOUNDED = {
    "ByteType": ("INT32", ("INTEGER(8,true)",)),
    "ShortType": ("INT32", ("INTEGER(16,true)",)),
    "IntegerType": ("INT32", ("None", "INTEGER(32,true)")),
    "LongType": ("INT64", ("None", "INTEGER(64,true)")),
    "DateType": ("INT32", ("DATE",)),
}


@dataclass(frozen=True)
class Wanted:
    """A column to read figures for: its name and Spark type (``kind`` as in
    :mod:`catalogd.stats.compute`; ``precision``/``scale`` for decimals) and
    whether its min/max are wanted too."""

    name: str
    kind: str
    bounds: bool
    precision: int = 0
    scale: int = 0


@dataclass(frozen=True)
class ColumnFigures:
    """One column over some files. ``nulls`` None: some file did not record
    them. ``exact_bounds`` False: some file's min/max could not be taken;
    ``low``/``high`` (Python values, as Spark returns them) are None when no
    file had a non-null value."""

    nulls: int | None
    low: Any = None
    high: Any = None
    exact_bounds: bool = True


@dataclass(frozen=True)
class Figures:
    """The files of one partition: their rows and the wanted columns' figures."""

    rows: int
    columns: dict[str, ColumnFigures]


def read(
    spark: Any,
    files: Mapping[str, Sequence[str]],
    wanted: Sequence[Wanted],
) -> dict[str, Figures] | None:
    """The figures of each group of ``files`` (a partition name -> the full
    paths of its data files), for the ``wanted`` columns.

    Returns None when the footers cannot be used at all: more than
    :data:`MAX_CHUNKS` column chunks to read, a file that is not Parquet or
    cannot be read (a race with a writer, a permission error; logged at INFO).
    Blocks for the reading; thread-safe (py4j calls from any thread).
    """
    paths = [p for group in files.values() for p in group]
    if len(paths) * max(1, len(wanted)) > MAX_CHUNKS:
        return None
    try:
        footers = _footers(spark, paths)
        case_sensitive = spark.conf.get("spark.sql.caseSensitive", "false").lower() == "true"
        layouts: dict[str, Layout] = {}
        with ThreadPoolExecutor(READERS, thread_name_prefix="stats-footers") as pool:
            each = list(pool.map(lambda f: _file(f, wanted, case_sensitive, layouts), footers))
    except Exception as exc:  # an optimisation only: any failure means "aggregate it"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        log.info("Parquet footers of %d files not used: %s", len(paths), first[:300])
        return None
    out: dict[str, Figures] = {}
    start = 0
    for name, group in files.items():
        out[name] = _fold(each[start : start + len(group)], wanted)
        start += len(group)
    return out


def _footers(spark: Any, paths: Sequence[str]) -> list[Any]:
    """parquet-mr's footers of ``paths``, in order, read in parallel in the JVM
    (one ``listStatus`` and one read call per file system)."""
    if not paths:
        return []
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    strings = jvm.org.apache.commons.lang3.StringUtils
    reader = jvm.org.apache.parquet.hadoop.ParquetFileReader
    by_fs: dict[tuple[str, str], list[int]] = {}
    for i, path in enumerate(paths):
        scheme, authority, _ = split_location(path)
        by_fs.setdefault((scheme, authority), []).append(i)
    out: list[Any] = [None] * len(paths)
    for indices in by_fs.values():
        joined = _SEP.join(paths[i] for i in indices)
        hadoop_paths = jvm.org.apache.hadoop.util.StringUtils.stringToPath(
            strings.splitByWholeSeparatorPreserveAllTokens(joined, _SEP)
        )
        # listStatus of a file is that file's status: one call for all of them.
        statuses = hadoop_paths[0].getFileSystem(conf).listStatus(hadoop_paths)
        if len(statuses) != len(indices):
            raise ValueError(f"{len(statuses)} statuses for {len(indices)} files")
        listed = jvm.scala.jdk.javaapi.CollectionConverters.asJava(
            jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(statuses)
        )
        footers = reader.readAllFootersInParallel(conf, listed, False)
        for i, footer in zip(indices, footers, strict=True):
            out[i] = footer
    return out


@dataclass(frozen=True)
class _FileFigures:
    rows: int
    columns: dict[str, ColumnFigures]


_ABSENT = -1  # a column the file lacks: null in all its rows, as Spark reads it
_UNKNOWN = -2  # a group, a repeated field, or an ambiguous name: no figures
Layout = dict[str, tuple[int, Any]]  # column -> (chunk index or the above, converter)


def _file(
    footer: Any, wanted: Sequence[Wanted], case_sensitive: bool, layouts: dict[str, Layout]
) -> _FileFigures:
    """One file's rows and wanted columns' figures. ``layouts``: where the wanted
    columns are, by file schema (text), shared by the files of one read."""
    metadata = footer.getParquetMetadata()
    schema = metadata.getFileMetaData().getSchema()
    text = schema.toString()
    layout = layouts.get(text)
    if layout is None:
        layout = layouts[text] = _layout(schema, wanted, case_sensitive)
    blocks = metadata.getBlocks()
    rows = 0
    figures: dict[str, list[ColumnFigures]] = {w.name: [] for w in wanted}
    for b in range(blocks.size()):
        block = blocks.get(b)
        block_rows = block.getRowCount()
        rows += block_rows
        chunks = block.getColumns()
        for w in wanted:
            index, convert = layout[w.name]
            if index == _UNKNOWN:
                figures[w.name].append(ColumnFigures(None, exact_bounds=False))
            elif index == _ABSENT:
                figures[w.name].append(ColumnFigures(block_rows))
            else:
                figures[w.name].append(_chunk(chunks.get(index), convert, block_rows))
    return _FileFigures(rows, {n: _merge(v) for n, v in figures.items()})


def _layout(schema: Any, wanted: Sequence[Wanted], case_sensitive: bool) -> Layout:
    """Where each wanted column's chunk is in a row group of files with this
    ``schema`` (chunks are in the order of the schema's leaves), and how to
    convert its min/max (None: not exact, or not wanted)."""
    fields = schema.getFields()
    top = {}  # top-level fields by (folded) name: primitive or not; None when ambiguous
    for i in range(fields.size()):
        field = fields.get(i)
        key = _fold_name(field.getName(), case_sensitive)
        top[key] = None if key in top else field.isPrimitive()
    descriptors = schema.getColumns()
    leaves: dict[str, list[tuple[int, Any]]] = {}
    for j in range(descriptors.size()):
        descriptor = descriptors.get(j)
        if descriptor.getMaxRepetitionLevel() == 0:
            primitive = descriptor.getPrimitiveType()
            name = _fold_name(primitive.getName(), case_sensitive)
            leaves.setdefault(name, []).append((j, primitive))
    layout: Layout = {}
    for w in wanted:
        key = _fold_name(w.name, case_sensitive)
        if key not in top:
            layout[w.name] = (_ABSENT, None)
        elif top[key] is True and len(leaves.get(key, ())) == 1:
            index, primitive = leaves[key][0]
            layout[w.name] = (index, _converter(w, primitive) if w.bounds else None)
        else:
            layout[w.name] = (_UNKNOWN, None)
    return layout


def _fold_name(name: str, case_sensitive: bool) -> str:
    return name if case_sensitive else name.lower()


def _chunk(chunk: Any, convert: Any, rows: int) -> ColumnFigures:
    """One column chunk's figures; min/max only with a ``convert``er."""
    stats = chunk.getStatistics()
    nulls = stats.getNumNulls() if stats.isNumNullsSet() else None
    if convert is None or nulls is None:
        return ColumnFigures(nulls, exact_bounds=False)
    if not stats.hasNonNullValue():
        # No min/max: exact only when every value is null.
        return ColumnFigures(nulls, exact_bounds=nulls == rows)
    low, high = convert(stats.genericGetMin()), convert(stats.genericGetMax())
    if low is None or high is None:
        return ColumnFigures(nulls, exact_bounds=False)
    return ColumnFigures(nulls, low, high)


def _converter(w: Wanted, primitive: Any) -> Any:
    """How to turn the file's raw min/max into the value Spark returns for the
    table's type; None when they are not exact for it."""
    physical = primitive.getPrimitiveTypeName().toString()
    logical = str(primitive.getLogicalTypeAnnotation())
    if w.kind == "DecimalType":
        if physical in ("INT32", "INT64") and logical == f"DECIMAL({w.precision},{w.scale})":
            scale = w.scale
            return lambda raw: decimal.Decimal(int(raw)).scaleb(-scale)
        return None
    expected = _BOUNDED.get(w.kind)
    if expected is None or physical != expected[0] or logical not in expected[1]:
        return None
    if w.kind == "DateType":
        return _date
    return int


def _date(raw: Any) -> dt.date | None:
    days = int(raw)
    if not _GREGORIAN_DAYS <= days <= _LAST_DAYS:
        return None
    return _EPOCH + dt.timedelta(days=days)


def _merge(parts: Sequence[ColumnFigures]) -> ColumnFigures:
    """Figures of the same column over several row groups or files."""
    if not parts:
        return ColumnFigures(0)
    nulls = None if any(p.nulls is None for p in parts) else sum(p.nulls or 0 for p in parts)
    lows = [p.low for p in parts if p.low is not None]
    highs = [p.high for p in parts if p.high is not None]
    return ColumnFigures(
        nulls,
        min(lows) if lows else None,
        max(highs) if highs else None,
        exact_bounds=all(p.exact_bounds for p in parts),
    )


def _fold(files: Sequence[_FileFigures], wanted: Sequence[Wanted]) -> Figures:
    return Figures(
        rows=sum(f.rows for f in files),
        columns={w.name: _merge([f.columns[w.name] for f in files]) for w in wanted},
    )
