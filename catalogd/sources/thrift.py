"""A :class:`~catalogd.sources.protocol.MetastoreSource` over a real Hive Metastore's Thrift API."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import idl
from catalogd.hms.client import MetastoreClient

hms = idl.hive_metastore


class ThriftSource:
    """A :class:`MetastoreSource` over a real Hive Metastore's Thrift API.

    Tables are fetched in bulk (``get_table_objects_by_name``) and partitions in
    batches of ``partition_batch`` by name. Not thread-safe (one connection).
    """

    def __init__(self, client: MetastoreClient, *, partition_batch: int = 500) -> None:
        self.client = client
        self.address = client.uri
        self.partition_batch = partition_batch

    def database_names(self) -> list[str]:
        return self.client.get_all_databases()

    def get_database(self, name: str) -> Any:
        return self.client.get_database(name)

    def table_names(self, db: str) -> list[str]:
        self.client.get_database(db)  # NotFoundError for an unknown database
        return self.client.get_all_tables(db)

    def get_tables(self, db: str, names: Sequence[str]) -> list[Any]:
        return self.client.get_table_objects_by_name(db, names)

    def partition_names(self, db: str, table: str) -> list[str]:
        return self.client.get_partition_names(db, table)

    def all_functions(self) -> list[Any]:
        return self.client.get_all_functions()

    def partitions(self, db: str, table: str, names: Sequence[str] | None = None) -> Iterator[Any]:
        if names is None:
            names = self.client.get_partition_names(db, table)
        for start in range(0, len(names), self.partition_batch):
            batch = names[start : start + self.partition_batch]
            yield from self.client.get_partitions_by_names(db, table, batch)

    def table_column_statistics(self, db: str, table: str, columns: Sequence[str]) -> list[Any]:
        request = hms.TableStatsRequest(dbName=db, tblName=table, colNames=list(columns))
        result = self.client.call(
            "get_table_statistics_req", request, idempotent=True, what=f"table {db}.{table}"
        )
        return list(result.tableStats or [])

    def current_notification_id(self) -> int:
        return self.client.get_current_notification_event_id()

    def next_notifications(self, last_event: int, max_events: int) -> list[Any]:
        return self.client.get_next_notification(last_event, max_events)

    def get_role_names(self) -> list[str]:
        return self.client.get_role_names()

    def get_principals_in_role(self, role: str) -> list[Any]:
        return self.client.get_principals_in_role(role)

    def list_privileges(self, principal_name: str, principal_type: int) -> list[Any]:
        return self.client.list_privileges(principal_name, principal_type)

    def grants_on(self, hive_object: Any) -> list[Any]:
        # No principal (None, None): HMS answers for everyone holding a grant on it.
        return list(self.client.call("list_privileges", None, None, hive_object, idempotent=True))

    def close(self) -> None:
        self.client.close()
