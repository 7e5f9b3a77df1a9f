"""The broadcast server's settings and counters: plain values, no sockets or threads.

:class:`ServerConfig` is frozen: a running server changes only its heartbeat
interval (:meth:`~catalogd.server.thread.CatalogServer.set_heartbeat_interval`).
:class:`ServerStats` is written only by the server thread; other threads may
read it at any time (copy ``subscribers`` with ``dict(...)`` before iterating).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from catalogd.addresses import DEFAULT_PORT

if TYPE_CHECKING:  # a plain value here; the module itself imports zmq
    from catalogd.security.curve import CurveServer


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Where and how the server listens.

    ``bind`` is the one address clients are given (ROUTER). ``pub_bind`` defaults
    to the same host on the next port (on a free port when ``bind``'s is ``*``);
    ``"tcp://HOST:*"`` picks a free port.
    ``advertise_host`` is the host put into the PUB endpoint clients are told
    (default: the host they connected to).
    """

    bind: str = f"tcp://127.0.0.1:{DEFAULT_PORT}"
    pub_bind: str | None = None
    advertise_host: str | None = None
    heartbeat_interval_s: float = 1.0
    snapshot_chunk: int = 1000
    """Entries per snapshot frame at most. A replica inflates a table's frames again on
    its first read of the table (subscriber/protocol/packed.py), each from its start: a
    frame's size bounds what it inflates for other tables (2,000 was used before packed
    replicas; on 1,000-partition tables 500 read no faster, 1,000 and 2,000 within this
    machine's noise)."""
    max_catch_up_entries: int = 200_000
    max_tombstones: int = 100_000
    start_version: int = 0
    pub_hwm: int = 100_000
    max_request_bytes: int = 64 * 1024
    """The largest request frame the ROUTER accepts (requests take a few KB)."""
    max_request_inflated_bytes: int = 256 * 1024
    """A compressed request may expand to this much, checked while inflating."""
    max_request_list_items: int = 10_000
    """The longest list a request may carry (database names)."""
    max_snapshot_jobs_per_peer: int = 2
    """Snapshots queued for one peer; a newer request replaces its oldest."""
    max_snapshot_jobs: int = 1_000
    """Snapshots queued in all; beyond it a snapshot request is answered BUSY."""
    snapshot_cache_bytes: int = 256 * 1024 * 1024
    """Encoded snapshot chunks kept for later joins (~51 B per partition; 0: none)."""
    snapshot_turn_s: float = 0.02
    """Snapshot frames sent per loop turn stop once this much time went by (the turn
    then ends with at most one chunk's encoding more): a bound on the server's stall."""
    report_ttl_s: float = 10.0
    """A subscriber that neither joined nor reported for this long is forgotten."""
    welcome_snapshot_entries: int = 64
    welcome_snapshot_bytes: int = 64 * 1024
    """A hello's selection of at most this many entries and payload bytes is sent whole
    in the welcome (0 entries: only an empty one), so that subscriber skips the snapshot."""
    max_subscribers: int = 10_000
    """Joined connections remembered; the longest silent one makes room."""
    curve: CurveServer | None = None
    """CURVE keys for the ROUTER and PUB (ZAP domain ``subscribers``); None: plain TCP."""
    hms_uri: str | None = None
    """The HMS Thrift URI told to subscribers in the welcome (an HMS endpoint's default
    upstream); None: catalogd reads the metastore database, not an HMS."""


@dataclass
class ServerStats:
    """Counters, updated only by the server thread; read them from anywhere."""

    published_messages: int = 0
    published_bytes: int = 0
    heartbeats: int = 0
    snapshots: int = 0
    catch_ups: int = 0
    catch_ups_refused: int = 0
    hellos_refused: int = 0
    """Hellos in an older protocol (an old subscriber release), answered with the reason."""
    garbage: int = 0
    load_requests: int = 0
    load_requests_unknown: int = 0
    fetches: int = 0
    """On-demand subscribers' fetches answered (:mod:`catalogd.server.fetches`)."""
    reports_refused: int = 0
    """Reports for a client id the sending connection did not join under."""
    busy: int = 0
    snapshot_jobs: int = 0
    """Snapshots being streamed now (a gauge)."""
    snapshot_jobs_replaced: int = 0
    snapshot_retries: int = 0
    """Sends refused by a full pipe (the job waits, backing off, and tries again)."""
    snapshot_cache_bytes: int = 0
    """Encoded snapshot chunks held for later joins (a gauge)."""
    snapshot_cache_hits: int = 0
    snapshot_cache_misses: int = 0
    """Databases a join found encoded already / had to encode."""
    longest_turn_s: float = 0.0
    """The longest server loop turn since start (its worst stall), in wall time."""
    longest_turn_cpu_s: float = 0.0
    """The most CPU time one turn took (its own work, without waits for a CPU)."""
    subscribers: dict[str, tuple[int, float]] = field(default_factory=dict)
    """client id -> (applied version, wall time of its last report)."""
