"""The protocol's messages as plain values, decoded from (or encoded to) Thrift by
:mod:`subscriber.protocol.wire` and consumed by :class:`subscriber.sync.SyncMachine`.

Published on PUB/SUB: :class:`DeltaPart` (one database's entries of a delta),
:class:`Commit` (closes a delta with its entry counts per database) and
:class:`Heartbeat`. Answering a snapshot request on ROUTER/DEALER:
:class:`SnapshotChunk` values numbered from 0, then one :class:`SnapshotEnd`.
Answering a hello: :class:`Welcome`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from subscriber.protocol.delta import Entry


@dataclass(frozen=True, slots=True)
class DeltaPart:
    """The entries of one database (``""`` = global objects) in one published delta."""

    service_id: str
    from_version: int
    to_version: int
    database: str
    entries: tuple[Entry, ...]
    counts: Mapping[str, int] | None = None
    """Set on a delta's last part: the whole delta's entries per database."""


_new = object.__new__
_set_part_fields = tuple(vars(DeltaPart)[f].__set__ for f in DeltaPart.__slots__)


def make_part(
    service_id: str,
    from_version: int,
    to_version: int,
    database: str,
    entries: tuple[Entry, ...],
    counts: Mapping[str, int] | None,
) -> DeltaPart:
    """``DeltaPart(...)`` in half the time (as :func:`~subscriber.protocol.delta.make_entry`):
    one per published change."""
    part = _new(DeltaPart)
    a, b, c, d, e, f = _set_part_fields
    a(part, service_id)
    b(part, from_version)
    c(part, to_version)
    d(part, database)
    e(part, entries)
    f(part, counts)
    return part


@dataclass(frozen=True, slots=True)
class Commit:
    """Closes a published delta: how many entries each database's part carried."""

    service_id: str
    from_version: int
    to_version: int
    counts: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Heartbeat:
    service_id: str
    version: int
    interval_s: float
    report: bool = False
    """catalogd asks for the applied version now (THeartbeat.report)."""


def interval_s(interval_ms: int) -> float:
    """A heartbeat's ``interval_ms`` in seconds, at least a millisecond (both readers of
    a ``THeartbeat`` use it: the scan and the general way)."""
    return max(interval_ms, 1) / 1000.0


@dataclass(frozen=True, slots=True)
class PackedRun:
    """``count`` consecutive partitions of table ``table`` (``db.t``) in a snapshot chunk,
    kept as they arrived: bytes ``[start, end)`` of the inflated ``frame``
    (:mod:`subscriber.protocol.packed` scans and unpacks them)."""

    table: str
    frame: bytes = field(repr=False)
    start: int
    end: int
    count: int


@dataclass(frozen=True, slots=True)
class SnapshotChunk:
    """One chunk of a snapshot answer; ``seq`` counts chunks from 0. Its partitions are
    in ``entries`` or, when the chunk was scanned rather than decoded, in ``packed``."""

    seq: int
    entries: tuple[Entry, ...]
    packed: tuple[PackedRun, ...] = ()

    @property
    def count(self) -> int:
        """How many entries the chunk carries."""
        return len(self.entries) + sum(run.count for run in self.packed)


@dataclass(frozen=True, slots=True)
class SnapshotEnd:
    """Ends a snapshot answer: the catalog at ``version`` is ``count`` entries in
    ``chunks`` chunks (what the receiver checks for truncation)."""

    service_id: str
    version: int
    count: int
    chunks: int


@dataclass(frozen=True, slots=True)
class Welcome:
    """catalogd's answer to a hello: who it is and where it publishes."""

    service_id: str
    pub_endpoint: str
    version: int
    hms_uri: str | None = None
    """The Hive Metastore catalogd reads (``thrift://host:port``); None when it reads the
    metastore database directly, or is a catalogd that does not say."""
    snapshot: tuple[Entry, ...] | None = None
    """The whole (small) snapshot of the hello's selection at ``version``; None when
    catalogd sends none (the selection is larger, or catalogd predates the field)."""
