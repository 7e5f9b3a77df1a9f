"""``CatalogSubscriber``: a loss-free local copy of catalogd's catalog, for Spark drivers.

::

    with CatalogSubscriber("tcp://catalogd-host:26500") as sub:
        sub.wait_synced(timeout=30)
        table = sub.get_table("sales.orders")           # a TTable, no HMS call
        parts = sub.list_partitions("sales.orders", {"dt": "2024-01-01"})

Reads never block and take no lock: each reads one immutable view of the
cache that the background thread swaps in whole. Objects returned are shared
decoded Thrift structs: treat them as read-only (copy before changing one).
Listeners run on the background thread; one that raises is logged and kept.
A subscriber belongs to the process that started it: using it in a forked child
raises :class:`~subscriber.protocol.errors.ForkedProcessError`. It starts once
(:class:`Lifecycle`): after :meth:`~CatalogSubscriber.close`, ``start`` raises.

The reads (databases, tables, partitions, privileges, pools) are the mixin
:class:`~subscriber.catalog_reads.CatalogReads`; with ``mode="on-demand"`` they
read through a bounded cache that fetches misses from catalogd
(:mod:`subscriber.ondemand`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any

from subscriber import reads
from subscriber.cache import CacheView, ChangeEvent
from subscriber.catalog_reads import CatalogReads
from subscriber.curve import KeySource, client_keys
from subscriber.ondemand.cache import CacheStats, OnDemandCache
from subscriber.ondemand.reader import Fetcher, LazyView
from subscriber.protocol.errors import (
    AuthenticationError,
    CatalogTimeoutError,
    ConflictError,
    ForkedProcessError,
    InvalidRequestError,
)
from subscriber.reads import PartitionSpec
from subscriber.sockets import TransportConfig
from subscriber.sync import Step, SyncMachine
from subscriber.transport import SubscriberTransport, TransportStats

if TYPE_CHECKING:
    from subscriber.metastore.endpoint import MetastoreEndpoint

__all__ = ["CatalogSubscriber", "Lifecycle", "Listener", "PartitionSpec"]

log = logging.getLogger(__name__)

Listener = Callable[[ChangeEvent], None]

MODES = ("replica", "on-demand")
"""A replica holds the whole catalog (of its databases); on-demand what was read."""


class Lifecycle(Enum):
    """A subscriber's lifecycle (kazoo TreeCache's): it starts once and never restarts."""

    LATENT = "latent"
    STARTED = "started"
    CLOSED = "closed"


class CatalogSubscriber(CatalogReads):
    """Subscribes to catalogd and keeps a local, versioned copy of its catalog.

    Args:
        endpoint: catalogd's address, ``tcp://host:26500`` or ``host:26500`` (the only one
            needed: the publisher's address is learned in the handshake), or the addresses
            of an HA pair (``["tcp://a:26500", "tcp://b:26500"]``): they are tried in turn,
            the active one answers (a standby binds nothing), and when it goes silent the
            next is tried; reads keep answering from the cache meanwhile.
        databases: follow only these databases (plus global objects such as
            privileges and cache pools); None follows everything.
        client_id: how catalogd names this subscriber (default: host-pid-random).
        rcvhwm: the SUB socket's receive high-water mark (messages).
        stale_after_heartbeats: heartbeat intervals of silence before
            :attr:`is_stale` turns true and the subscriber reconnects.
        request_timeout_s: ask again for a snapshot or catch-up unanswered this long.
        server_key: catalogd's public CURVE key, when catalogd uses keys: a
            certificate file (``server.key``) or the 40-character Z85 key.
        client_key: this client's secret key: its ``NAME.key_secret`` file or the
            Z85 secret key. Give both or neither; a refused key shows in
            :attr:`last_error` (and :attr:`is_synced` stays false).
        mode: ``"replica"`` (the default: the whole catalog, or its ``databases``, held
            and kept current; reads never block) or ``"on-demand"`` (only what is read,
            fetched from catalogd on a miss, at most ``cache_mb`` MiB, kept right by
            catalogd's invalidations: fast to start whatever the catalog's size).
        cache_mb: the on-demand cache's cap.

    Raises:
        InvalidRequestError: only one of the keys given, or a key that cannot be read;
            an endpoint that is not ``[tcp://]HOST:PORT`` (:mod:`subscriber.endpoints`);
            an unknown ``mode``.
    """

    def __init__(
        self,
        endpoint: str | Iterable[str],
        *,
        databases: Iterable[str] | None = None,
        client_id: str | None = None,
        rcvhwm: int = 100_000,
        stale_after_heartbeats: float = 3.0,
        request_timeout_s: float = 30.0,
        server_key: KeySource | None = None,
        client_key: KeySource | None = None,
        mode: str = "replica",
        cache_mb: int = 256,
    ) -> None:
        if mode not in MODES:
            raise InvalidRequestError(f"mode {mode!r}: one of {', '.join(MODES)}")
        if (server_key is None) != (client_key is None):
            raise InvalidRequestError("give both server_key and client_key, or neither")
        keys = None if server_key is None else client_keys(server_key, client_key or "")
        dbs = None if databases is None else tuple(sorted({d.lower() for d in databases}))
        endpoints = (endpoint,) if isinstance(endpoint, str) else tuple(endpoint)
        self.client_id = client_id or f"{os.uname().nodename}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.databases = dbs
        """The databases followed (lower case, sorted); None: all."""
        self._pid = os.getpid()
        self.mode = mode
        on_demand = OnDemandCache(cache_mb << 20) if mode == "on-demand" else None
        config = TransportConfig(
            endpoints=endpoints,
            databases=dbs,
            client_id=self.client_id,
            rcvhwm=rcvhwm,
            curve=keys,
            on_demand=on_demand is not None,
        )
        self._machine = SyncMachine(
            databases=dbs,
            stale_after_heartbeats=stale_after_heartbeats,
            request_timeout_s=request_timeout_s,
            cache=on_demand,  # type: ignore[arg-type]  # the same install/apply/advance/view
        )
        self._transport = SubscriberTransport(config, self._machine, self._after_step)
        self._on_demand = on_demand
        self._fetcher = Fetcher(self._transport.send_request, request_timeout_s)
        self._listeners: tuple[Listener, ...] = ()
        self._machine.cache.emit_events = False  # until someone listens
        self._changed = threading.Condition()
        self._steps = 0  # steps the transport thread took (wait_until's wake-ups)
        self._waiting = 0  # threads in wait_until's wait (changed under _changed)
        self._decode = reads.ObjectDecoder()
        self._privileges = reads.PrivilegeIndexes(self._decode)
        self._state = Lifecycle.LATENT

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def state(self) -> Lifecycle:
        """LATENT until :meth:`start`, then STARTED, and CLOSED for good after :meth:`close`."""
        return self._state

    def start(self) -> CatalogSubscriber:
        """Start the background thread (idempotent while started); returns self.

        Raises:
            ConflictError: the subscriber is closed (create a new one instead).
            ForkedProcessError: called in a forked child.
        """
        self._check_process()
        if self._state is Lifecycle.CLOSED:
            raise ConflictError("this CatalogSubscriber is closed: create a new one")
        if self._state is Lifecycle.LATENT:
            self._state = Lifecycle.STARTED
            self._transport.start()
        return self

    def close(self) -> None:
        """Stop the thread and close the sockets (idempotent; a no-op in a forked child)."""
        if self._state is Lifecycle.CLOSED or os.getpid() != self._pid:
            return
        self._state = Lifecycle.CLOSED
        self._transport.close()
        with self._changed:
            self._steps += 1
            self._changed.notify_all()

    def __enter__(self) -> CatalogSubscriber:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- status ---------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """The catalog version the cache holds (0 before the first sync)."""
        return self.cache_view().version

    @property
    def service_id(self) -> str:
        """The id of the catalogd process the cache came from ("" before sync)."""
        return self.cache_view().service_id

    @property
    def hms_uri(self) -> str | None:
        """The HMS catalogd reads, ``thrift://host:port``, as its welcome said; None before
        the first sync or when catalogd reads the metastore database (``--hms-db``)."""
        told = self._transport.welcome
        same = told is not None and self.is_synced and told.service_id == self.service_id
        return told.hms_uri if same and told is not None else None

    @property
    def is_synced(self) -> bool:
        return self._machine.synced

    @property
    def last_error(self) -> AuthenticationError | None:
        """Why catalogd refused the last connection attempt (a refused or missing
        CURVE key, a wrong server key), or None once a handshake succeeds."""
        return self._transport.last_error

    @property
    def is_stale(self) -> bool:
        """True after heartbeats stopped; reads still answer from the cache."""
        return self._machine.stale

    @property
    def lag_seconds(self) -> float:
        """0 while the cache holds every version catalogd announced; inf before sync."""
        return self._machine.lag_seconds(time.monotonic())

    @property
    def stats(self) -> TransportStats:
        """Counters: garbage and dropped messages, snapshots, catch-ups, reconnects."""
        return self._transport.stats

    @property
    def cache_stats(self) -> CacheStats | None:
        """On demand: the cache's hits, misses, evictions, invalidated and refused
        entries (and ``fetches`` made); None for a replica."""
        if self._on_demand is None:
            return None
        self._on_demand.stats.fetches = self._fetcher.fetches
        return self._on_demand.stats

    @property
    def gaps(self) -> int:
        """How many lost or out-of-order deltas were detected (and repaired)."""
        return self._machine.gaps

    def wait_synced(self, timeout: float) -> None:
        """Block until the first snapshot is applied.

        Raises:
            CatalogTimeoutError: not synced within ``timeout`` seconds.
        """
        self.wait_until(lambda: self._machine.synced, timeout, "the first sync")

    def wait_for_version(self, version: int, timeout: float) -> None:
        """Block until the cache holds ``version`` (read-your-writes after an admin command).
        Reads see it at once; listeners are told of it on the background thread, which may
        still be doing so when this returns.

        Raises:
            CatalogTimeoutError: the version did not arrive within ``timeout`` seconds.
        """
        self.wait_until(lambda: self.cache_view().version >= version, timeout, f"version {version}")

    def wait_until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Block until ``condition()`` holds; it is checked now and after every change
        the background thread makes (call :meth:`cache_view` in it, it must not block).

        Raises:
            CatalogTimeoutError: still false after ``timeout`` seconds (message names
                ``what``), or the subscriber is closed.
        """
        self._check_process()
        deadline = time.monotonic() + timeout
        while True:
            seen = self._steps  # the condition runs unlocked: an on-demand read may fetch
            if condition():
                return
            with self._changed:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._state is Lifecycle.CLOSED:
                    raise CatalogTimeoutError(
                        f"timed out after {timeout:g}s waiting for {what} "
                        f"(cached version {self.version})"
                    )
                self._waiting += 1  # before _steps is read: see _after_step
                try:
                    if self._steps == seen:  # nothing changed since it was checked
                        self._changed.wait(remaining)
                finally:
                    self._waiting -= 1

    # -- listeners -------------------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(event)`` on the background thread for each change."""
        self._listeners = (*self._listeners, listener)
        self._machine.cache.emit_events = True

    def remove_listener(self, listener: Listener) -> None:
        self._listeners = tuple(x for x in self._listeners if x is not listener)
        self._machine.cache.emit_events = bool(self._listeners)

    def metastore_endpoint(
        self, upstream: str, listen: str = "127.0.0.1:0", **options: Any
    ) -> MetastoreEndpoint:
        """An HMS Thrift endpoint answering reads from this cache and forwarding the rest to
        ``upstream`` (``thrift://host:port``, e.g. :attr:`hms_uri`); use it as a context
        manager and give its ``uri`` to Spark as ``spark.hadoop.hive.metastore.uris``.
        ``options``: other :class:`~subscriber.metastore.endpoint.EndpointConfig` fields."""
        from subscriber.metastore.endpoint import EndpointConfig, MetastoreEndpoint

        return MetastoreEndpoint(self, EndpointConfig(upstream=upstream, listen=listen, **options))

    # -- for adapters over the cache (the HMS endpoint) ---------------------------------------

    def cache_view(self) -> CacheView:
        """The current immutable view of the cache (never changes once returned); on
        demand, a :class:`~subscriber.ondemand.reader.LazyView` with the same reads."""
        self._check_process()
        if self._on_demand is not None:
            return LazyView(self._on_demand, self._fetcher)  # type: ignore[return-value]
        return self._machine.cache.view

    @property
    def decoder(self) -> reads.ObjectDecoder:
        """Entry -> decoded ``TCatalogObject``, memoised and shared by every read: treat
        what it returns as read-only."""
        return self._decode

    # -- internals ---------------------------------------------------------------------------

    def _check_process(self) -> None:
        if os.getpid() != self._pid:
            raise ForkedProcessError(
                "this CatalogSubscriber was started in process "
                f"{self._pid}; create a new one in process {os.getpid()}"
            )

    def _after_step(self, step: Step) -> None:
        """Runs on the transport thread after every protocol step."""
        for event in step.events:
            for listener in self._listeners:
                try:
                    listener(event)
                except Exception:  # noqa: BLE001 - a listener never kills the thread
                    log.exception("catalog listener %r failed on %s", listener, event)
        self._steps += 1  # written by this thread only (close() joins it first)
        if self._waiting:  # a waiter counts itself under the lock before it reads _steps
            with self._changed:
                self._changed.notify_all()
