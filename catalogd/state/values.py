"""Values the state store returns, and the checks on what it is given.

Frozen dataclasses built from rows at the store's edge (``from_row``); no I/O.
Names are normalized here once: database, table and pool names lower-cased,
partition names in HMS's canonical ``k=v/k2=v2`` form (columns lower-cased,
values escaped as Hive escapes them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from subscriber.protocol.errors import InvalidRequestError
from subscriber.protocol.keys import make_partition_name, parse_partition_name

__all__ = [
    "AuditRecord",
    "CacheMark",
    "CachePool",
    "check_limit",
    "check_pool_name",
    "describe_marks",
]

_MAX_NAME = 255
_MAX_LIMIT = 2**63 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def check_pool_name(name: str) -> str:
    """A pool name, lower-cased.

    Raises:
        InvalidRequestError: not a string, empty, longer than 255 characters,
            or containing whitespace or control characters.
    """
    if not isinstance(name, str) or not name:
        raise InvalidRequestError(f"a cache pool needs a non-empty name, not {name!r}")
    if len(name) > _MAX_NAME or any(c.isspace() or not c.isprintable() for c in name):
        raise InvalidRequestError(
            f"invalid cache pool name {name!r}: at most {_MAX_NAME} characters, "
            "no whitespace or control characters"
        )
    return name.lower()


def check_limit(limit_bytes: int | None) -> int | None:
    """A pool limit in bytes (None: unlimited).

    Raises:
        InvalidRequestError: not an integer, negative, or beyond 2**63 - 1.
    """
    if limit_bytes is None:
        return None
    if isinstance(limit_bytes, bool) or not isinstance(limit_bytes, int):
        raise InvalidRequestError(f"a pool limit is a number of bytes, not {limit_bytes!r}")
    if not 0 <= limit_bytes <= _MAX_LIMIT:
        raise InvalidRequestError(
            f"a pool limit must be between 0 and {_MAX_LIMIT} bytes, not {limit_bytes}"
        )
    return limit_bytes


def _table_part(text: str, what: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidRequestError(f"a cache mark needs a non-empty {what} name, not {text!r}")
    return text.strip().lower()


@dataclass(frozen=True, slots=True)
class CachePool:
    """An HDFS-style cache pool managed by catalogd."""

    name: str
    owner: str | None = None
    limit_bytes: int | None = None  # None: unlimited

    @classmethod
    def from_row(cls, row: Any) -> CachePool:
        limit = row.limit_bytes
        return cls(row.name, row.owner, None if limit is None else int(limit))


@dataclass(frozen=True, slots=True)
class CacheMark:
    """A table (``partition`` None) or one partition marked cached in ``pool``."""

    db: str
    table: str
    partition: str | None
    pool: str

    @classmethod
    def of(cls, db: str, table: str, partition: str | None, pool: str) -> CacheMark:
        """Normalize and check a mark's names.

        Raises:
            InvalidRequestError: an empty db or table name, or a partition
                name not of the form ``k=v/k2=v2``.
        """
        if partition is not None:
            pairs = parse_partition_name(partition)
            partition = make_partition_name([k for k, _ in pairs], [v for _, v in pairs])
        return cls(_table_part(db, "database"), _table_part(table, "table"), partition, pool)

    @classmethod
    def from_row(cls, row: Any) -> CacheMark:
        return cls(row.db, row.tbl, row.partition_name or None, row.pool)

    @property
    def display_name(self) -> str:
        """``db.table`` or ``db.table (k=v/k2=v2)`` for messages."""
        name = f"{self.db}.{self.table}"
        return name if self.partition is None else f"{name} ({self.partition})"

    def sort_key(self) -> tuple[str, str, str]:
        return self.db, self.table, self.partition or ""


def describe_marks(marks: list[CacheMark], named: int) -> str:
    """``"3 cached tables or partitions: a.b, a.c, a.c (k=v)"`` naming at most ``named`` of them."""
    names = [m.display_name for m in sorted(marks, key=CacheMark.sort_key)]
    text = ", ".join(names[:named])
    if len(names) > named:
        text += f", and {len(names) - named} more"
    noun = "cached table or partition" if len(names) == 1 else "cached tables or partitions"
    return f"{len(names)} {noun}: {text}"


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One admin command as the audit log holds it."""

    id: int
    at: datetime  # UTC, timezone-aware
    command: str
    args: dict[str, Any]
    requester: str | None
    outcome: str
    version: int | None

    @classmethod
    def from_row(cls, row: Any) -> AuditRecord:
        return cls(
            id=int(row.id),
            at=_EPOCH + timedelta(microseconds=int(row.at_us)),
            command=row.command,
            args=json.loads(row.args),
            requester=row.requester,
            outcome=row.outcome,
            version=None if row.version is None else int(row.version),
        )
