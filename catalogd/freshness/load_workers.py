"""Whole-table loads in worker processes: read, convert and encode off the daemon's GIL.

Reading a table from the metastore database and turning each partition into an
encoded catalog object is pure Python work, ~70 us per partition even after
sharing per-table work (:class:`~catalogd.metastore.convert.PartitionConverter`).
In threads it all runs under one GIL, beside the server thread. :class:`LoadWorkers`
runs it in ``processes`` spawned worker processes instead, each with its own
metastore source; the daemon's loader threads wait for the encoded payloads
(releasing the GIL) and commit them as before. So a load uses every core, and
the server thread keeps its core.

* **What runs there**: :func:`catalogd.metastore.source.load_table`, the table's
  cache-pool marks, :func:`catalogd.metastore.convert.encode_all`. Tables whose
  files are listed (``catalogd.files``) load in the daemon (the listing is I/O in
  threads, and the watcher's state lives there).
* **One large table** (more than ``split_above`` partitions, SQL source) is read
  by every worker at once: one reads the header and the ``PART_ID`` ranges
  (:meth:`~catalogd.metastore.sql.SqlSource.partition_ranges`), then each range is
  a task of its own; the caller merges the payloads, so the commit is still one.
* **Errors** raised in a worker (``NotFoundError``, ``MetastoreUnavailableError``,
  ...) are raised in the caller as they are. A worker that dies (killed, out of
  memory) breaks the pool: the call raises :class:`MetastoreError` and the next
  call starts a new pool.
* **Lifetime**: workers are spawned (never forked: the daemon has threads and
  ZeroMQ sockets), ask for SIGTERM when the daemon dies, and are stopped by
  :meth:`LoadWorkers.close`.
* **Memory**: one table's payloads at a time per worker, pickled once across.

``source_factory`` must be picklable (``functools.partial(SqlSource, url)``).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from catalogd.core import cache_pools as caching
from catalogd.metastore import convert
from catalogd.metastore import source as loader
from catalogd.metastore.embedded.lifeline import die_with_parent
from subscriber.protocol.errors import MetastoreError

log = logging.getLogger(__name__)

__all__ = ["LoadWorkers"]

Marks = dict[str | None, str]

# Partitions per range when one large table is read by several workers: big enough
# that the per-range cost (reading the table's header again, ~ms) stays under 1%.
SPLIT_ABOVE = 20_000

# The worker process's own source, made by _start_worker.
_source: loader.MetastoreSource | None = None


def _start_worker(factory: Callable[[], loader.MetastoreSource]) -> None:
    global _source
    die_with_parent()
    _source = factory()
    gc.freeze()  # what the worker imported is never garbage: keep it out of every collection


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector while a table is converted.

    A table's objects (~20 structs per partition, all kept until encoded) are no
    garbage, but each allocation burst triggers collections that walk them again
    and again: measured, a third of the worker's time (90 -> 58 us per partition).
    They hold no reference cycles, so plain reference counting frees them; one
    young-generation collection afterwards picks up any cycle a library made.
    """
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)


def _worker_source() -> Any:
    assert _source is not None, "worker started without its source"
    return _source


def _table_payloads(
    db: str, table: str, marks: Marks, split_above: int
) -> tuple[dict[str, bytes], list[tuple[int, int | None]]]:
    """In a worker: one table's encoded objects by key (raises as ``load_table``), and
    no ranges; or, for a table of more than ``split_above`` partitions whose source
    reads by ranges, only its header and the ``PART_ID`` ranges to read in parallel
    (:func:`_range_payloads`)."""
    with _no_cycle_collection():
        source = _worker_source()
        table_struct = loader.hms_table(source, db, table)
        ranges: list[tuple[int, int | None]] = []
        by_range = getattr(source, "partition_ranges", None)
        if (
            by_range is not None
            and table_struct.partitionKeys
            and not convert.is_view(table_struct)
        ):
            ranges = by_range(db, table, split_above)
        if len(ranges) > 1:
            column_stats = loader.column_stats_of(source, table_struct)
            key, header = convert.table_object(table_struct, column_stats)
            objects = {key: header}
        else:
            ranges = []
            objects, _ = loader.load_table_objects(source, table_struct)
        caching.apply_marks(objects, marks)
        return convert.encode_all(objects), ranges


