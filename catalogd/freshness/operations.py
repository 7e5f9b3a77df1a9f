"""Catalog operations that read HMS and publish the difference.

:class:`Operations` is what the admin endpoint, the change detector and the
lazy loader call. Each operation reads HMS in the calling thread (one
metastore source per thread), encodes, then submits a :mod:`catalogd.core.plans`
function to the server thread and returns the published version.

Ordering between concurrent loads of one table is optimistic: every table has
an *epoch*, touched only on the server thread. A load notes the epoch before
reading HMS and commits only if it is unchanged; otherwise someone published
newer metadata meanwhile and the load reads again (at most ``retries`` times).
So a slow background load can never overwrite a newer refresh or invalidate.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import idl
from catalogd.core import cache_pools as caching
from catalogd.core import plans
from catalogd.core.catalog import Catalog
from catalogd.metastore import convert
from catalogd.metastore import source as loader
from catalogd.server.thread import CatalogServer
from subscriber.protocol import codec
from subscriber.protocol.delta import Delta
from subscriber.protocol.errors import BusyError, InvalidRequestError, NotFoundError
from subscriber.protocol.keys import (
    make_partition_name,
    parse_partition_name,
    partition_key,
)

log = logging.getLogger(__name__)

SourceFactory = Callable[[], loader.MetastoreSource]


class Operations:
    """HMS-backed catalog operations. Thread-safe: call from any thread.

    Args:
        server: the running server that owns the catalog.
        source_factory: makes a new metastore source; one is kept per thread.
    """

    def __init__(
        self, server: CatalogServer, source_factory: SourceFactory, *, retries: int = 3
    ) -> None:
        self.server = server
        self._factory = source_factory
        self._local = threading.local()
        self._sources: list[Any] = []
        self._sources_lock = threading.Lock()
        self._epochs: dict[tuple[str, str], int] = {}  # server thread only
        self._retries = retries
        # (db, table) -> {partition or None: pool}; replaced whole, read anywhere.
        self.cache_marks: dict[tuple[str, str], dict[str | None, str]] = {}

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
        with self._sources_lock:
            for source in self._sources:
                close = getattr(source, "close", None)
                if close is not None:
                    close()
            self._sources.clear()

    def _run(self, fn: Callable[[Catalog], dict[str, bytes | None] | None]) -> Delta | None:
        def apply(catalog: Catalog) -> Delta | None:
            changes = fn(catalog)
            return None if changes is None else catalog.commit(changes)

        return self.server.submit(apply).result()

    def version(self) -> int:
        return self.server.submit(lambda c: c.version).result()

    def _bump(self, keys: Sequence[tuple[str, str]]) -> None:  # server thread
        for key in keys:
            self._epochs[key] = self._epochs.get(key, 0) + 1

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
                    self._run(functools.partial(plans.remove_database, db=name))
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

        self._run(plan)
        return self.version()

    def unloaded(self, db: str | None = None) -> list[tuple[str, str]]:
        return self.server.submit(lambda c: plans.unloaded_tables(c, db)).result()

    def is_loaded(self, db: str, table: str) -> bool:
        return self.server.submit(lambda c: not plans.is_placeholder(c, db, table)).result()

    # -- tables ------------------------------------------------------------------------------

    def load_table(self, db: str, table: str, *, only_if_unloaded: bool = False) -> int:
        """Read one table (header and partitions) from HMS and publish the difference.

        Returns the version at which the table's current state is published.
        A table gone from HMS is removed and NotFoundError raised.
        Raises BusyError when concurrent changes kept invalidating the read.
        """
        db, table = db.lower(), table.lower()
        for _ in range(self._retries + 1):
            if only_if_unloaded and self.is_loaded(db, table):
                return self.version()
            epoch = self._epochs.get((db, table), 0)
            try:
                objects, _ = loader.load_table(self.source(), db, table)
            except NotFoundError:
                self._commit_if(db, table, epoch, lambda c: plans.remove_table(c, db, table))
                raise
            caching.apply_marks(objects, self.cache_marks.get((db, table), {}))
            payloads = convert.encode_all(objects)
            if self._commit_if(
                db,
                table,
                epoch,
                functools.partial(plans.table, db=db, name=table, payloads=payloads),
            ):
                return self.version()
        raise BusyError(f"table {db}.{table} kept changing while loading; try again")

    def _commit_if(
        self, db: str, table: str, epoch: int, fn: Callable[[Catalog], dict[str, bytes | None]]
    ) -> bool:
        def guarded(catalog: Catalog) -> Delta | None:
            if self._epochs.get((db, table), 0) != epoch:
                return None  # newer metadata was published meanwhile
            self._epochs[(db, table)] = epoch + 1
            return catalog.commit(fn(catalog))

        return self.server.submit(guarded).result() is not None

    def refresh_partitions(self, db: str, table: str, specs: Sequence[str]) -> int:
        """Reload only the named partitions (``k=v/k2=v2`` each) of a loaded table.

        Raises:
            InvalidRequestError: a malformed spec, or one not naming exactly the
                table's partition columns in order.
            NotFoundError: the table does not exist.
        """
        db, table = db.lower(), table.lower()
        if not self.is_loaded(db, table):
            return self.load_table(db, table)  # nothing to refresh partially yet
        tables = self.source().get_tables(db, [table])
        if not tables:
            self._run(lambda c: plans.remove_table(c, db, table))
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
            objects = dict(convert.partition_object(hms_table, part) for part in parts)
            caching.apply_marks(objects, self.cache_marks.get((db, table), {}))
            payloads = convert.encode_all(objects)
            if self._commit_if(
                db, table, epoch, functools.partial(plans.partitions, keys=keys, payloads=payloads)
            ):
                return self.version()
        raise BusyError(f"table {db}.{table} kept changing while refreshing; try again")

    def publish_pools(self, pools: Sequence[Any]) -> int:
        """Make the catalog's HDFS_CACHE_POOL objects exactly ``pools``."""
        payloads = caching.pool_payloads(pools)
        self._run(
            lambda c: plans.replace_group(
                c, c.keys_with_prefix("HDFS_CACHE_POOL:", db=""), payloads
            )
        )
        return self.version()

    def load_privileges(self, server_name: str = "server1") -> int:
        """Reload roles, memberships and grants from HMS; publish the difference.

        HMS 2.3 cannot list the principals that hold grants, so they are found
        by asking, per object, who holds grants on it: ``1 + D + T`` calls for
        ``D`` databases and ``T`` tables (plus the per-principal calls of
        :func:`catalogd.metastore.grants.load_privileges`).
        """
        from catalogd.metastore.grants import load_privileges, owners_of

        client = self.source().client  # type: ignore[attr-defined]
        payloads = self.server.submit(_owner_payloads).result()
        holders = owners_of(_decode_owners(payloads))
        holders |= _grant_holders(client, self.server.submit(_table_names).result())
        objects = load_privileges(client, principals=sorted(holders), server_name=server_name)
        payloads = convert.encode_all(objects)
        self._run(
            lambda c: plans.replace_group(
                c,
                [k for k in c.keys_of_database("") if k.startswith(("PRINCIPAL:", "PRIVILEGE:"))],
                payloads,
            )
        )
        return self.version()

    def invalidate_table(self, db: str, table: str) -> int:
        """Turn one table back into a placeholder (reloaded lazily).

        A table HMS no longer has is removed from the catalog; NotFoundError
        when neither HMS nor the catalog has it.
        """
        db, table = db.lower(), table.lower()
        exists = bool(self.source().get_tables(db, [table]))

        def plan(catalog: Catalog) -> dict[str, bytes | None]:
            known = bool(catalog.table_keys(db, table))
            self._bump([(db, table)])
            changes: dict[str, bytes | None] = dict.fromkeys(catalog.table_keys(db, table))
            if exists:
                changes[f"TABLE:{db}.{table}"] = plans.placeholder(db, table)
            elif not known:
                raise NotFoundError(f"table {db}.{table} not found")
            return changes

        self._run(plan)
        return self.version()


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


