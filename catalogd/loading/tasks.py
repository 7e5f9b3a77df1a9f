"""What a load worker process runs: its start, and the tasks that read, convert and encode tables.

* :func:`start_worker` is each worker's initializer: it makes the process's own
  metastore source (kept in this module, one per process: every task of that
  worker reads through it) and resets what a worker forked from the daemon
  inherited (signal handlers; it dies with the daemon,
  :func:`catalogd.lifeline.die_with_parent`).
* The tasks (:func:`table_payloads`, :func:`header_payloads`,
  :func:`range_payloads`, :func:`tables_payloads`) return encoded payloads by key,
  pickled once across to the daemon; they raise what a source call raises
  (``NotFoundError``, ``MetastoreUnavailableError``, ...), which reaches the caller
  as it is. Each runs with the cyclic garbage collector paused
  (:func:`_paused_collection`).

Every name here is imported by the workers by reference (pickled functions), so
the module must stay importable without the daemon's main script.
"""

from __future__ import annotations

import functools
import gc
import signal
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from catalogd import sources as loader
from catalogd.conversion import objects as convert
from catalogd.conversion import partitions
from catalogd.core import cache_pools as caching
from catalogd.lifeline import die_with_parent
from catalogd.loading.ranges import Ranges, split
from catalogd.sources import bulk
from subscriber.protocol.errors import CatalogError

__all__ = [
    "Batch",
    "Marks",
    "header_payloads",
    "range_payloads",
    "start_worker",
    "table_payloads",
    "tables_payloads",
]

# A table's cache-pool marks: pool name by partition name (None: the table itself).
Marks = dict[str | None, str]
# What a batch of small tables gives: (payloads by table, tables for a later batch,
# tables to load alone).
Batch = tuple[dict[str, dict[str, bytes]], list[str], list[str]]

P = ParamSpec("P")
R = TypeVar("R")

# This worker process's own source, made by start_worker.
_source: loader.MetastoreSource | None = None


def start_worker(factory: Callable[[], loader.MetastoreSource]) -> None:
    """A worker's initializer: reset inherited signal handlers, die with the parent,
    make the source."""
    global _source
    # A worker forked from the daemon inherits its Python signal handlers: it must
    # die on SIGTERM (sent when the daemon dies, and by close()), not set the
    # daemon's stop event in its own copy.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    die_with_parent()
    _source = factory()
    gc.freeze()  # what the worker imported is never garbage: keep it out of every collection


def _paused_collection(task: Callable[P, R]) -> Callable[P, R]:
    """``task`` run with the cyclic garbage collector paused until it has returned.

    A table's objects (~20 structs per partition, all kept until encoded) are no
    garbage, but each allocation burst triggers collections that walk them again
    and again: measured, a third of the worker's time (90 -> 58 us per partition).
    They hold no reference cycles, so reference counting frees them when ``task``
    returns, still paused: collecting while they were alive walked them all once
    more (4% of the worker's time). What a library leaves in cycles waits for the
    next collection.
    """

    @functools.wraps(task)  # the same qualified name: pickled by reference as the task
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        gc.disable()
        try:
            return task(*args, **kwargs)
        finally:
            gc.enable()

    return paused


def _worker_source() -> loader.MetastoreSource:
    assert _source is not None, "worker started without its source"
    return _source


@_paused_collection
def table_payloads(
    db: str, table: str, marks: Marks, split_above: int | None, workers: int = 1
) -> tuple[dict[str, bytes], Ranges]:
    """One table's encoded objects by key (raises as ``load_table``), and no ranges; or,
    for a table :func:`~catalogd.loading.ranges.split` splits (``split_above`` None: the
    caller found it does not), only its header and the ranges to read in parallel
    (:func:`range_payloads`)."""
    source = _worker_source()
    table_struct = loader.hms_table(source, db, table)
    ranges: Ranges | None = []
    if split_above is not None and table_struct.partitionKeys and not convert.is_view(table_struct):
        ranges = split(source, db, table, split_above, workers)
    if ranges:
        objects = _header_objects(source, table_struct)
    else:
        ranges = []
        objects, _ = loader.load_table_objects(source, table_struct)
    caching.apply_marks(objects, marks)
    return convert.encode_all(objects), ranges


def _header_objects(source: loader.MetastoreSource, table_struct: Any) -> dict[str, Any]:
    key, header = convert.table_object(table_struct, loader.column_stats_of(source, table_struct))
    return {key: header}


@_paused_collection
def header_payloads(db: str, table: str, marks: Marks) -> dict[str, bytes]:
    """A table's header object alone, encoded (its partitions are read by
    :func:`range_payloads`)."""
    source = _worker_source()
    objects = _header_objects(source, loader.hms_table(source, db, table))
    caching.apply_marks(objects, marks)
    return convert.encode_all(objects)


@_paused_collection
def range_payloads(
    db: str, table: str, marks: Marks, id_range: tuple[int, int | None]
) -> dict[str, bytes]:
    """The encoded partitions of one of a table's ``PART_ID`` ranges."""
    source = bulk(_worker_source())
    if source is None:
        raise TypeError("a range of partitions needs a BulkSource")
    converter = partitions.PartitionConverter(loader.hms_table(source, db, table))
    objects = dict(map(converter, source.partitions_in_range(db, table, id_range)))
    caching.apply_marks(objects, marks)
    return convert.encode_all(objects)


@_paused_collection
def tables_payloads(db: str, names: list[str], marks: dict[str, Marks], budget: int) -> Batch:
    """Several tables of ``db`` read together, as ``(payloads by table, tables to read
    in a later batch, tables to load alone)``.

    Tables are taken in order while their partitions fit in ``budget``; the rest
    wait for a later batch. A table loads alone when it is missing (the single load
    raises NotFoundError), larger than ``budget``, or fails to convert (the single
    load raises it), or when the source cannot read tables together.
    """
    source = bulk(_worker_source())
    if source is None:
        return {}, [], list(names)
    tables = {t.tableName.lower(): t for t in source.get_tables(db, names)}
    counts = source.partition_counts(db, list(tables))
    chosen: list[str] = []
    later: list[str] = []
    alone = [n for n in names if n not in tables]
    total = 0
    for name in (n for n in names if n in tables):
        count = counts.get(name, 0)
        if count > budget:
            alone.append(name)
        elif total + count > budget:
            later.append(name)
        else:
            chosen.append(name)
            total += count
    partitioned = [n for n in chosen if tables[n].partitionKeys and not convert.is_view(tables[n])]
    parts = source.tables_partitions(db, partitioned) if partitioned else {}
    payloads: dict[str, dict[str, bytes]] = {}
    for name in chosen:
        table = tables[name]
        try:
            objects = convert.table_objects(
                table, parts.get(name, ()), loader.column_stats_of(source, table)
            )
            caching.apply_marks(objects, marks.get(name, {}))
            payloads[name] = convert.encode_all(objects)
        except CatalogError:
            alone.append(name)  # its single load raises the error, for it alone
    return payloads, later, alone
