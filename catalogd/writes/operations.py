"""Catalog operations that read HMS and publish the difference.

:class:`Operations` is the one way into the catalog for the admin handlers, the
change detector and the table loader: nobody else submits to the server
thread. Each operation reads HMS in the calling thread (one metastore source
per thread) and encodes, then makes ONE submission to the server thread that
plans (a :mod:`catalogd.core.plans` function), commits, and answers the
published version. The read methods (:meth:`Operations.databases`,
:meth:`~Operations.table_names`, :meth:`~Operations.has_table`,
:meth:`~Operations.contains`, :meth:`~Operations.table_state`, ...) are one
submission each, too.

Ordering between concurrent loads of one table is optimistic: every table has
an *epoch*, written only on the server thread. A load notes the epoch before
reading HMS; its submission commits only if the epoch is unchanged (and bumps
it); otherwise someone published newer metadata meanwhile and the load reads
again (at most ``retries`` times). So a slow background load can never
overwrite a newer refresh or invalidate.

Fairness: loads, refreshes and invalidates of one table also take *turns*
(:class:`~catalogd.writes.table_locks.TableTurns`, first come first served)
around their HMS read and commit, so they cannot invalidate each other's reads
and a refresh can never be starved by newer invalidates. BusyError is answered
only when ``max_waiting_per_table`` commands already wait for the table (the
stated overload bound), or when database-wide resets kept invalidating a read.

Why one module of over 400 lines: every way of changing the catalog from HMS (names,
tables, partitions, functions, privileges, pools, files) follows the same read-off-
thread, one-submission pattern, and keeping them side by side keeps that pattern
visible.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from catalogd import sources as loader
from catalogd.conversion import objects as convert
from catalogd.conversion.grants import grant_holders, load_privileges, owners_of
from catalogd.core import cache_pools as caching
from catalogd.core import plans
from catalogd.core.catalog import Catalog
from catalogd.files.metadata import FileMetadata
from catalogd.loading.workers import LoadWorkers
from catalogd.server.thread import CatalogServer
from catalogd.sources import bulk
from catalogd.writes.table_locks import TableTurns
from subscriber.protocol import codec
from subscriber.protocol.delta import Delta
from subscriber.protocol.errors import (
    BusyError,
    CatalogError,
    InvalidRequestError,
    NotFoundError,
)
from subscriber.protocol.keys import (
    AUTHORIZATION_PREFIXES,
    CACHE_POOL_PREFIX,
    DATABASE_PREFIX,
    FUNCTION_PREFIX,
    TABLE_PREFIX,
    make_partition_name,
    parse_partition_name,
    partition_key,
    table_key,
)

log = logging.getLogger(__name__)

SourceFactory = Callable[[], loader.MetastoreSource]
Plan = Callable[[Catalog], plans.Changes]
T = TypeVar("T")


class Operations:
    """HMS-backed catalog operations. Thread-safe: call from any thread.

    Args:
        server: the server that owns the catalog (started or not: before
            :meth:`CatalogServer.start` submissions run in the calling thread).
        source_factory: makes a new metastore source; one is kept per thread.
        retries: how often a load reads HMS again when concurrent changes
            invalidated its read, before :class:`BusyError`.
        max_waiting_per_table: commands that may wait for one table's turn;
            one more is answered BusyError.
    """

    def __init__(
        self,
        server: CatalogServer,
        source_factory: SourceFactory,
        *,
        retries: int = 3,
        max_waiting_per_table: int = 64,
    ) -> None:
        self._server = server
        self._factory = source_factory
        self._local = threading.local()
        self._sources: list[loader.MetastoreSource] = []
        self._sources_lock = threading.Lock()
        # Written on the server thread only; read anywhere (a racy read is fine:
        # the commit checks it again on the server thread).
        self._epochs: dict[tuple[str, str], int] = {}
        self._retries = retries
        self.turns = TableTurns(max_waiting=max_waiting_per_table)
        # (db, table) -> {partition or None: pool}; replaced whole, read anywhere.
        self.cache_marks: dict[tuple[str, str], dict[str | None, str]] = {}
        # Which tables carry file metadata (catalogd.files); set by the daemon.
        self.files = FileMetadata()
        # Whole-table loads in worker processes (catalogd.loading.workers), or
        # None: in the calling thread. Set by the daemon.
        self.workers: LoadWorkers | None = None

    # -- plumbing ---------------------------------------------------------------------

    def source(self) -> loader.MetastoreSource:
        """This thread's metastore source (made on first use)."""
        source = getattr(self._local, "source", None)
        if source is None:
            source = self._factory()
            self._local.source = source
            with self._sources_lock:
                self._sources.append(source)
        return source

    def close(self) -> None:
        """Close every source made so far (sources made later are new ones)."""
        with self._sources_lock:
            for source in self._sources:
                source.close()
            self._sources.clear()

    def _read(self, fn: Callable[[Catalog], T]) -> T:
        """``fn(catalog)`` on the server thread (one round trip)."""
        return self._server.submit(fn).result()

    def _commit(self, plan: Plan) -> int:
        """Plan and commit in one submission; returns the published version."""
        delta: Delta = self._read(lambda catalog: catalog.commit(plan(catalog)))
        return delta.to_version

    def _commit_if(self, db: str, table: str, epoch: int, plan: Plan) -> int | None:
        """Plan and commit in one submission, unless ``db.table`` changed since ``epoch``.

        Returns the published version, or None when newer metadata was
        published meanwhile (nothing committed: read HMS again).
        """

        def guarded(catalog: Catalog) -> Delta | None:
            if self._epochs.get((db, table), 0) != epoch:
                return None
            self._epochs[(db, table)] = epoch + 1
            return catalog.commit(plan(catalog))

        delta = self._read(guarded)
        return None if delta is None else delta.to_version

    def _bump(self, keys: Iterable[tuple[str, str]]) -> None:  # server thread
        for key in keys:
            self._epochs[key] = self._epochs.get(key, 0) + 1

    # -- reads (one submission each) ------------------------------------------------------

    def version(self) -> int:
        """The catalog's current version."""
        return self._read(lambda c: c.version)

    def databases(self) -> set[str]:
        """Names of the databases the catalog holds."""
        return self._read(plans.databases_in)

    def table_names(self, db: str) -> set[str]:
        """Names of the tables and views the catalog holds in ``db`` (loaded or not)."""
        return self._read(functools.partial(plans.table_names_of, db=db))

    def has_table(self, db: str, table: str) -> bool:
        """Whether the catalog holds ``db.table`` (loaded or a placeholder)."""
        return bool(self._read(lambda c: c.table_keys(db, table)))

    def contains(self, key: str) -> bool:
        """Whether the catalog holds a live object under ``key``."""
        return self._read(lambda c: key in c)

    def table_state(self, db: str, names: Sequence[str]) -> dict[str, tuple[bytes, set[str]]]:
        """For the loaded tables among ``names``: (encoded header, partition names)."""
        return self._read(functools.partial(plans.loaded_table_state, db=db, names=list(names)))

    def table_payloads(self, db: str, table: str) -> dict[str, bytes]:
        """The encoded objects (header and partitions) of one table, by key."""

        def read(c: Catalog) -> dict[str, bytes]:
            entries = ((k, c.get(k)) for k in c.table_keys(db, table))
            return {k: e.payload for k, e in entries if e is not None and e.payload is not None}

        return self._read(read)

    def unloaded(self, db: str | None = None) -> list[tuple[str, str]]:
        """(db, table) of every placeholder (of one database)."""
        return self._read(lambda c: plans.unloaded_tables(c, db))

    def is_loaded(self, db: str, table: str) -> bool:
        """False only for a placeholder (a table the catalog lacks counts as loaded)."""
        return self._read(lambda c: not plans.is_placeholder(c, db, table))

    def presence(self, db: str, table: str) -> str:
        """``"placeholder"``, ``"loaded"`` or ``"absent"`` (the catalog lacks the table)."""

        def read(c: Catalog) -> str:
            if not c.table_keys(db, table):
                return "absent"
            return "placeholder" if plans.is_placeholder(c, db, table) else "loaded"

        return self._read(read)

    def _version_if_loaded(self, db: str, table: str) -> int | None:
        return self._read(lambda c: None if plans.is_placeholder(c, db, table) else c.version)

    # -- names (startup and invalidate) ----------------------------------------------------

    def load_names(self, db: str | None = None, *, reset: bool = False) -> int:
        """Publish databases and table names (placeholders); returns the version.

        With ``db`` only that database; ``reset`` turns loaded tables back into
        placeholders (invalidate). Raises NotFoundError for an unknown ``db``.
        """
        source = self.source()
        dbs = [db] if db is not None else source.database_names()
        listed: list[tuple[str, bytes, list[str]]] = []
        for name in dbs:
            try:
                database = source.get_database(name)
                tables = source.table_names(name)
            except NotFoundError:
                if db is not None:
                    self._commit(functools.partial(plans.remove_database, db=name))
                    raise
                continue  # dropped while listing
            payload = codec.encode_object(convert.database_object(database))
            listed.append((name.lower(), payload, tables))

        def plan(catalog: Catalog) -> dict[str, bytes | None]:
            changes: dict[str, bytes | None] = (
                {} if db is not None else plans.databases(catalog, [d for d, _, _ in listed])
            )
            for name, payload, tables in listed:
                before = plans.table_names_of(catalog, name)
                changes.update(plans.database_names(catalog, name, payload, tables, reset=reset))
                touched = (
                    before | {t.lower() for t in tables}
                    if reset
                    else before ^ {t.lower() for t in tables}
                )
                self._bump([(name, t) for t in touched])
            return changes

        return self._commit(plan)

    def load_functions(self, db: str | None = None) -> int:
        """Reload HMS functions (of one database) and publish the difference."""
        functions = [
            f
            for f in self.source().all_functions()
            if db is None or (f.dbName or "").lower() == db.lower()
        ]
        payloads = convert.encode_all(convert.function_objects(functions))
        wanted = None if db is None else db.lower()
        return self._commit(
            lambda c: plans.replace_group(
                c, c.keys_with_prefix(FUNCTION_PREFIX, db=wanted), payloads
            )
        )

    def reload_database(self, db: str) -> int:
        """Reload one database's object, table names and functions (after a write
        through an HMS endpoint); returns the version. A database gone from HMS is
        removed and NotFoundError raised."""
        version = self.load_names(db)
        return max(version, self.load_functions(db))

    # -- tables ------------------------------------------------------------------------------

    def load_table(self, db: str, table: str, *, only_if_unloaded: bool = False) -> int:
        """Read one table (header and partitions) from HMS and publish the difference.

        Returns the version at which the table's current state is published.
        With ``only_if_unloaded`` a table that is not a placeholder (any more)
        is left alone, unread, and the current version returned.
        A table gone from HMS is removed and NotFoundError raised.
        Raises BusyError when concurrent changes kept invalidating the read.
        """
        db, table = db.lower(), table.lower()
        with self.turns.turn((db, table)):
            return self._load_table(db, table, only_if_unloaded)

    @property
    def load_batch(self) -> int:
        """How many placeholders of one database :meth:`load_tables` reads together:
        1 without load workers (tables are read one by one anyway)."""
        return 64 if self.workers is not None else 1

    def loads_alone(self, db: str, tables: Sequence[str]) -> set[str]:
        """The tables among ``tables`` (lower case) :meth:`load_tables` would not read
        together with others: larger than a worker's batch (one query), or all of
        them when the source cannot count partitions."""
        source = bulk(self.source())
        if self.workers is None or source is None:
            return set(tables)
        budget = self.workers.batch_partitions
        return {t for t, n in source.partition_counts(db, tables).items() if n > budget}

    def load_tables(self, db: str, tables: Sequence[str]) -> dict[str, int | Exception]:
        """Load several placeholders of ``db`` (tables loaded meanwhile are left alone),
        each with its own commit; returns each table's published version, or the
        exception its load raised (as :meth:`load_table` with ``only_if_unloaded``).

        Small tables are read together in a load worker
        (:meth:`~catalogd.loading.workers.LoadWorkers.tables_payloads`); the
        rest, and any table whose read was overtaken by a newer commit (its epoch
        moved), load one by one through :meth:`load_table`.
        """
        db = db.lower()
        names = list(dict.fromkeys(t.lower() for t in tables))
        results: dict[str, int | Exception] = {}
        loaded = self._read(
            lambda c: {t: c.version for t in names if not plans.is_placeholder(c, db, t)}
        )
        results.update(loaded)
        together = [t for t in names if t not in loaded and not self.files.wants(db, t)]
        if self.workers is not None and len(together) > 1:
            epochs = {t: self._epochs.get((db, t), 0) for t in together}
            marks = {t: self.cache_marks[(db, t)] for t in together if (db, t) in self.cache_marks}
            try:
                read, _ = self.workers.tables_payloads(db, together, marks)
            except CatalogError as exc:
                read = {}
                results.update((t, exc) for t in together)
            for t, payloads in read.items():
                try:
                    with self.turns.turn((db, t)):
                        version = self._commit_if(
                            db,
                            t,
                            epochs[t],
                            functools.partial(plans.table, db=db, name=t, payloads=payloads),
                        )
                except CatalogError as exc:
                    results[t] = exc
                    continue
                if version is not None:
                    results[t] = version
        for t in names:
            if t not in results:
                try:
                    results[t] = self.load_table(db, t, only_if_unloaded=True)
                except Exception as exc:  # noqa: BLE001 - the caller reports each table's error
                    results[t] = exc
        return results

    def _load_table(self, db: str, table: str, only_if_unloaded: bool) -> int:
        for _ in range(self._retries + 1):
            if only_if_unloaded:
                loaded_at = self._version_if_loaded(db, table)
                if loaded_at is not None:
                    return loaded_at
            epoch = self._epochs.get((db, table), 0)
            try:
                payloads = self._read_table(db, table)
            except NotFoundError:
                self._commit_if(db, table, epoch, lambda c: plans.remove_table(c, db, table))
                raise
            version = self._commit_if(
                db,
                table,
                epoch,
                functools.partial(plans.table, db=db, name=table, payloads=payloads),
            )
            if version is not None:
                return version
        raise BusyError(f"table {db}.{table} kept changing while loading; try again")

    def _read_table(self, db: str, table: str) -> dict[str, bytes]:
        """One table's objects read from the metastore and encoded, by key: in a load
        worker process when there are any (and the table's files are not listed)."""
        marks = self.cache_marks.get((db, table), {})
        if self.workers is not None and not self.files.wants(db, table):
            return self.workers.table_payloads(db, table, marks, planner=self.source())
        objects, _ = loader.load_table(self.source(), db, table)
        self.files.attach(objects)
        caching.apply_marks(objects, marks)
        return convert.encode_all(objects)

    def refresh_partitions(self, db: str, table: str, specs: Sequence[str]) -> int:
        """Reload only the named partitions (``k=v/k2=v2`` each) of a loaded table.

        A placeholder is loaded whole instead. Returns the published version.

        Raises:
            InvalidRequestError: a malformed spec, or one not naming exactly the
                table's partition columns in order.
            NotFoundError: the table does not exist, or a partition exists
                neither in HMS nor in the catalog (nothing is changed). One in
                HMS but not in the catalog is added; one in the catalog but no
                longer in HMS is removed.
        """
        db, table = db.lower(), table.lower()
        with self.turns.turn((db, table)):
            return self._refresh_partitions(db, table, specs)

    def _refresh_partitions(self, db: str, table: str, specs: Sequence[str]) -> int:
        if not self.is_loaded(db, table):
            return self.load_table(db, table)  # nothing to refresh partially yet
        tables = self.source().get_tables(db, [table])
        if not tables:
            self._commit(lambda c: plans.remove_table(c, db, table))
            raise NotFoundError(f"table {db}.{table} not found")
        hms_table = tables[0]
        columns = [k.name.lower() for k in hms_table.partitionKeys or []]
        if not columns:
            raise InvalidRequestError(f"table {db}.{table} is not partitioned")
        names = [_canonical_partition(spec, columns, f"{db}.{table}") for spec in specs]
        keys = [partition_key(db, table, n) for n in names]
        for _ in range(self._retries + 1):
            epoch = self._epochs.get((db, table), 0)
            parts = list(self.source().partitions(db, table, names))
            objects = dict(map(convert.PartitionConverter(hms_table), parts))
            self.files.attach(objects)
            caching.apply_marks(objects, self.cache_marks.get((db, table), {}))
            payloads = convert.encode_all(objects)

            def plan(catalog: Catalog, payloads: dict[str, bytes] = payloads) -> plans.Changes:
                missing = [
                    n
                    for n, k in zip(names, keys, strict=True)
                    if k not in payloads and k not in catalog
                ]
                if missing:
                    raise NotFoundError(
                        f"partition {', '.join(missing)} of {db}.{table} not found "
                        "(neither in HMS nor in the catalog)"
                    )
                return plans.partitions(catalog, keys, payloads)

            version = self._commit_if(db, table, epoch, plan)
            if version is not None:
                return version
        raise BusyError(f"table {db}.{table} kept changing while refreshing; try again")

    def publish_pools(self, pools: Sequence[Any]) -> int:
        """Make the catalog's HDFS_CACHE_POOL objects exactly ``pools``."""
        payloads = caching.pool_payloads(pools)
        return self._commit(
            lambda c: plans.replace_group(c, c.keys_with_prefix(CACHE_POOL_PREFIX, db=""), payloads)
        )

    def load_privileges(self, server_name: str = "server1") -> int:
        """Reload roles, memberships and grants from HMS; publish the difference.

        HMS 2.3 cannot list the principals that hold grants, so they are found
        by asking, per object, who holds grants on it: ``1 + D + T`` calls for
        ``D`` databases and ``T`` tables (plus the per-principal calls of
        :func:`catalogd.conversion.grants.load_privileges`).
        """
        source = self.source()
        owner_payloads, names = self._read(_grant_subjects)
        holders = owners_of(_decode_owners(owner_payloads))
        holders |= grant_holders(source, names)
        objects = load_privileges(source, principals=sorted(holders), server_name=server_name)
        payloads = convert.encode_all(objects)
        return self._commit(
            lambda c: plans.replace_group(
                c,
                [k for k in c.keys_of_database("") if k.startswith(AUTHORIZATION_PREFIXES)],
                payloads,
            )
        )

    def invalidate_table(self, db: str, table: str) -> int:
        """Turn one table back into a placeholder (reloaded lazily).

        A table HMS no longer has is removed from the catalog; NotFoundError
        when neither HMS nor the catalog has it.
        """
        db, table = db.lower(), table.lower()
        with self.turns.turn((db, table)):
            return self._invalidate_table(db, table)

    def _invalidate_table(self, db: str, table: str) -> int:
        exists = bool(self.source().get_tables(db, [table]))

        def plan(catalog: Catalog) -> dict[str, bytes | None]:
            known = bool(catalog.table_keys(db, table))
            self._bump([(db, table)])
            changes: dict[str, bytes | None] = dict.fromkeys(catalog.table_keys(db, table))
            if exists:
                changes[table_key(db, table)] = plans.placeholder(db, table)
            elif not known:
                raise NotFoundError(f"table {db}.{table} not found")
            return changes

        return self._commit(plan)


