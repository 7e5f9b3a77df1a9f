"""The seam between catalogd and wherever metadata lives: :class:`MetastoreSource`.

:class:`~catalogd.sources.thrift.ThriftSource` (a real HMS over Thrift),
:class:`~catalogd.sources.sql.SqlSource` (the HMS backing database, read
directly) and :class:`~catalogd.sources.memory.InMemorySource` (tests and
benchmarks that must not be limited by HMS speed) implement it. The protocol
covers everything catalogd asks a metastore: databases, tables and partitions;
notification events (the change detector); roles, memberships and grants
(:mod:`catalogd.conversion.grants`); and closing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable


class MetastoreSource(Protocol):
    """What catalogd needs from a metastore. Names are returned as stored."""

    address: str

    def database_names(self) -> list[str]: ...

    def get_database(self, name: str) -> Any: ...

    def table_names(self, db: str) -> list[str]: ...

    def get_tables(self, db: str, names: Sequence[str]) -> list[Any]:
        """The ``Table`` of each existing name; missing ones are left out."""
        ...

    def partitions(self, db: str, table: str, names: Sequence[str] | None = None) -> Iterator[Any]:
        """The ``Partition`` objects of a table (only ``names`` when given)."""
        ...

    def partition_names(self, db: str, table: str) -> list[str]:
        """The HMS partition names (``k=v/k2=v2``) of a table."""
        ...

    def table_column_statistics(self, db: str, table: str, columns: Sequence[str]) -> list[Any]:
        """HMS's table-level ``ColumnStatisticsObj`` s for ``columns`` (those it has)."""
        ...

    def all_functions(self) -> list[Any]:
        """Every HMS ``Function`` of every database (as ``get_all_functions`` returns them)."""
        ...

    def current_notification_id(self) -> int:
        """The id of the newest notification event (0 when the metastore logs none)."""
        ...

    def next_notifications(self, last_event: int, max_events: int) -> list[Any]:
        """Up to ``max_events`` ``NotificationEvent`` s with ids above ``last_event``."""
        ...

    def get_role_names(self) -> list[str]: ...

    def get_principals_in_role(self, role: str) -> list[Any]:
        """The ``RolePrincipalGrant`` s of every member of ``role``."""
        ...

    def list_privileges(self, principal_name: str, principal_type: int) -> list[Any]:
        """The ``HiveObjectPrivilege`` s of one principal (``PrincipalType``), on anything."""
        ...

    def grants_on(self, hive_object: Any) -> list[Any]:
        """The ``HiveObjectPrivilege`` s of every principal on one ``HiveObjectRef``."""
        ...

    def close(self) -> None:
        """Release what the source holds (a connection); it is not used afterwards."""
        ...


@runtime_checkable
class BulkSource(MetastoreSource, Protocol):
    """A source that can also read in bulk: count, split and read many partitions in
    few queries. :class:`~catalogd.sources.sql.SqlSource` is one; load workers use
    these abilities when the source has them (:func:`bulk`) and fall back to the
    plain :class:`MetastoreSource` calls otherwise."""

    def partition_counts(self, db: str, tables: Sequence[str]) -> dict[str, int]:
        """``{table: number of partitions}`` for the named tables of ``db`` that exist
        (lower-case names; 0 for unpartitioned tables and views)."""
        ...

    def partition_ranges(self, db: str, table: str, size: int) -> list[tuple[int, int | None]]:
        """Id ranges ``[first, next first)`` (the last one open: None) covering the
        table's partitions, at most ``size`` partitions each."""
        ...

    def partitions_in_range(
        self, db: str, table: str, id_range: tuple[int, int | None]
    ) -> Iterator[Any]:
        """The ``Partition`` s of one of :meth:`partition_ranges`, streamed."""
        ...

    def tables_partitions(self, db: str, tables: Sequence[str]) -> dict[str, list[Any]]:
        """The ``Partition`` s of several small tables of ``db`` read together, by
        lower-case table name; missing tables are left out."""
        ...


def bulk(source: MetastoreSource) -> BulkSource | None:
    """``source`` as a :class:`BulkSource` when it has the bulk abilities, else None."""
    return source if isinstance(source, BulkSource) else None
