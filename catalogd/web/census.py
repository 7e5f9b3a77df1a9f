"""Top tables by partitions and by bytes in the catalog, counted in the background.

No page may scan the catalog, so :class:`Census` walks it on a thread of its own,
one small job at a time through ``read`` (the server thread's bounded reads): one
job per database (names, partition counts, header sizes), then the partitions'
payload sizes in chunks of ``chunk`` keys. The result is swapped in whole (an
immutable :class:`Counted`), so pages read it without a lock. Between jobs it sleeps
``pause_s`` so the server thread never sees a burst from it. The next sweep waits
ten times as long as the last one took, at least ``interval_s``, and is skipped
while the catalog's version has not moved: its share of the server thread stays
small whatever the catalog's size, and a small catalog's page is fresh within
seconds of a load.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from catalogd.core.catalog import Catalog
from catalogd.web import reads
from catalogd.web.views import Read
from subscriber.protocol.keys import object_type_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Counted:
    """One sweep's result: per table ``(db, table, partitions, bytes)``, largest first."""

    at: float = 0.0
    by_partitions: tuple[tuple[str, str, int, int], ...] = ()
    by_bytes: tuple[tuple[str, str, int, int], ...] = ()
    tables: int = 0
    catalog_bytes: int = 0
    seconds: float = 0.0
    done: bool = False


def heads(catalog: Catalog, db: str) -> list[tuple[str, int, int]]:
    """``(table, partitions, header bytes)`` of every table and view of ``db`` (server thread)."""
    out = []
    for key in catalog.head_keys(db):
        if object_type_of(key) in ("TABLE", "VIEW"):
            entry = catalog.get(key)
            size = len(entry.payload) if entry is not None and entry.payload else 0
            name = key.partition(".")[2]
            out.append((name, len(catalog.partition_key_set(db, name)), size))
    return out


def _version(catalog: Catalog) -> int:
    return catalog.version


def database_names(catalog: Catalog) -> list[str]:
    return [key.partition(":")[2] for key in catalog.database_keys()]


class Census:
    """Counts tables in the background (see the module docstring). ``latest`` is safe
    to read from any thread."""

    def __init__(
        self,
        read: Read[Any],
        *,
        top: int = 20,
        interval_s: float = 2.0,
        chunk: int = 20_000,
        pause_s: float = 0.002,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read, self._top, self._interval, self._chunk = read, top, interval_s, chunk
        self._pause = pause_s
        self._clock = clock
        self._time = time.time
        self.latest = Counted()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="catalogd-web-census", daemon=True)

    def start(self) -> Census:
        self._thread.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        """Stop after the current job. Idempotent."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        counted_at = -1
        while not self._stop.is_set():
            wait = self._interval
            try:
                version = self._read(_version)
                if version != counted_at:
                    counted_at = version
                    wait = max(wait, 10 * self.sweep().seconds)
            except Exception as exc:  # noqa: BLE001 - the census must never stop the daemon
                log.warning("web census sweep failed: %s", exc)
            self._stop.wait(wait)

    def sweep(self) -> Counted:
        """Count every table once (blocking, many small jobs); returns and keeps the result."""
        started = self._clock()
        counted: list[tuple[str, str, int, int]] = []
        for db in self._read(database_names):
            if self._stop.is_set():
                return self.latest
            for name, partitions, size in self._read(functools.partial(heads, db=db)):
                for offset in range(0, partitions, self._chunk):
                    if self._stop.wait(self._pause):
                        return self.latest
                    _, chunk_size = self._read(
                        functools.partial(
                            reads.table_sizes,
                            db=db,
                            name=name,
                            offset=offset,
                            limit=self._chunk,
                        )
                    )
                    size += chunk_size
                counted.append((db, name, partitions, size))
        result = Counted(
            at=self._time(),
            by_partitions=tuple(sorted(counted, key=lambda r: -r[2])[: self._top]),
            by_bytes=tuple(sorted(counted, key=lambda r: -r[3])[: self._top]),
            tables=len(counted),
            catalog_bytes=sum(r[3] for r in counted),
            seconds=round(self._clock() - started, 3),
            done=True,
        )
        self.latest = result
        return result
