"""Request handling: one decoded ``TRequest`` in, one :class:`Outcome` out.

Pure: no sockets, threads or clocks (the time is passed in as ``now``). The
server thread decodes a ROUTER message, calls :func:`answer` with the catalog
and a :class:`ServerState`, applies the outcome's side effects (which are
plain values) and sends what it says. The catalog is only read here.

What each command yields:

* ``hello`` -> a ``TWelcome`` (service id, advertised PUB endpoint, version,
  heartbeat interval, oldest catch-up version, protocol version, the HMS
  Thrift URI catalogd reads, when it reads one, and the whole snapshot of the
  hello's selection when it is small: ``welcome_snapshot_entries`` entries of
  ``welcome_snapshot_bytes``, so an empty or narrowly filtered subscriber needs
  no snapshot request). The joining subscriber then waits for its first SUB
  message, which the server thread sends as soon as its subscription arrives
  (see :mod:`catalogd.server.thread`), not in answer to the hello.
* ``snapshot`` -> no immediate response but a :class:`SnapshotJob` to stream
  (entries captured now, see :mod:`catalogd.server.snapshots`).
* ``catch_up`` -> a ``TDelta`` from the delta log (with ``invalidations``: keys and
  versions only), or ``NOTFOUND`` when the log no longer reaches back that far or the
  delta exceeds ``max_catch_up_entries``: the subscriber must take a snapshot.
* ``fetch`` -> a ``TFetchResponse`` (:mod:`catalogd.server.fetches`): an on-demand
  subscriber's read of entries by key, or of a page of one group's keys.
* ``load_table`` with ``reload`` -> ``OK`` and ``reload_request=(db, table)``
  (a write through an HMS endpoint; the table need not be known yet); with
  ``answer_when_loaded`` no response now but ``reply_to=(peer, request id)``: the
  server answers once the reload is published (``loaded_version``).
* ``load_table`` -> ``OK`` and ``load_request=(db, table)`` for the caller to
  forward (it must not block), or ``NOTFOUND`` when the catalog holds no such
  table (decided from the catalog's names: HMS is not asked).
* ``report`` -> no response (one-way) and a
  :class:`~catalogd.server.members.Report` to record; a negative applied version
  is a goodbye; a report naming another service id (from before a restart) is
  ignored. Whether it counts is :func:`catalogd.server.members.may_report`'s decision.
* anything else raises :class:`ProtocolError`; :func:`malformed` turns that
  (or a decoding error) into an ``ERROR`` response counted as garbage.

:func:`record` applies an outcome's counter and report to :class:`ServerStats`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import idl
from catalogd.core.catalog import Catalog, DeltaUnavailableError
from catalogd.server import fetches
from catalogd.server.config import ServerStats
from catalogd.server.members import Membership, Report
from catalogd.server.snapshot_cache import SnapshotCache
from catalogd.server.snapshots import (
    SnapshotJob,
    small_selection,
    snapshot_frames,
    wanted_databases,
)
from subscriber.protocol import codec, wire
from subscriber.protocol.delta import Delta
from subscriber.protocol.errors import ProtocolError

svc = idl.catalog_service

Counter = Literal[
    "snapshots",
    "catch_ups",
    "catch_ups_refused",
    "hellos_refused",
    "load_requests",
    "load_requests_unknown",
    "fetches",
    "garbage",
]
"""The :class:`ServerStats` counter a request adds one to."""


@dataclass(frozen=True, slots=True)
class ServerState:
    """What the server tells its peers, as of this request."""

    service_id: str
    pub_endpoint: str
    """The PUB endpoint as advertised to clients."""
    heartbeat_interval_s: float
    snapshot_chunk: int
    max_catch_up_entries: int
    hms_uri: str | None = None
    """The HMS Thrift URI catalogd reads (None: none, it reads the metastore database)."""
    welcome_snapshot_entries: int = 0
    welcome_snapshot_bytes: int = 0
    """A welcome carries the snapshot when it holds at most this many entries and bytes."""
    snapshot_cache: SnapshotCache | None = None
    """The server's encoded chunks, shared by joins (None: nothing shared)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """The answer to one request and its side effects, as values."""

    response: Any | None = None
    """A ``TResponse`` to send now; None for one-way and streamed requests."""
    snapshot: SnapshotJob | None = None
    load_request: tuple[str, str] | None = None
    reload_request: tuple[str, str] | None = None
    """(db, table) to reload even if loaded; table "" is the database's names."""
    reply_to: tuple[bytes, int | None] | None = None
    """(peer, request id) to answer when the reload is published."""
    report: Report | None = None
    join: str | None = None
    """The client id the peer said hello as."""
    follows: str = "all"
    """The databases it follows (comma-separated, at most a few shown), or "all"."""
    counter: Counter | None = None


