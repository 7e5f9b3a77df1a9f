"""A :class:`~catalogd.sources.protocol.MetastoreSource` over HMS structs held in memory."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from subscriber.protocol.errors import NotFoundError


@dataclass
class InMemorySource:
    """A :class:`MetastoreSource` over HMS structs held in memory.

    It logs no notification events (so change detection polls it) and holds no
    roles or grants.
    """

    databases: dict[str, Any] = field(default_factory=dict)
    tables: dict[tuple[str, str], Any] = field(default_factory=dict)
    table_partitions: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    column_statistics: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    functions: list[Any] = field(default_factory=list)
    address: str = "memory://"

    def all_functions(self) -> list[Any]:
        return list(self.functions)

    def database_names(self) -> list[str]:
        return list(self.databases)

    def get_database(self, name: str) -> Any:
        try:
            return self.databases[name.lower()]
        except KeyError:
            raise NotFoundError(f"database {name.lower()} not found") from None

    def table_names(self, db: str) -> list[str]:
        self.get_database(db)
        return [t for (d, t) in self.tables if d == db.lower()]

    def get_tables(self, db: str, names: Sequence[str]) -> list[Any]:
        found = (self.tables.get((db.lower(), n.lower())) for n in names)
        return [t for t in found if t is not None]

    def partition_names(self, db: str, table: str) -> list[str]:
        return list(self.table_partitions.get((db.lower(), table.lower()), {}))

    def partitions(self, db: str, table: str, names: Sequence[str] | None = None) -> Iterator[Any]:
        parts = self.table_partitions.get((db.lower(), table.lower()), {})
        if names is None:
            yield from parts.values()
        else:
            yield from (parts[n] for n in names if n in parts)

    def table_column_statistics(self, db: str, table: str, columns: Sequence[str]) -> list[Any]:
        wanted = {c.lower() for c in columns}
        objs = self.column_statistics.get((db.lower(), table.lower()), [])
        return [o for o in objs if o.colName.lower() in wanted]

    def current_notification_id(self) -> int:
        return 0

    def next_notifications(self, last_event: int, max_events: int) -> list[Any]:
        return []

    def get_role_names(self) -> list[str]:
        return []

    def get_principals_in_role(self, role: str) -> list[Any]:
        return []

    def list_privileges(self, principal_name: str, principal_type: int) -> list[Any]:
        return []

    def grants_on(self, hive_object: Any) -> list[Any]:
        return []

    def close(self) -> None:
        pass
