"""Whole-table loads in worker processes: read, convert and encode off the daemon's GIL.

Reading a table from the metastore database and turning each partition into an
encoded catalog object is pure Python work, ~70 us per partition even after
sharing per-table work (:class:`~catalogd.conversion.objects.PartitionConverter`).
In threads it all runs under one GIL, beside the server thread. :class:`LoadWorkers`
runs it in ``processes`` spawned worker processes instead, each with its own
metastore source; the daemon's loader threads wait for the encoded payloads
(releasing the GIL) and commit them as before. So a load uses every core, and
the server thread keeps its core.

* **What runs there**: :func:`catalogd.sources.load_table`, the table's
  cache-pool marks, :func:`catalogd.conversion.objects.encode_all`. Tables whose
  files are listed (``catalogd.files``) load in the daemon (the listing is I/O in
  threads, and the watcher's state lives there).
* **One large table** (more than ``split_above`` partitions, SQL source) is read
  by every worker at once: the caller asks for the ``PART_ID`` ranges
  (:meth:`~catalogd.sources.sql.SqlSource.partition_ranges`, two queries through
  its own source, while the workers may still be starting; without one, a worker's
  first task does) and submits the header and each range as tasks of their own; the
  caller merges the payloads, so the commit is still one.
* **Many small tables** of one database are read together
  (:meth:`LoadWorkers.tables_payloads`, SQL source): their headers, partition
  counts and partitions in one set of queries for up to ``batch_partitions``
  partitions, where one table at a time costs ~20 queries and ~20 ms of CPU each
  (measured: 100 tables of 100 partitions, 2.0 s of worker CPU one by one).
  Larger, missing or unconvertible tables are left to :meth:`LoadWorkers.table_payloads`,
  which raises what a single load raises.
* **Errors** raised in a worker (``NotFoundError``, ``MetastoreUnavailableError``,
  ...) are raised in the caller as they are. A worker that dies (killed, out of
  memory) breaks the pool: the call raises :class:`MetastoreError` and the next
  call starts a new pool.
* **Lifetime**: workers are forked from the daemon itself when
  :meth:`LoadWorkers.start` is called first thing, from its main thread, with no
  other thread running (they share what it imported: ready in ~30 ms). Otherwise,
  and for every pool made later (after a worker died, when the daemon runs threads
  and sockets), they come from multiprocessing's *fork server*, a clean process
  started once per daemon that imports :data:`PRELOAD` (not the daemon's main
  script: :mod:`catalogd.loading.forkserver_main`) before forking each worker:
  ~0.7 s of CPU before the first task, measured (spawning instead imported all of
  it in every worker, ~0.85 s each). Workers reset the daemon's signal handlers and
  ask for SIGTERM when the process (thread) that forked them dies; the fork server
  dies with the daemon (it watches a pipe from it); :meth:`LoadWorkers.close` stops
  them.
* **Memory**: one table's payloads at a time per worker, pickled once across.

``source_factory`` must be picklable, and defined outside the main script
(``functools.partial(SqlSource, url)``).
"""

from __future__ import annotations

import functools
import gc
import heapq
import itertools
import logging
import multiprocessing
import multiprocessing.context
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import spawn
from typing import Any, TypeVar

from catalogd import sources as loader
from catalogd.conversion import objects as convert
from catalogd.core import cache_pools as caching
from catalogd.hms.embedded.lifeline import die_with_parent
from catalogd.loading import forkserver_main
from catalogd.sources import bulk
from subscriber.protocol.errors import CatalogError, MetastoreError

log = logging.getLogger(__name__)

__all__ = ["LoadWorkers"]

Marks = dict[str | None, str]
T = TypeVar("T")

# Partitions per range when one large table is read by several workers: big enough
# that the per-range cost (reading the table's header again, ~ms) stays under 1%.
SPLIT_ABOVE = 20_000

# Small tables read together: at most this many partitions per worker task (the
# task's payloads, ~600 B per partition, cross to the daemon at once). A table of more
# loads alone: its ~20 queries no longer matter, and a large one streams in batches.
BATCH_PARTITIONS = 5_000