def loaded(rid: int | None, version: int | None, error: BaseException | None) -> Any:
    """The answer to a reload asked with ``answer_when_loaded``: the version that
    shows it, or the error that stopped it."""
    if error is not None:
        return status(svc.TStatusCode.ERROR, f"reload failed: {error}", rid)
    return svc.TResponse(request_id=rid, status=ok(), loaded_version=version)


def answer(
    identity: bytes, request: Any, catalog: Catalog, state: ServerState, now: float
) -> Outcome:
    """Handle one decoded request from the peer ``identity`` (see the module docstring).

    Raises:
        ProtocolError: the request carries no known command.
    """
    rid = request.request_id
    if request.hello is not None:
        spoken = request.hello.protocol_version
        if spoken is not None and spoken < svc.PROTOCOL_VERSION:
            refused = status(svc.TStatusCode.ERROR, too_old(spoken), rid)
            return Outcome(response=refused, counter="hellos_refused")
        return Outcome(
            response=svc.TResponse(
                request_id=rid,
                status=ok(),
                welcome=welcome(catalog, state, request.hello.databases),
            ),
            join=request.hello.client_id,
            follows=_follows(request.hello.databases),
        )
    if request.snapshot is not None:
        frames = snapshot_frames(
            catalog,
            service_id=state.service_id,
            request_id=rid,
            databases=request.snapshot.databases,
            chunk_size=state.snapshot_chunk,
            empty=bool(request.snapshot.empty),
            cache=state.snapshot_cache,
        )
        return Outcome(snapshot=SnapshotJob(identity, rid, frames), counter="snapshots")
    if request.catch_up is not None:
        return catch_up(rid, request.catch_up, catalog, state)
    if request.load_table is not None:
        load = request.load_table
        db, table = load.db_name.lower(), load.tbl_name.lower()
        if load.reload:  # after a write through an HMS endpoint: the table may be new
            later = bool(load.answer_when_loaded)
            return Outcome(
                response=None if later else svc.TResponse(request_id=rid, status=ok()),
                reload_request=(db, table),
                reply_to=(identity, rid) if later else None,
                counter="load_requests",
            )
        if not catalog.table_keys(db, table):
            return Outcome(
                response=status(svc.TStatusCode.NOTFOUND, f"no table {db}.{table}", rid),
                counter="load_requests_unknown",
            )
        return Outcome(
            response=svc.TResponse(request_id=rid, status=ok()),
            load_request=(db, table),
            counter="load_requests",
        )
    if request.fetch is not None:
        fetched = fetches.fetch(catalog, state.service_id, request.fetch)
        return Outcome(
            response=svc.TResponse(request_id=rid, status=ok(), fetched=fetched), counter="fetches"
        )
    if request.report is not None:
        report = request.report
        if report.applied_version < 0:  # goodbye: a subscriber closed cleanly
            return Outcome(report=Report(report.client_id, None, now))
        if report.service_id == state.service_id:  # not from before a restart
            return Outcome(report=Report(report.client_id, report.applied_version, now))
        return Outcome()
    raise ProtocolError("request carries no known command")


def decode(body: bytes, *, max_inflated: int, max_list_items: int) -> Any:
    """Decode one ``TRequest`` within bounds: a compressed body may expand to
    ``max_inflated`` bytes (checked while inflating, so a bomb costs little),
    and no list in it may hold more than ``max_list_items`` items.

    Raises:
        ProtocolError: the body is malformed or exceeds a bound.
    """
    request = codec.unpack(
        svc.TRequest, body, max_size=max_inflated, max_decoded_size=64 * max_inflated
    )
    for part in (request.hello, request.snapshot, request.catch_up):
        databases = getattr(part, "databases", None)
        if databases is not None and len(databases) > max_list_items:
            raise ProtocolError(f"too many databases: {len(databases)} > {max_list_items}")
    return request