def _canonical_partition(spec: str, columns: list[str], table: str) -> str:
    expected = "/".join(f"{c}=VALUE" for c in columns)
    try:
        pairs = parse_partition_name(spec)
    except InvalidRequestError as exc:
        raise InvalidRequestError(
            f"malformed partition spec {spec!r} for {table}: expected {expected}"
        ) from exc
    if [c for c, _ in pairs] != columns:
        raise InvalidRequestError(
            f"partition spec {spec!r} does not match the partition columns of {table}: "
            f"expected {expected}"
        )
    return make_partition_name(columns, [v for _, v in pairs])


def _grant_subjects(catalog: Catalog) -> tuple[list[bytes], list[tuple[str, str | None]]]:
    """What :meth:`Operations.load_privileges` asks HMS about, read on the server thread:
    the encoded DATABASE and TABLE headers (decoded by the caller, for their
    owners) and (db, None) for every database and (db, table) for every table
    and view."""
    payloads = [
        e.payload
        for e in catalog.live_entries()
        if e.payload is not None and e.key.startswith((DATABASE_PREFIX, TABLE_PREFIX))
    ]
    names: list[tuple[str, str | None]] = []
    for key in catalog.keys_with_prefix(DATABASE_PREFIX):
        db = key.partition(":")[2]
        names.append((db, None))
        names.extend((db, t) for t in sorted(plans.table_names_of(catalog, db)))
    return payloads, names


def _decode_owners(payloads: list[bytes]) -> list[Any]:
    """Databases and loaded tables: their owners hold Spark's owner grants."""
    objects = []
    for payload in payloads:
        obj = codec.decode_object(payload)
        if obj.db is not None or (obj.table is not None and obj.table.metastore_table):
            objects.append(obj)
    return objects