def _owner_payloads(catalog: Catalog) -> list[bytes]:
    """Encoded DATABASE and TABLE headers (decoded by the caller, off the server thread)."""
    return [
        e.payload
        for e in catalog.live_entries()
        if e.payload is not None and e.key.startswith(("DATABASE:", "TABLE:"))
    ]


def _decode_owners(payloads: list[bytes]) -> list[Any]:
    """Databases and loaded tables: their owners hold Spark's owner grants."""
    objects = []
    for payload in payloads:
        obj = codec.decode_object(payload)
        if obj.db is not None or (obj.table is not None and obj.table.metastore_table):
            objects.append(obj)
    return objects


def _table_names(catalog: Catalog) -> list[tuple[str, str | None]]:
    """(db, None) for every database and (db, table) for every table and view."""
    names: list[tuple[str, str | None]] = []
    for key in catalog.keys_with_prefix("DATABASE:"):
        db = key.partition(":")[2]
        names.append((db, None))
        names.extend((db, t) for t in sorted(plans.table_names_of(catalog, db)))
    return names


_PRINCIPAL_TYPES = {1: "USER", 2: "ROLE", 3: "GROUP"}  # HMS PrincipalType values


def _grant_holders(client: Any, objects: list[tuple[str, str | None]]) -> set[tuple[str, str]]:
    """Every (principal, type) holding a grant on the server, a database or a table."""
    hms = idl.hive_metastore
    refs = [hms.HiveObjectRef(objectType=hms.HiveObjectType.GLOBAL)]
    for db, table in objects:
        if table is None:
            refs.append(hms.HiveObjectRef(objectType=hms.HiveObjectType.DATABASE, dbName=db))
        else:
            refs.append(
                hms.HiveObjectRef(objectType=hms.HiveObjectType.TABLE, dbName=db, objectName=table)
            )
    holders = set()
    for ref in refs:
        try:
            grants = client.list_privileges(None, None, ref)
        except NotFoundError:
            continue  # dropped meanwhile
        for grant in grants:
            kind = _PRINCIPAL_TYPES.get(grant.principalType)
            if kind is not None and grant.principalName:
                holders.add((grant.principalName, kind))
    return holders
