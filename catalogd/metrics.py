"""Prometheus metrics of the daemon, served over HTTP at ``/metrics``.

A thin adapter: :class:`Metrics` owns a private ``CollectorRegistry`` (so tests
and several instances in one process never collide) and is fed by the daemon:
``update_from`` copies a server stats snapshot, the ``observe_*``/``count_*``
methods record events as they happen. Every name starts with ``catalogd_``.

Cardinality stays bounded: HMS methods and admin commands are finite sets, and
per-subscriber series are kept for at most ``max_subscriber_series`` clients,
the ones lagging most; series of clients no longer reported are removed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from subscriber.protocol.errors import InvalidRequestError

__all__ = ["Metrics", "ServerStatsLike"]

_SECONDS_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300)
# Counters mirrored from the server's cumulative stats: attribute -> (metric name, help).
_MIRRORED = {
    "published_messages": ("published_messages", "Messages published (deltas, heartbeats)"),
    "published_bytes": ("published_bytes", "Bytes published"),
    "heartbeats": ("heartbeats", "Heartbeats published"),
    "snapshots": ("snapshot_requests", "Snapshot requests served"),
    "catch_ups": ("catch_ups", "Catch-up requests served from the delta log"),
    "catch_ups_refused": ("catch_ups_refused", "Catch-ups the delta log no longer reached"),
    "hellos_refused": ("hellos_refused", "Hellos of subscribers in an older protocol"),
    "garbage": ("garbage_messages", "Malformed messages dropped"),
    "load_requests": ("load_requests", "Priority table load requests"),
}


class ServerStatsLike(Protocol):
    """What :meth:`Metrics.update_from` reads (``catalogd.server.thread.ServerStats`` has it)."""

    published_messages: int
    published_bytes: int
    heartbeats: int
    snapshots: int
    catch_ups: int
    catch_ups_refused: int
    hellos_refused: int
    garbage: int
    load_requests: int
    subscribers: dict[str, tuple[int, float]]


class Metrics:
    """The daemon's metrics. Thread-safe (prometheus_client's metrics are).

    Args:
        max_subscriber_series: per-client series kept at most (the laggiest clients).
    """

    def __init__(self, *, max_subscriber_series: int = 50) -> None:
        self.registry = CollectorRegistry()
        self._max_clients = max_subscriber_series
        self._lock = threading.Lock()  # guards the mirrors and the client series
        self._last: dict[str, int] = {}
        self._client_series: set[str] = set()
        self._http: tuple[Any, threading.Thread] | None = None
        reg = self.registry

        def gauge(name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
            return Gauge(f"catalogd_{name}", doc, labels, registry=reg)

        self.catalog_version = gauge("catalog_version", "Current catalog version")
        self.objects = gauge("objects", "Live catalog objects by type", ("type",))
        self.tables = gauge("tables", "Tables by load state", ("state",))
        self.delta_log_floor = gauge(
            "delta_log_floor_version", "Oldest version a catch-up can start from"
        )
        self.subscribers = gauge("subscribers", "Subscribers that reported an applied version")
        self.subscriber_lag = gauge(
            "subscriber_lag_versions", "Catalog version minus the client's applied one", ("client",)
        )
        self.subscriber_age = gauge(
            "subscriber_report_age_seconds", "Seconds since the client last reported", ("client",)
        )
        self.max_lag = gauge("subscriber_max_lag_versions", "Largest lag of any subscriber")
        self._mirrors = {
            attr: Counter(f"catalogd_{name}", doc, registry=reg)
            for attr, (name, doc) in _MIRRORED.items()
        }
        self.hms_calls = Counter("catalogd_hms_calls", "HMS calls", ("method",), registry=reg)
        self.hms_errors = Counter(
            "catalogd_hms_errors", "HMS calls that failed", ("method", "error"), registry=reg
        )
        self.hms_seconds = Histogram(
            "catalogd_hms_call_seconds", "HMS call latency", ("method",),
            buckets=_SECONDS_BUCKETS, registry=reg,
        )  # fmt: skip
        self.load_seconds = Histogram(
            "catalogd_load_seconds", "Metadata load durations", ("kind",),
            buckets=_SECONDS_BUCKETS, registry=reg,
        )  # fmt: skip
        self.admin_commands = Counter(
            "catalogd_admin_commands", "Admin commands", ("command", "outcome"), registry=reg
        )
        self.auth_failures = gauge(
            "auth_failures", "Failed CURVE authentications since start", ("domain",)
        )
        self.ha_role = gauge("ha_role", "1 for this process's HA role, 0 for the others", ("role",))
        self.embedded_hms_up = gauge("embedded_hms_up", "1 while the embedded HMS JVM runs")
        self.embedded_hms_restarts = gauge(
            "embedded_hms_restarts", "Restarts of the embedded HMS after its JVM died"
        )

    # -- fed by the daemon

    def set_catalog(
        self,
        *,
        version: int,
        objects_by_type: Mapping[str, int],
        tables_loaded: int,
        tables_not_loaded: int,
        delta_log_floor: int,
    ) -> None:
        """Record the catalog's current shape (call after each commit or periodically)."""
        self.catalog_version.set(version)
        for kind, count in objects_by_type.items():
            self.objects.labels(type=kind).set(count)
        self.tables.labels(state="loaded").set(tables_loaded)
        self.tables.labels(state="not_loaded").set(tables_not_loaded)
        self.delta_log_floor.set(delta_log_floor)

    def update_from(self, stats: ServerStatsLike, *, version: int, now: float) -> None:
        """Copy a server stats snapshot: its counters and its subscribers' lag.

        Args:
            stats: cumulative counters; a counter lower than last time means a new
                server (restart within the process), counted from zero again.
            version: the catalog version lag is measured against.
            now: wall-clock time (``time.time()``) to age the clients' last reports.
        """
        clients = dict(stats.subscribers)  # one copy: the server thread may add to it
        with self._lock:
            for attr, counter in self._mirrors.items():
                value = getattr(stats, attr)
                last = self._last.get(attr, 0)
                counter.inc(value - last if value >= last else value)
                self._last[attr] = value
            lags = {client: max(0, version - applied) for client, (applied, _) in clients.items()}
            keep = set(sorted(lags, key=lambda c: (-lags[c], c))[: self._max_clients])
            for gone in self._client_series - keep:
                self.subscriber_lag.remove(gone)
                self.subscriber_age.remove(gone)
            for client in keep:
                self.subscriber_lag.labels(client=client).set(lags[client])
                self.subscriber_age.labels(client=client).set(max(0.0, now - clients[client][1]))
            self._client_series = keep
        self.subscribers.set(len(clients))
        self.max_lag.set(max(lags.values(), default=0))

    def set_auth_failures(self, failures: Mapping[str, int]) -> None:
        """Record the failed authentications so far, by ZAP domain (subscribers, admin)."""
        for domain, count in failures.items():
            self.auth_failures.labels(domain=domain).set(count)

    def set_embedded_hms(self, report: Mapping[str, Any]) -> None:
        """Record the embedded HMS's supervision report (MetastoreSupervisor.report)."""
        self.embedded_hms_up.set(1 if report.get("state") == "running" else 0)
        self.embedded_hms_restarts.set(report.get("restarts", 0))

    def set_role(self, role: str) -> None:
        """Record the HA role: "active", "standby" or "fenced" (HA off: never called)."""
        for name in ("active", "standby", "fenced"):
            self.ha_role.labels(role=name).set(1 if name == role else 0)

    def observe_hms_call(self, method: str, seconds: float, error: str | None = None) -> None:
        """One HMS call: its latency, and the error class name when it failed."""
        self.hms_calls.labels(method=method).inc()
        self.hms_seconds.labels(method=method).observe(seconds)
        if error is not None:
            self.hms_errors.labels(method=method, error=error).inc()

    @contextmanager
    def hms_call(self, method: str) -> Iterator[None]:
        """Time the HMS call in the ``with`` block; an exception counts as an error."""
        started = time.perf_counter()
        try:
            yield
        except BaseException as exc:
            self.observe_hms_call(method, time.perf_counter() - started, type(exc).__name__)
            raise
        self.observe_hms_call(method, time.perf_counter() - started)

    def observe_load(self, kind: str, seconds: float) -> None:
        """A load finished: ``kind`` is e.g. ``initial``, ``names``, ``table``, ``refresh``."""
        self.load_seconds.labels(kind=kind).observe(seconds)

    def count_admin(self, command: str, outcome: str) -> None:
        """An admin command answered: ``outcome`` is e.g. ``ok``, ``not_found``, ``error``."""
        self.admin_commands.labels(command=command, outcome=outcome).inc()

    # -- HTTP endpoint

    def start_http(self, bind: str) -> int:
        """Serve ``/metrics`` on ``HOST:PORT`` from a daemon thread; returns the bound port.

        PORT 0 picks a free port. ``[::1]:PORT`` binds IPv6. Call :meth:`close` to stop.

        Raises:
            InvalidRequestError: ``bind`` is not HOST:PORT, or it is already serving.
            OSError: the address cannot be bound (in use, not local).
        """
        host, sep, port = bind.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise InvalidRequestError(f"metrics address must be HOST:PORT, not {bind!r}")
        with self._lock:
            if self._http is not None:
                raise InvalidRequestError("the metrics endpoint is already serving")
            server, thread = start_http_server(int(port), host.strip("[]"), self.registry)
            thread.name = "catalogd-metrics"
            self._http = (server, thread)
        return int(server.server_port)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the HTTP endpoint, if started, and wait up to ``timeout`` for it. Idempotent."""
        with self._lock:
            http, self._http = self._http, None
        if http is not None:
            server, thread = http
            server.shutdown()
            server.server_close()
            thread.join(timeout)
