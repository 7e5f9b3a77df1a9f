"""The HMS endpoint's counters: calls per method, served or forwarded and why.

Every call is counted once: ``served`` (answered by the endpoint), forwarded
with a reason (:data:`REASONS`), or ``failed`` (HMS unreachable). The reasons:

* ``write`` -- a method that may change the metastore (always forwarded);
* ``locked`` -- a read on a connection holding an HMS lock or open transaction
  (:mod:`subscriber.metastore.session`);
* ``pending`` -- a read that could show an object a write (or a stale read)
  touched, before the cache shows that change (:mod:`subscriber.metastore.pending`);
* ``stale`` -- the cache is behind catalogd by more than ``max_lag_s``;
* ``unknown`` -- a method the endpoint's IDL does not know;
* ``not_cached`` -- a read the cache does not answer (or not for this object:
  not loaded yet, a database not followed, a field the catalog does not keep);
* ``cannot_evaluate`` -- a read the cache could answer only by guessing (a filter
  or pattern it cannot evaluate exactly, an HMS error it cannot reproduce).

Thread-safe. :meth:`EndpointStats.snapshot` keeps its historical shape
(``forwarded`` counts every forwarded call but the stale ones);
:meth:`EndpointStats.by_method` and :meth:`EndpointStats.summary` give the reasons.
"""

from __future__ import annotations

import threading
from collections import Counter

import idl
from subscriber.metastore.answers import Forward
from subscriber.metastore.methods import Kind, kind

__all__ = ["REASONS", "EndpointStats", "answers_reason", "forward_reason"]

_SERVICE = idl.hive_metastore.ThriftHiveMetastore

REASONS = ("write", "locked", "pending", "stale", "unknown", "not_cached", "cannot_evaluate")
"""Why a call was forwarded to HMS."""


class EndpointStats:
    """Calls per method, by outcome and reason. Thread-safe; read with :meth:`snapshot`,
    :meth:`by_method` or :meth:`summary`.

    Attributes (plain counters, written by connection threads):
        connections: client connections accepted.
        garbage: connections closed for bytes that are no Thrift message.
        write_waits_timed_out: objects a write (or a stale read) touched whose
            change the cache did not show within ``write_wait_s`` (then served
            from the cache again; an overflow counts once).
        stale_reloads: reloads asked because a forwarded read showed HMS ahead of
            the cache (:mod:`subscriber.metastore.freshness`).
        pending_marked: objects marked pending (after writes and stale reads).
        pending_cleared / pending_seconds: pending objects seen cleared (the
            cache showed the change), and how long they were pending in total
            (until a read or a write first saw them cleared).
        pending_overflows: writes that found too many objects pending (every
            read forwarded for ``write_wait_s``).
        pending_unconfirmed: reloads catalogd answered with no version (failed,
            or no answer could come): their objects stay pending until the bound.
    """

    KINDS = ("served", "forwarded", "forwarded_stale", "failed")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, Counter[str]] = {k: Counter() for k in self.KINDS}
        self._reasons: dict[str, Counter[str]] = {r: Counter() for r in REASONS}
        self.connections = 0
        self.garbage = 0
        self.write_waits_timed_out = 0
        self.stale_reloads = 0
        self.pending_marked = 0
        self.pending_cleared = 0
        self.pending_seconds = 0.0
        self.pending_overflows = 0
        self.pending_unconfirmed = 0

    def add(self, kind: str, method: str) -> None:
        """Count one call ``served`` or ``failed`` (forwarded: :meth:`forwarded`)."""
        with self._lock:
            self._counts[kind][method] += 1

    def forwarded(self, method: str, reason: str) -> None:
        """Count one call forwarded to HMS for ``reason`` (one of :data:`REASONS`)."""
        with self._lock:
            self._reasons[reason][method] += 1
            self._counts["forwarded_stale" if reason == "stale" else "forwarded"][method] += 1

    def count_pending(
        self,
        *,
        marked: int = 0,
        overflow: bool = False,
        cleared: list[float] | None = None,
        expired: int = 0,
        unconfirmed: int = 0,
    ) -> None:
        """Count objects marked pending, an overflow, pending objects seen cleared
        (each one's seconds pending), ones whose bound passed and reloads catalogd
        could not confirm."""
        with self._lock:
            self.pending_unconfirmed += unconfirmed
            self.pending_marked += marked
            self.pending_overflows += overflow
            self.pending_cleared += len(cleared or ())
            self.pending_seconds += sum(cleared or ())
            self.write_waits_timed_out += expired

    def snapshot(self) -> dict[str, dict[str, int]]:
        """``{"served": {method: n}, "forwarded": ..., "forwarded_stale": ..., "failed": ...}``."""
        with self._lock:
            return {k: dict(v) for k, v in self._counts.items()}

    def reasons(self) -> dict[str, dict[str, int]]:
        """``{reason: {method: n}}`` of the forwarded calls (every reason present)."""
        with self._lock:
            return {r: dict(v) for r, v in self._reasons.items()}

    def by_method(self) -> dict[str, dict[str, int]]:
        """``{method: {"served": n, "failed": n, reason: n, ...}}``, non-zero counts only."""
        out: dict[str, dict[str, int]] = {}
        with self._lock:
            rows = [
                *(("served", self._counts["served"]), ("failed", self._counts["failed"])),
                *self._reasons.items(),
            ]
            for what, counts in rows:
                for method, n in counts.items():
                    out.setdefault(method, {})[what] = n
        return out

    def total(self, kind: str) -> int:
        """Calls of one kind (:attr:`KINDS`) or forwarded for one reason (:data:`REASONS`)."""
        with self._lock:
            table = self._reasons if kind in self._reasons else self._counts
            return sum(table[kind].values())

    def summary(self) -> str:
        """One log line: totals, then per method (busiest first)."""
        methods = self.by_method()
        totals = Counter[str]()
        for counts in methods.values():
            totals.update(counts)
        forwarded = sum(totals[r] for r in REASONS)
        reasons = ", ".join(f"{r} {totals[r]}" for r in REASONS if totals[r])
        head = f"served {totals['served']}, forwarded {forwarded}"
        head += f" ({reasons})" if reasons else ""
        head += f", failed {totals['failed']}" if totals["failed"] else ""
        head += f", stale reloads {self.stale_reloads}" if self.stale_reloads else ""
        rows = sorted(methods.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
        detail = "; ".join(
            f"{m} " + " ".join(f"{k}={n}" for k, n in sorted(c.items())) for m, c in rows
        )
        return f"{head}{'; ' if detail else ''}{detail}"


def forward_reason(name: str) -> str:
    """Why a call the cache never answers is forwarded: ``unknown`` (not in the IDL),
    ``write`` (a write, or a lock or transaction call: both change HMS), else
    ``not_cached`` (a read or session call the cache does not serve)."""
    method = kind(name)
    if method is Kind.UNKNOWN:
        return "unknown"
    return "write" if method in (Kind.WRITE, Kind.LOCK) else "not_cached"


def answers_reason(exc: Forward) -> str:
    """``not_cached`` or ``cannot_evaluate`` for a :class:`Forward` from the answers
    (its ``reason`` attribute when it has one, else read from its message)."""
    reason = getattr(exc, "reason", None)
    if reason is not None:
        return str(reason)
    text = str(exc)
    cached = ("not loaded", "not in the cache", "not followed", "without its HMS struct")
    return "not_cached" if any(t in text for t in cached) else "cannot_evaluate"
