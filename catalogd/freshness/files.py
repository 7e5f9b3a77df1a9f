"""Files as a freshness signal: notice files added to or removed from a partition.

Spark's ``INSERT INTO`` an existing partition, or a plain file copy, changes
nothing in HMS, so neither events nor HMS polling can see it. For tables that
carry file metadata (:mod:`catalogd.files`), :class:`FileWatcher` lists
partition directories every ``interval_s`` seconds (with the configured
backend, :class:`~catalogd.files.lister.Lister`: a thread pool for local paths,
Spark for other schemes or above ``files.spark_listing_threshold`` files) and
compares each listing (path, length, modification time of every file) with the
file list the catalog publishes; a partition that differs is refreshed
(:meth:`~catalogd.writes.operations.Operations.refresh_partitions`, which
lists it again and publishes its new file list and byte totals).

Cost bound: at most ``max_listings`` directory listings per interval, taken
round-robin over every watched partition, so a change is seen within
``ceil(partitions / max_listings)`` intervals (one interval when the budget
covers them all; the default, 1,000 listings, covers 1,000 partitions).
One thread, ``catalogd-files``; ``run_once`` is the cycle (tests call it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from catalogd.writes.operations import Operations
from subscriber.protocol import codec
from subscriber.protocol.errors import CatalogError
from subscriber.protocol.files import FileInfo, partition_files
from subscriber.protocol.keys import PARTITION_PREFIX

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Target:
    db: str
    table: str
    partition: str | None  # None: an unpartitioned table (its files are on the header)
    location: str
    published: tuple[FileInfo, ...]


class FileWatcher:
    """Lists watched partitions within a per-interval budget; refreshes changed ones.

    Args:
        ops: the catalog operations (reads and refreshes go through them).
        interval_s: seconds between cycles.
        max_listings: directory listings per cycle (the budget).
    """

    def __init__(
        self,
        ops: Operations,
        *,
        interval_s: float = 5.0,
        max_listings: int = 1000,
        wait: Callable[[threading.Event, float], bool] | None = None,
    ) -> None:
        self.ops = ops
        self.interval_s = interval_s
        self.max_listings = max(1, max_listings)
        self._cursor = 0
        self._stop = threading.Event()
        self._wait = wait or (lambda event, seconds: event.wait(seconds))
        self._thread = threading.Thread(target=self._run, name="catalogd-files", daemon=True)

    def start(self) -> FileWatcher:
        self._thread.start()
        return self

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread (idempotent); waits up to ``timeout`` for it."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._wait(self._stop, self.interval_s):
            self.run_once()

    def _targets(self) -> list[_Target]:
        targets = []
        for db in sorted(self.ops.databases()):
            for table in sorted(self.ops.table_names(db)):
                if not self.ops.files.wants(db, table):
                    continue
                for key, payload in sorted(self.ops.table_payloads(db, table).items()):
                    target = _target(db, table, key, payload)
                    if target is not None:
                        targets.append(target)
        return targets

    def run_once(self) -> int:
        """One cycle: list up to the budget, refresh what changed. Returns the
        partitions refreshed; never raises (errors are logged)."""
        if not self.ops.files.enabled:
            return 0
        try:
            targets = self._targets()
            if not targets:
                return 0
            start = self._cursor % len(targets)
            batch = (targets[start:] + targets[:start])[: self.max_listings]
            self._cursor = start + len(batch)
            listed = self.ops.files.list_files(
                [t.location for t in batch],
                expected_files=sum(max(1, len(t.published)) for t in batch),
            )
            changed: dict[tuple[str, str], list[str | None]] = {}
            for target, files in zip(batch, listed, strict=True):
                if files is None:
                    continue
                current = tuple(sorted(files, key=lambda f: f.relative_path))
                if current != target.published:
                    changed.setdefault((target.db, target.table), []).append(target.partition)
            for (db, table), names in changed.items():
                parts = [n for n in names if n is not None]
                if parts:
                    self.ops.refresh_partitions(db, table, parts)
                if len(parts) < len(names):
                    self.ops.load_table(db, table)
                log.info("files changed in %d partition(s) of %s.%s", len(names), db, table)
            return sum(len(n) for n in changed.values())
        except CatalogError as exc:
            log.warning("file watch cycle failed: %s", exc)
            return 0


def _target(db: str, table: str, key: str, payload: bytes) -> _Target | None:
    obj = codec.decode_object(payload)
    if key.startswith(PARTITION_PREFIX):
        part: Any = obj.hdfs_partition
        files = partition_files(part)
        if files is None or part.location is None:
            return None  # not listed (yet): a load lists it
        return _Target(db, table, part.partition_name, part.location.suffix, tuple(files))
    ttable = getattr(obj, "table", None)
    if ttable is None or ttable.hdfs_table is None or ttable.clustering_columns:
        return None
    files = partition_files(ttable.hdfs_table.prototype_partition)
    if files is None:
        return None
    return _Target(db, table, None, ttable.hdfs_table.hdfsBaseDir, tuple(files))
