"""Whole-table loads in worker processes: read, convert and encode off the daemon's GIL.

Reading a table from the metastore database and turning each partition into an
encoded catalog object is pure Python work, ~70 us per partition even after
sharing per-table work (:class:`~catalogd.conversion.objects.PartitionConverter`).
In threads it all runs under one GIL, beside the server thread. :class:`LoadWorkers`
runs it in ``processes`` worker processes instead, each with its own metastore
source; the daemon's loader threads wait for the encoded payloads (releasing the
GIL) and commit them as before. So a load uses every core, and the server thread
keeps its core.

The parts, one module each:

* :mod:`.pool`: where the worker processes come from (forked from the daemon when
  :meth:`LoadWorkers.start` is called first thing, else multiprocessing's fork
  server) and how they stop.
* :mod:`.tasks`: what a worker runs (:func:`catalogd.sources.load_table`, the
  table's cache-pool marks, :func:`catalogd.conversion.objects.encode_all`) through
  its own source.
* :mod:`.feed` and :mod:`.dispatch`: the order tasks reach the workers in (a large
  table's ranges first, batches of small tables last).
* :mod:`.ranges`: the ``PART_ID`` ranges a large table is read in.

What this module adds is the caller's side:

* **What loads here**: tables whose files are listed (``catalogd.files``) load in
  the daemon (the listing is I/O in threads, and the watcher's state lives there).
* **One large table** (more than ``split_above`` partitions, SQL source) is read
  by every worker at once: the caller asks for the ``PART_ID`` ranges
  (:func:`~catalogd.loading.ranges.split`, two queries through its own source,
  while the workers may still be starting; without one, a worker's first task
  does) and submits the header and each range as tasks of their own; the caller
  merges the payloads, so the commit is still one.
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
* **Lifetime**: workers reset the daemon's signal handlers and ask for SIGTERM
  when the process (thread) that forked them dies; :meth:`LoadWorkers.close`
  stops them.
* **Memory**: one table's payloads at a time per worker, pickled once across.

``source_factory`` must be picklable, and defined outside the main script
(``functools.partial(SqlSource, url)``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from catalogd import sources as loader
from catalogd.loading import tasks
from catalogd.loading.dispatch import Dispatcher
from catalogd.loading.feed import BATCH, RANGE, TABLE
from catalogd.loading.pool import WorkerPool, can_fork
from catalogd.loading.ranges import SPLIT_ABOVE, Ranges, split
from catalogd.loading.tasks import Marks
from subscriber.protocol.errors import CatalogError, MetastoreError

log = logging.getLogger(__name__)

__all__ = ["BATCH_PARTITIONS", "SPLIT_ABOVE", "LoadWorkers"]

# Small tables read together: at most this many partitions per worker task (the
# task's payloads, ~600 B per partition, cross to the daemon at once). A table of more
# loads alone: its ~20 queries no longer matter, and a large one streams in batches.
BATCH_PARTITIONS = 5_000


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
        self._pool: WorkerPool | None = None
        self._dispatch = Dispatcher(processes)
        self._closed = False
        self.forked = False  # start() forked them from this process (else: fork server)

    def _worker_pool(self, fork: bool = False) -> WorkerPool:
        """The current pool, made now if there is none (forked from this process with
        ``fork``, else by the fork server). Raises MetastoreError once closed."""
        with self._lock:
            if self._closed:
                raise MetastoreError("the load workers are closed")
            if self._pool is None:
                self._pool = WorkerPool(
                    self.processes,
                    fork=fork,
                    initializer=tasks.start_worker,
                    initargs=(self._factory,),
                )
            return self._pool

    def _executor(self, fork: bool = False) -> Executor:
        return self._worker_pool(fork).executor

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
        pool = self._worker_pool()
        executor = pool.executor
        marks = dict(marks or {})
        ranges = self._plan(planner, db, table)
        if ranges:
            reads = [
                self._dispatch.submit(executor, RANGE, tasks.header_payloads, db, table, marks)
            ]
            reads += [
                self._dispatch.submit(executor, RANGE, tasks.range_payloads, db, table, marks, r)
                for r in ranges
            ]
            try:
                payloads = reads[0].result()
                for future in reads[1:]:
                    payloads.update(future.result())
                return payloads
            except BrokenProcessPool as exc:
                raise self._broken(pool, f"{db}.{table}", exc) from exc
        try:
            try:
                split_above = None if ranges == [] else self.split_above  # [] : asked already
                payloads, ranges = self._dispatch.submit(
                    executor,
                    TABLE,
                    tasks.table_payloads,
                    db,
                    table,
                    marks,
                    split_above,
                    self.processes,
                ).result()
                parts = [
                    self._dispatch.submit(
                        executor, RANGE, tasks.range_payloads, db, table, marks, r
                    )
                    for r in ranges
                ]
            finally:
                self._dispatch.table_done()
            for future in parts:
                payloads.update(future.result())
            return payloads
        except BrokenProcessPool as exc:
            raise self._broken(pool, f"{db}.{table}", exc) from exc

    def _plan(self, planner: loader.MetastoreSource | None, db: str, table: str) -> Ranges | None:
        """:func:`~catalogd.loading.ranges.split` asked through ``planner`` in this
        process; None without one, or when it cannot tell (the worker's first task then
        decides, and raises)."""
        if planner is None:
            return None
        try:
            return split(planner, db, table, self.split_above, self.processes)
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
        pool = self._worker_pool()
        wanted = dict((marks or {}).items())
        payloads: dict[str, dict[str, bytes]] = {}
        alone: list[str] = []
        todo = list(tables)
        try:
            while todo:
                read, todo, single = self._dispatch.submit(
                    pool.executor,
                    BATCH,
                    tasks.tables_payloads,
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

    def _broken(self, pool: WorkerPool, what: str, exc: BaseException) -> MetastoreError:
        with self._lock:
            if self._pool is pool:
                self._pool = None  # the next call starts a new pool
        pool.abandon()
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
        self._dispatch.hold()
        started: list[Future[Any]] | None = None
        if can_fork():
            try:
                executor = self._executor(fork=True)
                started = [executor.submit(int) for _ in range(self.processes)]  # forks here
                self.forked = True
            except (MetastoreError, RuntimeError, OSError) as exc:
                log.warning("cannot fork load workers (%s): the fork server starts them", exc)
                with self._lock:
                    broken, self._pool = self._pool, None
                if broken is not None:
                    broken.abandon()
                started = None
        threading.Thread(
            target=self._warm, args=(started,), name="catalogd-load-workers-start", daemon=True
        ).start()
        return self

    def _warm(self, started: list[Future[Any]] | None) -> None:
        try:
            if started is None:
                executor = self._executor()
                started = [executor.submit(int) for _ in range(self.processes)]
            for future in started:
                future.result(timeout=120)
        except Exception as exc:  # noqa: BLE001 - closed meanwhile, or broken: tasks will say
            log.debug("load workers not started: %s", exc)
        finally:
            self._dispatch.release()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the workers: queued loads are cancelled, running ones get ``timeout``
        seconds to finish (their callers then fail), then the workers are killed."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        self._dispatch.cancel(MetastoreError("the load workers are closed"))
        if pool is not None:
            pool.stop(timeout)

    def __enter__(self) -> LoadWorkers:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
