"""Table writes: load, load several together, refresh partitions, invalidate.

Each command reads HMS in the calling thread, then commits with one guarded
submission (:class:`~catalogd.writes.commits.Committer`): a load notes the
table's epoch before reading and commits only if it is unchanged; otherwise
newer metadata was published meanwhile and the load reads again (at most
``retries`` times, then :class:`BusyError`). So a slow background load can never
overwrite a newer refresh or invalidate.

Fairness: the commands of one table also take *turns*
(:class:`~catalogd.writes.table_locks.TableTurns`, first come first served)
around their HMS read and commit, so they cannot invalidate each other's reads
and a refresh can never be starved by newer invalidates.

Submissions per command: a load is one (the guarded commit); a load of a
placeholder (:meth:`TableWrites.load_placeholder`) two, the note that finds it a
placeholder and the commit (a table loaded meanwhile is left unread after the
note alone); an overtaken commit answers the table's state with it, so a retry
asks nothing more before reading HMS again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from catalogd import sources as loader
from catalogd.conversion import objects as convert
from catalogd.conversion import partitions
from catalogd.core import cache_pools as caching
from catalogd.core import plans
from catalogd.core.catalog import Catalog
from catalogd.files.metadata import FileMetadata
from catalogd.loading.workers import LoadWorkers
from catalogd.sources import MetastoreSource, bulk
from catalogd.writes.commits import PLACEHOLDER, Committer, Guard, Note
from catalogd.writes.epochs import Table
from catalogd.writes.table_locks import TableTurns
from subscriber.protocol.errors import (
    BusyError,
    CatalogError,
    InvalidRequestError,
    NotFoundError,
)
from subscriber.protocol.keys import (
    make_partition_name,
    parse_partition_name,
    partition_key,
    table_key,
)

CacheMarks = dict[tuple[str, str], dict[str | None, str]]
BATCH = 64  # placeholders read together by a load worker


class TableWrites:
    """The table commands of :class:`~catalogd.writes.operations.Operations`. Thread-safe.

    Args:
        committer: the channel to the server thread.
        source: this thread's metastore source.
        files: which tables carry file metadata.
        workers: whole-table loads in worker processes, or None (the calling thread).
        turns: per-table turns.
        retries: HMS reads again after an overtaken commit, before BusyError.
    """

    def __init__(
        self,
        committer: Committer,
        source: Callable[[], MetastoreSource],
        *,
        files: FileMetadata,
        workers: LoadWorkers | None,
        turns: TableTurns,
        retries: int,
    ) -> None:
        self._committer = committer
        self._source = source
        self.files = files
        self.workers = workers
        self.turns = turns
        self._retries = retries
        # (db, table) -> {partition or None: pool}; replaced whole, read anywhere.
        self.cache_marks: CacheMarks = {}

    # -- one table -------------------------------------------------------------------------

    def load_table(self, db: str, table: str) -> int:
        """Read one table from HMS and publish the difference (see Operations.load_table)."""
        key = (db.lower(), table.lower())
        with self.turns.turn(key):
            return self._load(key, None)

    def load_placeholder(self, db: str, table: str) -> Note:
        """Load ``db.table`` only if it is a placeholder. Returns the note that found
        it (its ``presence``), with ``version`` the one its state is published at."""
        key = (db.lower(), table.lower())
        with self.turns.turn(key):
            seen = self._committer.note(key)
            if seen.presence != PLACEHOLDER:
                return seen
            return Note(seen.presence, self._load(key, seen), seen.epoch)

    def _load(self, key: Table, seen: Note | None) -> int:
        """Under ``key``'s turn. ``seen``: the note that found a placeholder (then only
        a placeholder is loaded); None: load whatever the catalog holds."""
        db, name = key
        epoch = self._committer.epoch(key) if seen is None else seen.epoch
        for _ in range(self._retries + 1):
            try:
                payloads = self._read_table(db, name)
            except NotFoundError:
                self._committer.commit_if(
                    Guard(key, epoch), lambda c: plans.remove_table(c, db, name)
                )
                raise
            outcome = self._committer.commit_if(
                Guard(key, epoch),
                functools.partial(plans.table, db=db, name=name, payloads=payloads),
            )
            if isinstance(outcome, int):
                return outcome
            if seen is not None and outcome.now.presence != PLACEHOLDER:
                return outcome.now.version  # loaded (or dropped) meanwhile: leave it
            epoch = outcome.now.epoch
        raise BusyError(f"table {db}.{name} kept changing while loading; try again")

    def _read_table(self, db: str, table: str) -> dict[str, bytes]:
        """One table's objects read from the metastore and encoded, by key: in a load
        worker process when there are any (and the table's files are not listed)."""
        marks = self.cache_marks.get((db, table), {})
        if self.workers is not None and not self.files.wants(db, table):
            return self.workers.table_payloads(db, table, marks, planner=self._source())
        objects, _ = loader.load_table(self._source(), db, table)
        self.files.attach(objects)
        caching.apply_marks(objects, marks)
        return convert.encode_all(objects)

    # -- several tables ----------------------------------------------------------------

    @property
    def load_batch(self) -> int:
        """How many placeholders of one database :meth:`load_tables` reads together:
        1 without load workers (tables are read one by one anyway)."""
        return BATCH if self.workers is not None else 1

    def loads_alone(self, db: str, tables: Sequence[str]) -> set[str]:
        """The tables among ``tables`` (lower case) :meth:`load_tables` would not read
        together with others: larger than a worker's batch (one query), or all of
        them when the source cannot count partitions."""
        source = bulk(self._source())
        if self.workers is None or source is None:
            return set(tables)
        budget = self.workers.batch_partitions
        return {t for t, n in source.partition_counts(db, tables).items() if n > budget}

    def load_tables(self, db: str, tables: Sequence[str]) -> dict[str, int | Exception]:
        """Load several placeholders of ``db`` (see Operations.load_tables)."""
        db = db.lower()
        names = list(dict.fromkeys(t.lower() for t in tables))
        results: dict[str, int | Exception] = {}
        notes = {t: n for (_, t), n in self._committer.notes((db, t) for t in names).items()}
        results.update((t, n.version) for t, n in notes.items() if n.presence != PLACEHOLDER)
        together = [t for t in names if t not in results and not self.files.wants(db, t)]
        if self.workers is not None and len(together) > 1:
            marks = {t: self.cache_marks[(db, t)] for t in together if (db, t) in self.cache_marks}
            try:
                read, _ = self.workers.tables_payloads(db, together, marks)
            except CatalogError as exc:
                read = {}
                results.update((t, exc) for t in together)
            for t, payloads in read.items():
                try:
                    with self.turns.turn((db, t)):
                        outcome = self._committer.commit_if(
                            Guard((db, t), notes[t].epoch),
                            functools.partial(plans.table, db=db, name=t, payloads=payloads),
                        )
                except CatalogError as exc:
                    results[t] = exc
                    continue
                if isinstance(outcome, int):
                    results[t] = outcome
        for t in names:
            if t not in results:
                try:
                    results[t] = self.load_placeholder(db, t).version
                except Exception as exc:  # noqa: BLE001 - the caller reports each table's error
                    results[t] = exc
        return results

    # -- partitions and invalidation -----------------------------------------------------

    def refresh_partitions(self, db: str, table: str, specs: Sequence[str]) -> int:
        """Reload only the named partitions (see Operations.refresh_partitions)."""
        key = (db.lower(), table.lower())
        with self.turns.turn(key):
            return self._refresh_partitions(key, specs)

    def _refresh_partitions(self, key: Table, specs: Sequence[str]) -> int:
        db, table = key
        if self._committer.note(key).presence == PLACEHOLDER:
            return self.load_table(db, table)  # nothing to refresh partially yet
        tables = self._source().get_tables(db, [table])
        if not tables:
            self._committer.commit(lambda c: plans.remove_table(c, db, table))
            raise NotFoundError(f"table {db}.{table} not found")
        hms_table = tables[0]
        columns = [k.name.lower() for k in hms_table.partitionKeys or []]
        if not columns:
            raise InvalidRequestError(f"table {db}.{table} is not partitioned")
        names = [canonical_partition(spec, columns, f"{db}.{table}") for spec in specs]
        keys = [partition_key(db, table, n) for n in names]
        epoch = self._committer.epoch(key)
        for _ in range(self._retries + 1):
            parts = list(self._source().partitions(db, table, names))
            objects = dict(map(partitions.PartitionConverter(hms_table), parts))
            self.files.attach(objects)
            caching.apply_marks(objects, self.cache_marks.get(key, {}))
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

            outcome = self._committer.commit_if(Guard(key, epoch), plan)
            if isinstance(outcome, int):
                return outcome
            epoch = outcome.now.epoch
        raise BusyError(f"table {db}.{table} kept changing while refreshing; try again")

    def invalidate_table(self, db: str, table: str) -> int:
        """Turn one table back into a placeholder (see Operations.invalidate_table)."""
        key = (db.lower(), table.lower())
        with self.turns.turn(key):
            db, table = key
            exists = bool(self._source().get_tables(db, [table]))

            def plan(catalog: Catalog) -> plans.Changes:
                known = bool(catalog.table_keys(db, table))
                changes: plans.Changes = dict.fromkeys(catalog.table_keys(db, table))
                if exists:
                    changes[table_key(db, table)] = plans.placeholder(db, table)
                elif not known:
                    raise NotFoundError(f"table {db}.{table} not found")
                return changes

            return self._committer.commit(plan, touches=lambda _: [key])


def canonical_partition(spec: str, columns: list[str], table: str) -> str:
    """``spec`` (``k=v/k2=v2``) as the catalog names the partition.

    Raises:
        InvalidRequestError: malformed, or not naming exactly ``columns`` in order.
    """
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