# Imported once by the fork server, before it forks workers: what a worker runs
# (modules that are not installed are skipped).
PRELOAD = [
    "catalogd.loading.forkserver_main",  # no worker runs the main script (see there)
    "catalogd.loading.workers",
    "catalogd.sources.sql",
    "sqlalchemy.dialects.postgresql.psycopg",
    "sqlalchemy.dialects.mysql.pymysql",
    "psycopg",
    "pymysql",
]

# The worker process's own source, made by _start_worker.
_source: loader.MetastoreSource | None = None


def _start_worker(factory: Callable[[], loader.MetastoreSource]) -> None:
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


# Threads that may run while workers are forked: pyzmq's garbage collector for
# zero-copy sends only waits on its own ZeroMQ socket, which no worker touches.
_HARMLESS_THREADS = ("GarbageCollectorThread",)


def _can_fork() -> bool:
    """Whether workers may be forked from this process now: on Linux, from the main
    thread (a worker dies with the thread that forked it, ``die_with_parent``) of a
    process that runs no other Python thread but :data:`_HARMLESS_THREADS` (a lock
    another thread held would stay held in the child). Threads of C libraries
    (ZeroMQ's I/O threads) are not seen; a worker never calls into them, and ends
    with ``os._exit``."""
    main = threading.main_thread()
    return (
        sys.platform == "linux"
        and threading.current_thread() is main
        and all(t is main or type(t).__name__ in _HARMLESS_THREADS for t in threading.enumerate())
    )


def _context(fork: bool = False) -> multiprocessing.context.BaseContext:
    if fork:
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver")
    main_path = spawn.get_preparation_data("catalogd-load-worker").get("init_main_from_path")
    if main_path and os.environ.get(forkserver_main.MAIN_PATH) != main_path:
        os.environ[forkserver_main.MAIN_PATH] = main_path  # read by the fork server
    context.set_forkserver_preload(PRELOAD)
    return context


def _without_cycle_collection(task: Callable[..., T], *args: Any) -> T:
    """``task(*args)`` with the cyclic garbage collector paused until it has returned.

    A table's objects (~20 structs per partition, all kept until encoded) are no
    garbage, but each allocation burst triggers collections that walk them again
    and again: measured, a third of the worker's time (90 -> 58 us per partition).
    They hold no reference cycles, so reference counting frees them when ``task``
    returns, still paused: collecting while they were alive walked them all once
    more (4% of the worker's time). What a library leaves in cycles waits for the
    next collection.
    """
    gc.disable()
    try:
        return task(*args)
    finally:
        gc.enable()


def _worker_source() -> Any:
    assert _source is not None, "worker started without its source"
    return _source


Ranges = list[tuple[int, int | None]]


