"""Progress of the background load: tables and partitions loaded of those known, rate, ETA.

:class:`LoadProgress` is fed the catalog's shape (:func:`catalogd.status.catalog_shape`)
by the daemon's main loop once a second; it logs a progress line every
``log_interval_s`` while tables are still placeholders, and its
:meth:`~LoadProgress.report` goes into the admin ``status`` answer (``loading``).

Partitions *known* come from ``count_partitions`` when the source can count
them cheaply (the SQL source: one ``count(*)`` on ``PARTITIONS``, asked at
most every ``log_interval_s`` while loading); through Thrift only the
partitions loaded so far are known, and the ETA is by tables.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from catalogd.status import CatalogShape

log = logging.getLogger(__name__)


class LoadProgress:
    """Tracks the background load. Thread-safe (``observe`` on one thread, ``report`` anywhere).

    Args:
        count_partitions: the metastore's partition count, or None when unknown;
            errors are logged, not raised.
        log_interval_s: seconds between progress lines (and partition counts).
    """

    def __init__(
        self,
        count_partitions: Callable[[], int | None] | None = None,
        *,
        log_interval_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._count = count_partitions
        self._interval = log_interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._started = clock()
        self._next_log = self._started + log_interval_s
        self._partitions_known: int | None = None
        self._report: dict[str, Any] = {"done": False}
        self._done = False

    def observe(self, shape: CatalogShape) -> None:
        """Update from the catalog's current shape; log a line when one is due."""
        if self._done:
            return
        now = self._clock()
        due = now >= self._next_log or shape.tables_not_loaded == 0
        if due and self._count is not None:
            try:
                self._partitions_known = self._count()
            except Exception as exc:  # noqa: BLE001 - progress must never stop the daemon
                log.warning("counting partitions for the progress report failed: %s", exc)
        report = _report(shape, self._partitions_known, now - self._started)
        with self._lock:
            self._report = report
        if shape.tables_not_loaded == 0:
            self._done = True
            log.info("loading done: %s", _line(report))
        elif due:
            self._next_log = now + self._interval
            log.info("loading: %s", _line(report))

    def report(self) -> dict[str, Any]:
        """The latest progress (JSON-ready): loaded/known tables and partitions, rate, ETA."""
        with self._lock:
            return dict(self._report)


def _report(shape: CatalogShape, partitions_known: int | None, elapsed: float) -> dict[str, Any]:
    tables_known = shape.tables_loaded + shape.tables_not_loaded
    partitions = shape.objects_by_type.get("HDFS_PARTITION", 0)
    elapsed = max(elapsed, 1e-6)
    table_rate = shape.tables_loaded / elapsed
    partition_rate = partitions / elapsed
    eta: float | None
    if shape.tables_not_loaded == 0:
        eta = 0.0
    elif partitions_known and partition_rate > 0:
        eta = max(0.0, partitions_known - partitions) / partition_rate
    elif table_rate > 0:
        eta = shape.tables_not_loaded / table_rate
    else:
        eta = None
    return {
        "done": shape.tables_not_loaded == 0,
        "tables_loaded": shape.tables_loaded,
        "tables_known": tables_known,
        "partitions_loaded": partitions,
        "partitions_known": partitions_known,
        "tables_per_s": round(table_rate, 1),
        "partitions_per_s": round(partition_rate, 1),
        "elapsed_s": round(elapsed, 1),
        "eta_s": round(eta, 1) if eta is not None else None,
    }


def _line(r: dict[str, Any]) -> str:
    known = r["partitions_known"]
    partitions = f"{r['partitions_loaded']:,}" + (f"/{known:,}" if known is not None else "")
    eta = f", ETA {r['eta_s']:.0f}s" if r["eta_s"] else ""
    return (
        f"{r['tables_loaded']:,}/{r['tables_known']:,} tables, {partitions} partitions "
        f"in {r['elapsed_s']:.1f}s ({r['partitions_per_s']:,.0f} partitions/s){eta}"
    )