def welcome(catalog: Catalog, state: ServerState, databases: list[str] | None = None) -> Any:
    """The ``TWelcome`` a hello for ``databases`` (None: all) is answered with."""
    return svc.TWelcome(
        service_id=state.service_id,
        pub_endpoint=state.pub_endpoint,
        version=catalog.version,
        heartbeat_interval_ms=int(state.heartbeat_interval_s * 1000),
        oldest_catch_up_version=catalog.floor,
        protocol_version=svc.PROTOCOL_VERSION,
        hms_uri=state.hms_uri,
        snapshot=small_selection(
            catalog,
            databases,
            max_entries=state.welcome_snapshot_entries,
            max_bytes=state.welcome_snapshot_bytes,
        ),
    )


def catch_up(rid: int | None, req: Any, catalog: Catalog, state: ServerState) -> Outcome:
    """The delta since ``req.from_version`` (filtered), or NOTFOUND: take a snapshot."""
    wanted = wanted_databases(req.databases)
    try:
        delta = catalog.delta_since(req.from_version).filtered(wanted)
    except DeltaUnavailableError as exc:
        return Outcome(
            response=status(svc.TStatusCode.NOTFOUND, str(exc), rid), counter="catch_ups_refused"
        )
    if len(delta.entries) > state.max_catch_up_entries:
        return Outcome(
            response=status(svc.TStatusCode.NOTFOUND, "catch-up too large: take a snapshot", rid),
            counter="catch_ups_refused",
        )
    if req.invalidations:  # an on-demand subscriber: keys and versions only
        delta = Delta(
            delta.from_version, delta.to_version, tuple(e.invalidation() for e in delta.entries)
        )
    return Outcome(
        response=svc.TResponse(
            request_id=rid, status=ok(), delta=wire.delta_to_thrift(state.service_id, delta)
        ),
        counter="catch_ups",
    )


def malformed(exc: ProtocolError) -> Outcome:
    """A request that could not be decoded or understood: ERROR, counted as garbage."""
    return Outcome(
        response=status(svc.TStatusCode.ERROR, f"malformed request: {exc}"), counter="garbage"
    )


def record(
    stats: ServerStats,
    outcome: Outcome,
    members: Membership,
    identity: bytes,
    now: float,
) -> None:
    """Apply ``outcome``'s counter, join and report from ``identity`` (server thread only).

    ``members`` keeps ``stats.subscribers``; a report that may not count is
    counted in ``stats.reports_refused`` instead.
    """
    if outcome.counter is not None:
        setattr(stats, outcome.counter, getattr(stats, outcome.counter) + 1)
    if outcome.join is not None:
        members.join(identity, outcome.join, now, outcome.follows)
    if outcome.report is not None and not members.report(identity, outcome.report):
        stats.reports_refused += 1


def _follows(databases: list[str] | None, shown: int = 8) -> str:
    if databases is None:
        return "all"
    names = sorted(databases)
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(n[:64] for n in names[:shown]) + more


def too_old(spoken: int) -> str:
    """Why a hello in an older protocol is refused: that subscriber would misread what
    this catalogd sends (protocol 2 leaves derivable table columns off the wire; protocol
    3 publishes each message as one frame)."""
    return (
        f"this catalogd speaks protocol {svc.PROTOCOL_VERSION}, the subscriber {spoken}: "
        "upgrade the subscriber to catalogd's release"
    )


def ok() -> Any:
    """An OK status."""
    return svc.TStatus(code=svc.TStatusCode.OK)


def status(code: int, message: str, request_id: int | None = None) -> Any:
    """A response carrying only a status."""
    return svc.TResponse(request_id=request_id, status=svc.TStatus(code=code, message=message))


WRONG_PORT = (
    "this is catalogd's subscriber endpoint (--bind, default port 26500); admin commands "
    "go to its admin endpoint (--admin-bind, default tcp://127.0.0.1:26502)"
)


def wrong_port_reply() -> bytes:
    """What a REQ peer (``catalogd admin``) gets from the subscriber endpoint: an admin
    answer saying where admin commands go, instead of a silence until its timeout."""
    answer = svc.TAdminResponse(status=svc.TStatus(code=svc.TStatusCode.ERROR, message=WRONG_PORT))
    return codec.pack(answer)