def _split(source: Any, db: str, table: str, split_above: int, workers: int) -> Ranges | None:
    """The ``PART_ID`` ranges to read ``db.table`` in: a multiple of ``workers`` ranges of
    equal size, at most ``split_above`` partitions each, so every worker gets the same
    share; ``[]`` for a table of at most ``split_above`` partitions (or a view, or an
    unpartitioned table: 0); None when ``source`` cannot read by ranges. Two queries."""
    bulk_source = bulk(source)
    if bulk_source is None:
        return None
    count = bulk_source.partition_counts(db, [table]).get(table.lower(), 0)
    if count <= split_above:
        return []
    shares = workers * -(-count // (workers * split_above))
    ranges: Ranges = bulk_source.partition_ranges(db, table, -(-count // shares))
    return ranges if len(ranges) > 1 else []


def _table_payloads(
    db: str, table: str, marks: Marks, split_above: int | None, workers: int = 1
) -> tuple[dict[str, bytes], Ranges]:
    """In a worker: one table's encoded objects by key (raises as ``load_table``), and
    no ranges; or, for a table :func:`_split` splits (``split_above`` None: the caller
    found it does not), only its header and the ranges to read in parallel
    (:func:`_range_payloads`)."""
    source = _worker_source()
    table_struct = loader.hms_table(source, db, table)
    ranges: Ranges | None = []
    if split_above is not None and table_struct.partitionKeys and not convert.is_view(table_struct):
        ranges = _split(source, db, table, split_above, workers)
    if ranges:
        objects = _header_objects(source, table_struct)
    else:
        ranges = []
        objects, _ = loader.load_table_objects(source, table_struct)
    caching.apply_marks(objects, marks)
    return convert.encode_all(objects), ranges


def _header_objects(source: Any, table_struct: Any) -> dict[str, Any]:
    key, header = convert.table_object(table_struct, loader.column_stats_of(source, table_struct))
    return {key: header}


def _header_payloads(db: str, table: str, marks: Marks) -> dict[str, bytes]:
    """In a worker: a table's header object alone, encoded (its partitions are read
    by :func:`_range_payloads`)."""
    source = _worker_source()
    objects = _header_objects(source, loader.hms_table(source, db, table))
    caching.apply_marks(objects, marks)
    return convert.encode_all(objects)


def _range_payloads(
    db: str, table: str, marks: Marks, id_range: tuple[int, int | None]
) -> dict[str, bytes]:
    """In a worker: the encoded partitions of one of a table's ``PART_ID`` ranges."""
    source = bulk(_worker_source())
    if source is None:
        raise TypeError("a range of partitions needs a BulkSource")
    converter = convert.PartitionConverter(loader.hms_table(source, db, table))
    objects = dict(map(converter, source.partitions_in_range(db, table, id_range)))
    caching.apply_marks(objects, marks)
    return convert.encode_all(objects)


Batch = tuple[dict[str, dict[str, bytes]], list[str], list[str]]


def _tables_payloads(db: str, names: list[str], marks: dict[str, Marks], budget: int) -> Batch:
    """In a worker: several tables of ``db`` read together, as ``(payloads by table,
    tables to read in a later batch, tables to load alone)``.

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


# Task priorities (lower first): the ranges of a large table, then single tables, then
# batches of small ones, which also wait while a single table's first task runs (it may
# name ranges to read). The large table's read then ends early, and its commit (one
# long submission on the server thread, ~1 s per 100,000 partitions) runs while the
# workers still read small tables, instead of after everything.
RANGE, TABLE, BATCH = 0, 1, 2


class _Feed:
    """Hands a process pool at most ``slots`` tasks at a time, the most urgent first
    (a ``ProcessPoolExecutor`` runs what it is given in submission order), and no
    ``BATCH`` task while a ``TABLE`` task is queued, runs, or has not had its ranges
    submitted (:meth:`table_done`); nothing while :meth:`hold` lasts."""

    def __init__(self, slots: int) -> None:
        self._slots = slots
        self._lock = threading.Lock()
        self._queue: list[tuple[int, int, ProcessPoolExecutor, Callable[..., Any], Any, Any]] = []
        self._seq = itertools.count()
        self._running = 0
        self._tables = 0  # TABLE tasks submitted and not yet table_done()
        self._held = False

    def hold(self) -> None:
        """Keep what is submitted queued until :meth:`release`: while the workers start,
        every table's first task arrives, and the most urgent then goes first (handed
        over at once, the first few small-table batches took the workers before the
        large table's task had arrived, and its commit came last)."""
        with self._lock:
            self._held = True

    def release(self) -> None:
        with self._lock:
            self._held = False
        self._feed()

    def submit(
        self, pool: ProcessPoolExecutor, priority: int, task: Callable[..., T], *args: Any
    ) -> Future[T]:
        outer: Future[T] = Future()
        with self._lock:
            heapq.heappush(self._queue, (priority, next(self._seq), pool, task, args, outer))
            self._tables += priority == TABLE
        self._feed()
        return outer

    def table_done(self) -> None:
        """A ``TABLE`` task's caller has submitted the ranges it named (or failed): batches
        may go. Called once per ``TABLE`` submission."""
        with self._lock:
            self._tables -= 1
        self._feed()

    def _feed(self) -> None:
        while True:
            with self._lock:
                if self._held or self._running >= self._slots or not self._queue:
                    return
                if self._queue[0][0] == BATCH and self._tables:
                    return
                priority, _, pool, task, args, outer = heapq.heappop(self._queue)
                self._running += 1
            try:
                inner = pool.submit(_without_cycle_collection, task, *args)
            except (BrokenProcessPool, RuntimeError) as exc:  # broken, or shut down
                with self._lock:
                    self._running -= 1
                closed = MetastoreError("the load workers are closed")
                outer.set_exception(exc if isinstance(exc, BrokenProcessPool) else closed)
                continue
            inner.add_done_callback(functools.partial(self._finished, outer))

    def _finished(self, outer: Future[Any], inner: Future[Any]) -> None:
        with self._lock:
            self._running -= 1
        if inner.cancelled():
            outer.set_exception(MetastoreError("the load workers are closed"))
        elif inner.exception() is not None:
            outer.set_exception(inner.exception())  # type: ignore[arg-type]
        else:
            outer.set_result(inner.result())
        self._feed()

    def cancel(self, error: Exception) -> None:
        """Fail every task not handed to the pool yet with ``error``."""
        with self._lock:
            queued, self._queue = self._queue, []
        for *_, outer in queued:
            outer.set_exception(error)


class LoadWorkers:
    """A pool of ``processes`` worker processes loading whole tables. Thread-safe.

    Args:
        source_factory: makes each worker's metastore source (picklable).
        processes: worker processes (at least 1).
        split_above: a table with more partitions is read by several workers at
            once, in ``PART_ID`` ranges of this many (SQL source only).
        batch_partitions: small tables read together, up to this many partitions
            per task (SQL source only).
    """

    def __init__(
        self,
        source_factory: Callable[[], loader.MetastoreSource],
        processes: int,
        *,
        split_above: int = SPLIT_ABOVE,
        batch_partitions: int = BATCH_PARTITIONS,
    ):
        if processes < 1:
            raise ValueError("processes must be at least 1")
        self.processes = processes
        self.split_above = split_above
        self.batch_partitions = batch_partitions
        self._factory = source_factory
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._feed = _Feed(processes)
        self._closed = False
        self._starting: threading.Thread | None = None
        self._spawned = threading.Event()  # start() has forked the workers
        self.forked = False  # start() forked them from this process (else: fork server)

    def _executor(self, fork: bool = False) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise MetastoreError("the load workers are closed")
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self.processes,
                    mp_context=_context(fork),
                    initializer=_start_worker,
                    initargs=(self._factory,),
                )
            return self._pool

    def table_payloads(
        self,
        db: str,
        table: str,
        marks: Marks | None = None,
        *,
        planner: loader.MetastoreSource | None = None,
    ) -> dict[str, bytes]:
        """``db.table``'s header and partitions, encoded, by key. Blocks until a
        worker has read it. With ``planner`` (the calling thread's own source) a large
        table's ranges are asked for here, so its header and every range start at once
        (a worker's first task would find the same ranges while the other worker waited).

        Raises: what :func:`catalogd.sources.load_table` raises (NotFoundError,
        MetastoreUnavailableError, ...); MetastoreError when a worker died or the
        pool is closed.
        """
        pool = self._executor()
        marks = dict(marks or {})
        ranges = self._plan(planner, db, table)
        if ranges:
            tasks = [self._feed.submit(pool, RANGE, _header_payloads, db, table, marks)]
            tasks += [
                self._feed.submit(pool, RANGE, _range_payloads, db, table, marks, r) for r in ranges
            ]
            try:
                payloads = tasks[0].result()
                for future in tasks[1:]:
                    payloads.update(future.result())
                return payloads
            except BrokenProcessPool as exc:
                raise self._broken(pool, f"{db}.{table}", exc) from exc
        try:
            try:
                split_above = None if ranges == [] else self.split_above  # [] : asked already
                payloads, ranges = self._feed.submit(
                    pool, TABLE, _table_payloads, db, table, marks, split_above, self.processes
                ).result()
                parts = [
                    self._feed.submit(pool, RANGE, _range_payloads, db, table, marks, r)
                    for r in ranges
                ]
            finally:
                self._feed.table_done()
            for future in parts:
                payloads.update(future.result())
            return payloads
        except BrokenProcessPool as exc:
            raise self._broken(pool, f"{db}.{table}", exc) from exc

    def _plan(self, planner: Any, db: str, table: str) -> Ranges | None:
        """:func:`_split` asked through ``planner`` in this process; None without one, or
        when it cannot tell (the worker's first task then decides, and raises)."""
        if planner is None:
            return None
        try:
            return _split(planner, db, table, self.split_above, self.processes)
        except CatalogError as exc:
            log.debug("no ranges for %s.%s here (%s): a worker decides", db, table, exc)
            return None

    def tables_payloads(
        self, db: str, tables: Sequence[str], marks: dict[str, Marks] | None = None
    ) -> tuple[dict[str, dict[str, bytes]], list[str]]:
        """Several small tables of ``db`` read together (see the module doc), as
        ``(payloads by table, tables left to load alone with`` :meth:`table_payloads`
        ``)``. Blocks until workers have read them.

        Raises: MetastoreUnavailableError and the other errors of a source call, for
        the whole batch; MetastoreError when a worker died or the pool is closed.
        """
        pool = self._executor()
        wanted = dict((marks or {}).items())
        payloads: dict[str, dict[str, bytes]] = {}
        alone: list[str] = []
        todo = list(tables)
        try:
            while todo:
                read, todo, single = self._feed.submit(
                    pool,
                    BATCH,
                    _tables_payloads,
                    db,
                    todo,
                    {t: wanted[t] for t in todo if t in wanted},
                    self.batch_partitions,
                ).result()
                payloads.update(read)
                alone += single
                if not read:  # nothing fitted: load the rest alone
                    alone += todo
                    break
        except BrokenProcessPool as exc:
            raise self._broken(pool, f"{len(todo)} tables of {db}", exc) from exc
        return payloads, alone

    def _broken(self, pool: ProcessPoolExecutor, what: str, exc: BaseException) -> MetastoreError:
        with self._lock:
            if self._pool is pool:
                self._pool = None  # the next call starts a new pool
        pool.shutdown(wait=False, cancel_futures=True)
        log.warning("a load worker died while loading %s: %s", what, exc)
        return MetastoreError(f"a load worker died while loading {what}")

    def start(self) -> LoadWorkers:
        """Start the workers and return at once. Called from the main thread of a
        process with no other thread (the daemon, first thing), it forks them from
        this process, which has imported everything they run already (~30 ms);
        otherwise the fork server starts them in the background (it imports catalogd
        first: ~0.7 s of CPU, measured, that a load's first task waited for). Pools
        made later (after a worker died) always come from the fork server. Tasks
        submitted meanwhile wait, and go by priority once the workers are up."""
        self._feed.hold()
        started: list[Future[Any]] | None = None
        if _can_fork():
            try:
                pool = self._executor(fork=True)
                started = [pool.submit(int) for _ in range(self.processes)]  # forks here
                self.forked = True
            except (MetastoreError, RuntimeError, OSError) as exc:
                log.warning("cannot fork load workers (%s): the fork server starts them", exc)
                with self._lock:
                    broken, self._pool = self._pool, None
                if broken is not None:
                    broken.shutdown(wait=False, cancel_futures=True)
                started = None
        self._starting = threading.Thread(
            target=self._warm, args=(started,), name="catalogd-load-workers-start", daemon=True
        )
        self._starting.start()
        return self

    def _warm(self, started: list[Future[Any]] | None) -> None:
        try:
            if started is None:
                pool = self._executor()
                started = [pool.submit(int) for _ in range(self.processes)]
            self._spawned.set()
            for future in started:
                future.result(timeout=120)
        except Exception as exc:  # noqa: BLE001 - closed meanwhile, or broken: tasks will say
            log.debug("load workers not started: %s", exc)
        finally:
            self._spawned.set()
            self._feed.release()

    def pids(self) -> list[int]:
        """The worker processes' ids (for measurements), once :meth:`start` has started them."""
        if self._starting is not None:
            self._spawned.wait(30)
        with self._lock:
            pool = self._pool
        return list(getattr(pool, "_processes", None) or {})

    def close(self, timeout: float = 5.0) -> None:
        """Stop the workers: queued loads are cancelled, running ones get ``timeout``
        seconds to finish (their callers then fail), then the workers are killed."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        self._feed.cancel(MetastoreError("the load workers are closed"))
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
