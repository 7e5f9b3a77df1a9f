"""Values the state store returns that are its own (the audit log's records).

Frozen dataclasses built from rows at the store's edge (``from_row``); no I/O.
Cache pools and marks are catalog values: :mod:`catalogd.core.cache_pools`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

__all__ = ["AuditRecord"]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


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
