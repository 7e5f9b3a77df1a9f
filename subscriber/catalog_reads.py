"""The catalog reads of :class:`~subscriber.api.CatalogSubscriber` (a mixin).

Databases, tables (with a priority load of one not loaded yet), partitions,
privileges and cache pools, read from one view of the cache: a replica's immutable
:class:`~subscriber.cache.CacheView`, or an on-demand subscriber's
:class:`~subscriber.ondemand.reader.LazyView`, which fetches what its cache lacks.
The pure helpers are in :mod:`subscriber.reads`; the subscriber itself (lifecycle,
waits, listeners) in :mod:`subscriber.api`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import idl
from subscriber import privileges, reads, requests
from subscriber.cache import CacheView
from subscriber.protocol.delta import Entry
from subscriber.protocol.errors import CatalogTimeoutError, NotFoundError
from subscriber.protocol.keys import GLOBAL, TableName, database_key
from subscriber.reads import PartitionSpec
from subscriber.requests import Loaded
from subscriber.transport import SubscriberTransport

__all__ = ["CatalogReads"]

_LOAD_RETRY_S = 3.0
_UNLOADED = idl.catalog_objects.TTableType.UNLOADED_TABLE


class CatalogReads:
    """Reads over :meth:`cache_view` (see the module docstring). The subscriber
    provides the view, the decoder, the transport and :meth:`wait_until`."""

    _decode: reads.ObjectDecoder
    _privileges: reads.PrivilegeIndexes
    _transport: SubscriberTransport

    def cache_view(self) -> CacheView:
        raise NotImplementedError

    def wait_until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        raise NotImplementedError

    def list_databases(self) -> list[str]:
        view = self.cache_view()
        return sorted(db for db in view.by_database if db != GLOBAL)

    def get_database(self, name: str) -> Any:
        """The ``TDatabase`` named ``name``.

        Raises:
            NotFoundError: no such database in the cache.
        """
        entry = self.cache_view().get(database_key(name))
        if entry is None:
            raise NotFoundError(f"database {name.lower()!r} not found")
        return self._decode(entry).db

    def list_tables(self, db: str) -> list[str]:
        """Names of the tables and views in ``db``.

        Raises:
            NotFoundError: no such database in the cache.
        """
        return reads.table_names(self.cache_view(), db.lower())

    def get_table(self, name: str, *, load: bool = False, timeout: float = 60.0) -> Any:
        """The ``TTable`` for ``"db.table"`` (a view too). Partitions are separate:
        see :meth:`list_partitions`.

        While catalogd has not loaded a table yet, its ``table_type`` is
        ``UNLOADED_TABLE`` and only the name is known. With ``load=True`` such a
        table is loaded first: catalogd is asked for a priority load and this
        call blocks (up to ``timeout`` seconds) until the loaded table arrives.

        Raises:
            InvalidRequestError: ``name`` is not of the form DB.TABLE.
            NotFoundError: no such table or view in the cache.
            CatalogTimeoutError: ``load`` and the table did not arrive in time.
        """
        table_name = TableName.parse(name)
        table = self._decode(self._table_entry(table_name)).table
        if not load or table.table_type != _UNLOADED:
            return table
        request = requests.load(table_name.db, table_name.table)

        def loaded() -> bool:
            try:
                return self._decode(self._table_entry(table_name)).table.table_type != _UNLOADED
            except NotFoundError:
                return True  # dropped meanwhile: the next read says so

        what, deadline = f"table {table_name} to load", time.monotonic() + timeout
        while True:
            # Asked again every few seconds: one lost (reconnect, full pipe) must not stall.
            self._transport.send_request(request)
            remaining = deadline - time.monotonic()
            try:
                self.wait_until(loaded, min(remaining, _LOAD_RETRY_S), what)
                break
            except CatalogTimeoutError:
                if remaining <= _LOAD_RETRY_S:
                    message = f"table {table_name} not loaded within {timeout:g}s"
                    raise CatalogTimeoutError(message) from None
        return self._decode(self._table_entry(table_name)).table

    def _table_entry(self, name: TableName) -> Entry:
        return reads.table_entry(self.cache_view(), name)

    def list_partitions(self, table: str, spec: PartitionSpec = None) -> list[Any]:
        """The ``THdfsPartition`` objects of ``table`` matching a partial spec.

        ``spec`` is like HMS ``get_partitions_ps``: a mapping or a ``k=v/k2=v2``
        string naming any subset of the partition columns; None matches all.
        Results are sorted by partition name.

        Raises:
            NotFoundError: no such table.
            InvalidRequestError: a malformed spec, or a column that is not a
                partition column of the table.
        """
        name = TableName.parse(table)
        view = self.cache_view()
        header = self._decode(reads.table_entry(view, name)).table
        columns = [c.columnName.lower() for c in (header.clustering_columns or [])]
        found = reads.partition_entries(view, name, columns, spec)
        return [self._decode(entry).hdfs_partition for entry in found]

    def request_reload(self, db: str, table: str | None = None, on_loaded: Loaded = None) -> None:
        """Ask catalogd to reload ``db.table`` from HMS now (``table`` None: the
        database's table names and functions), as after a write made elsewhere.
        Non-blocking. ``on_loaded`` (called on the subscriber's thread; must not block)
        gets the version whose state shows the reload once published (wait with
        :meth:`wait_for_version`), or None if none will come (failed, gone, busy)."""
        self._transport.send_request(*requests.reload(db, table, on_loaded))

    # -- privileges and cache pools --------------------------------------------------------

    def list_principals(self, principal_type: str | None = None) -> list[Any]:
        """Roles, users and groups known to the catalog (optionally of one type)."""
        return privileges.principals(self._privileges(self.cache_view()), principal_type)

    def privileges_of(self, principal: str, principal_type: str = "ROLE") -> list[Any]:
        """The grants held directly by one principal.

        Raises:
            NotFoundError: no such principal.
        """
        return privileges.privileges_of(
            self._privileges(self.cache_view()), principal, principal_type
        )

    def check_privilege(
        self,
        user: str,
        groups: Iterable[str],
        level: str | int,
        db: str,
        table: str | None = None,
        column: str | None = None,
    ) -> bool:
        """Whether ``user`` (in ``groups``) holds ``level`` (e.g. ``"SELECT"``) on the object,
        with HMS/Impala semantics: see :mod:`subscriber.privileges`."""
        return privileges.check_privilege(
            self._privileges(self.cache_view()), user, list(groups), level, db, table, column
        )

    def list_cache_pools(self) -> list[Any]:
        """The ``THdfsCachePool`` objects, sorted by name."""
        return reads.cache_pools(self.cache_view(), self._decode)

    def cached_tables(self, pool: str | None = None) -> list[str]:
        """Tables (``db.table``) and partitions (``db.table/k=v``) marked cached
        (in ``pool`` when given), from table headers alone."""
        return reads.cached_tables(self.cache_view(), self._decode, pool)
