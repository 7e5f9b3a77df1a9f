"""Catalog operations that read HMS and publish the difference.

:class:`Operations` is the one way into the catalog for the admin handlers, the
change detector and the table loader: nobody else submits to the server
thread. Each operation reads HMS in the calling thread (one metastore source
per thread, :class:`~catalogd.writes.thread_sources.ThreadSources`) and encodes,
then makes ONE submission to the server thread that plans (a
:mod:`catalogd.core.plans` function), commits, and answers the published
version (:class:`~catalogd.writes.commits.Committer`). The read methods
(:meth:`Operations.databases`, :meth:`~Operations.table_names`,
:meth:`~Operations.has_table`, :meth:`~Operations.contains`,
:meth:`~Operations.table_state`, ...) are one submission each, too.

Table commands (load, refresh, invalidate) are guarded by the table's epoch and
take per-table turns: :mod:`catalogd.writes.tables`. BusyError is answered only
when ``max_waiting_per_table`` commands already wait for a table (the stated
overload bound), or when newer writes kept overtaking a read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from catalogd.conversion import objects as convert
from catalogd.conversion.grants import grant_holders, load_privileges, owners_of
from catalogd.core import cache_pools as caching
from catalogd.core import plans, table_orders
from catalogd.core.catalog import Catalog
from catalogd.files.metadata import FileMetadata
from catalogd.loading.workers import LoadWorkers
from catalogd.server.thread import CatalogServer
from catalogd.sources import MetastoreSource
from catalogd.writes.commits import ABSENT, PLACEHOLDER, Committer, Note
from catalogd.writes.epochs import Table
from catalogd.writes.privileges import decode_owners, grant_subjects
from catalogd.writes.table_locks import TableTurns
from catalogd.writes.tables import CacheMarks, TableWrites
from catalogd.writes.thread_sources import SourceFactory, ThreadSources
from subscriber.protocol import codec
from subscriber.protocol.errors import NotFoundError
from subscriber.protocol.keys import AUTHORIZATION_PREFIXES, CACHE_POOL_PREFIX, FUNCTION_PREFIX

__all__ = ["ABSENT", "PLACEHOLDER", "CacheMarks", "Note", "Operations", "SourceFactory"]

T = TypeVar("T")


class Operations:
    """HMS-backed catalog operations. Thread-safe: call from any thread.

    Args:
        server: the server that owns the catalog (started or not: before
            :meth:`CatalogServer.start` submissions run in the calling thread).
        source_factory: makes a new metastore source; one is kept per thread.
        files: which tables carry file metadata (default: none).
        workers: whole-table loads in worker processes (started), or None: in the
            calling thread.
        cache_marks: (db, table) -> {partition or None: pool}, the HDFS cache marks
            applied to loaded objects (replaced later with :meth:`set_cache_marks`).
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
        files: FileMetadata | None = None,
        workers: LoadWorkers | None = None,
        cache_marks: CacheMarks | None = None,
        retries: int = 3,
        max_waiting_per_table: int = 64,
    ) -> None:
        self._sources = ThreadSources(source_factory)
        self.server = server
        """The server whose catalog this writes (a benchmark reuses a loaded one)."""
        self._committer = Committer(server)
        self.turns = TableTurns(max_waiting=max_waiting_per_table)
        self._tables = TableWrites(
            self._committer,
            self._sources.get,
            files=files if files is not None else FileMetadata(),
            workers=workers,
            turns=self.turns,
            retries=retries,
        )
        self._tables.cache_marks = dict(cache_marks or {})

    # -- collaborators ------------------------------------------------------------------

    def source(self) -> MetastoreSource:
        """This thread's metastore source (made on first use)."""
        return self._sources.get()

    def close(self) -> None:
        """Close every source made so far (sources made later are new ones)."""
        self._sources.close()

    @property
    def files(self) -> FileMetadata:
        """Which tables carry file metadata (``catalogd.files``)."""
        return self._tables.files

    @property
    def workers(self) -> LoadWorkers | None:
        """The load worker processes, or None (tables load in the calling thread)."""
        return self._tables.workers

    @property
    def cache_marks(self) -> CacheMarks:
        """(db, table) -> {partition or None: pool}: the HDFS cache marks in use."""
        return self._tables.cache_marks

    def set_cache_marks(self, marks: CacheMarks) -> None:
        """Use ``marks`` from now on (replaced whole; tables are not republished)."""
        self._tables.cache_marks = marks

    def _read(self, fn: Callable[[Catalog], T]) -> T:
        return self._committer.read(fn)

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
        return bool(self._read(lambda c: key in c))

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
        return self.presence(db, table) != PLACEHOLDER

    def presence(self, db: str, table: str) -> str:
        """``"placeholder"``, ``"loaded"`` or ``"absent"`` (the catalog lacks the table)."""
        return self._committer.note((db, table)).presence

    # -- names, functions, privileges, pools (startup and invalidate) ------------------------

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
                    self._committer.commit(functools.partial(plans.remove_database, db=name))
                    raise
                continue  # dropped while listing
            payload = codec.encode_object(convert.database_object(database))
            listed.append((name.lower(), payload, tables))

        def touched(catalog: Catalog) -> Iterator[Table]:
            """Tables added or dropped (with ``reset``: every one, old and new)."""
            for name, _, tables in listed:
                before = plans.table_names_of(catalog, name)
                now = {t.lower() for t in tables}
                yield from ((name, t) for t in (before | now if reset else before ^ now))

        def plan(catalog: Catalog) -> plans.Changes:
            changes: plans.Changes = (
                {} if db is not None else plans.databases(catalog, [d for d, _, _ in listed])
            )
            for name, payload, tables in listed:
                changes.update(plans.database_names(catalog, name, payload, tables, reset=reset))
            # An invalidate makes every table a placeholder: the order is void anyway,
            # and keeping it would decode every database object in this one turn.
            return changes if reset else table_orders.keep_order(catalog, changes)

        return self._committer.commit(plan, touches=touched)

    def load_functions(self, db: str | None = None) -> int:
        """Reload HMS functions (of one database) and publish the difference."""
        functions = [
            f
            for f in self.source().all_functions()
            if db is None or (f.dbName or "").lower() == db.lower()
        ]
        payloads = convert.encode_all(convert.function_objects(functions))
        wanted = None if db is None else db.lower()
        return self._committer.commit(
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

    def order_candidates(
        self, since: int, seen: dict[str, int], max_tables: int = table_orders.MAX_TABLES
    ) -> table_orders.Scan:
        """The databases changed after ``since`` whose tables could be ordered
        (:func:`catalogd.core.table_orders.candidates`)."""
        return self._read(lambda c: table_orders.candidates(c, since, seen, max_tables))

    def order_candidate(
        self, db: str, max_tables: int = table_orders.MAX_TABLES
    ) -> table_orders.Candidate | None:
        """``db``'s tables and object now, if they could be ordered."""
        return self._read(lambda c: table_orders.candidate_of(c, db, max_tables))

    def publish_table_order(self, db: str, names: list[str], tables: dict[str, int]) -> bool:
        """Publish ``names``, HMS's order of ``db``'s ``tables`` (name -> version when
        HMS was asked); False when one of them changed meanwhile (nothing published)."""
        planned: list[int] = []

        def plan(catalog: Catalog) -> plans.Changes:
            changes = table_orders.plan(catalog, db, names, tables)
            planned.append(len(changes))
            return dict(changes)

        self._committer.commit(plan)
        return bool(planned and planned[0])

    def publish_pools(self, pools: Sequence[Any]) -> int:
        """Make the catalog's HDFS_CACHE_POOL objects exactly ``pools``."""
        payloads = caching.pool_payloads(pools)
        return self._committer.commit(
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
        owner_payloads, names = self._read(grant_subjects)
        holders = owners_of(decode_owners(owner_payloads))
        holders |= grant_holders(source, names)
        objects = load_privileges(source, principals=sorted(holders), server_name=server_name)
        payloads = convert.encode_all(objects)
        return self._committer.commit(
            lambda c: plans.replace_group(
                c,
                [k for k in c.keys_of_database("") if k.startswith(AUTHORIZATION_PREFIXES)],
                payloads,
            )
        )

    # -- tables (catalogd.writes.tables) ---------------------------------------------------

    def load_table(self, db: str, table: str, *, only_if_unloaded: bool = False) -> int:
        """Read one table (header and partitions) from HMS and publish the difference.

        Returns the version at which the table's current state is published.
        With ``only_if_unloaded`` a table that is not a placeholder (any more)
        is left alone, unread, and the current version returned.
        A table gone from HMS is removed and NotFoundError raised.
        Raises BusyError when concurrent changes kept invalidating the read.
        """
        if only_if_unloaded:
            return self._tables.load_placeholder(db, table).version
        return self._tables.load_table(db, table)

    def load_placeholder(self, db: str, table: str) -> Note:
        """Load ``db.table`` if it is a placeholder, in its turn. Returns what the
        first look found (``presence``: placeholder, loaded or absent) and the
        version at which the table's state is published (a loaded or absent table
        is left alone: one submission, no HMS read)."""
        return self._tables.load_placeholder(db, table)

    @property
    def load_batch(self) -> int:
        """How many placeholders of one database :meth:`load_tables` reads together:
        1 without load workers (tables are read one by one anyway)."""
        return self._tables.load_batch

    def loads_alone(self, db: str, tables: Sequence[str]) -> set[str]:
        """The tables among ``tables`` (lower case) :meth:`load_tables` would not read
        together with others: larger than a worker's batch (one query), or all of
        them when the source cannot count partitions."""
        return self._tables.loads_alone(db, tables)

    def load_tables(self, db: str, tables: Sequence[str]) -> dict[str, int | Exception]:
        """Load several placeholders of ``db`` (tables loaded meanwhile are left alone),
        each with its own commit; returns each table's published version, or the
        exception its load raised (as :meth:`load_table` with ``only_if_unloaded``).

        Small tables are read together in a load worker
        (:meth:`~catalogd.loading.workers.LoadWorkers.tables_payloads`); the
        rest, and any table whose read was overtaken by a newer commit (its epoch
        moved), load one by one.
        """
        return self._tables.load_tables(db, tables)

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
        return self._tables.refresh_partitions(db, table, specs)

    def invalidate_table(self, db: str, table: str) -> int:
        """Turn one table back into a placeholder (reloaded lazily).

        A table HMS no longer has is removed from the catalog; NotFoundError
        when neither HMS nor the catalog has it.
        """
        return self._tables.invalidate_table(db, table)