def _range_payloads(
    db: str, table: str, marks: Marks, id_range: tuple[int, int | None]
) -> dict[str, bytes]:
    """In a worker: the encoded partitions of one of a table's ``PART_ID`` ranges."""
    with _no_cycle_collection():
        source = _worker_source()
        converter = convert.PartitionConverter(loader.hms_table(source, db, table))
        objects = dict(map(converter, source.partitions(db, table, id_range=id_range)))
        caching.apply_marks(objects, marks)
        return convert.encode_all(objects)


class LoadWorkers:
    """A pool of ``processes`` worker processes loading whole tables. Thread-safe.

    Args:
        source_factory: makes each worker's metastore source (picklable).
        processes: worker processes (at least 1).
        split_above: a table with more partitions is read by several workers at
            once, in ``PART_ID`` ranges of this many (SQL source only).
    """

    def __init__(
        self,
        source_factory: Callable[[], loader.MetastoreSource],
        processes: int,
        *,
        split_above: int = SPLIT_ABOVE,
    ):
        if processes < 1:
            raise ValueError("processes must be at least 1")
        self.processes = processes
        self.split_above = split_above
        self._factory = source_factory
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._closed = False

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise MetastoreError("the load workers are closed")
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self.processes,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start_worker,
                    initargs=(self._factory,),
                )
            return self._pool

    def table_payloads(self, db: str, table: str, marks: Marks | None = None) -> dict[str, bytes]:
        """``db.table``'s header and partitions, encoded, by key. Blocks until a
        worker has read it.

        Raises: what :func:`catalogd.metastore.source.load_table` raises (NotFoundError,
        MetastoreUnavailableError, ...); MetastoreError when a worker died or the
        pool is closed.
        """
        pool = self._executor()
        marks = dict(marks or {})
        try:
            payloads, ranges = pool.submit(
                _table_payloads, db, table, marks, self.split_above
            ).result()
            parts = [pool.submit(_range_payloads, db, table, marks, r) for r in ranges]
            for future in parts:
                payloads.update(future.result())
            return payloads
        except BrokenProcessPool as exc:
            with self._lock:
                if self._pool is pool:
                    self._pool = None  # the next call starts a new pool
            pool.shutdown(wait=False, cancel_futures=True)
            log.warning("a load worker died while loading %s.%s: %s", db, table, exc)
            raise MetastoreError(f"a load worker died while loading {db}.{table}") from exc

    def start(self) -> LoadWorkers:
        """Spawn the workers now (they import catalogd and connect while names load)."""
        pool = self._executor()
        for _ in range(self.processes):
            pool.submit(int)
        return self

    def pids(self) -> list[int]:
        """The worker processes' ids (for measurements)."""
        with self._lock:
            pool = self._pool
        return list(getattr(pool, "_processes", None) or {})

    def close(self, timeout: float = 5.0) -> None:
        """Stop the workers: queued loads are cancelled, running ones get ``timeout``
        seconds to finish (their callers then fail), then the workers are killed."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is None:
            return
        processes = list((getattr(pool, "_processes", None) or {}).values())
        # The executor joins its workers itself: let it, in a thread we can stop waiting for.
        stopping = threading.Thread(
            target=pool.shutdown, kwargs={"wait": True, "cancel_futures": True}, daemon=True
        )
        stopping.start()
        stopping.join(timeout)
        if stopping.is_alive():
            for process in processes:
                if process.exitcode is None:
                    log.warning(
                        "load worker %s did not stop in %.0f s: killing it", process.pid, timeout
                    )
                    process.kill()
            stopping.join(1.0)

    def __enter__(self) -> LoadWorkers:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
