"""Which backend lists a set of partition directories: the thread pool or Spark.

:class:`Lister` has the signature of every lister here (locations in, one file
list or None per location out, in order) and picks, per call:

* local directories (``file:``, plain paths) go to the thread pool
  (:func:`~catalogd.files.listing.list_locations`) unless the files the caller
  expects exceed ``spark_threshold`` (``files.spark_listing_threshold``), when
  all the directories of the call go to a Spark job;
* other schemes (``hdfs:``, ``s3a:``...) always go to Spark
  (:class:`~catalogd.files.spark_listing.SparkLister`): serially in the
  driver's JVM for up to :data:`REMOTE_JOB_ABOVE` directories below the
  threshold, else a Spark job (Spark's own rule for remote listings: its
  ``parallelPartitionDiscovery.threshold`` is 32 paths).

Measured here (``bench/listing_bench.py``, local disk): the thread pool is faster
at every size tried, so the default threshold (1,000,000 files) keeps local
listings off Spark; a Spark job pays off where listing is remote and slow
(object stores, a busy NameNode) and a cluster lists in parallel.

Without PySpark, directories that need Spark stay unlisted (None: published
without file metadata) and the reason is logged once, as an error; local ones
are still listed by the thread pool.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from catalogd.files.listing import DEFAULT_THREADS, list_locations, local_path
from catalogd.files.spark_listing import SparkLister
from subscriber.protocol.errors import UnavailableError
from subscriber.protocol.files import FileInfo

log = logging.getLogger(__name__)

DEFAULT_SPARK_THRESHOLD = 1_000_000
REMOTE_JOB_ABOVE = 32  # directories: more of them on hdfs:/s3a: are listed by a Spark job


@dataclass
class ListerStats:
    """Directories listed by each backend, and listings Spark could not do."""

    by_threads: int = 0
    by_spark: int = 0
    spark_failures: int = 0


class Lister:
    """Lists partition directories with the thread pool or Spark (see the module).

    Thread-safe. ``spark`` is the Spark backend (default: one that starts its
    own session on first use); :meth:`close` stops it.
    """

    def __init__(
        self,
        *,
        threads: int = DEFAULT_THREADS,
        spark_threshold: int = DEFAULT_SPARK_THRESHOLD,
        spark: SparkLister | None = None,
    ) -> None:
        self.threads = threads
        self.spark_threshold = spark_threshold
        self.spark = spark if spark is not None else SparkLister()
        self.stats = ListerStats()
        self._reported: set[str] = set()
        self._lock = threading.Lock()

    def __call__(
        self, locations: Sequence[str], *, expected_files: int | None = None
    ) -> list[list[FileInfo] | None]:
        """The visible files of each location, in order (None: could not be listed).

        ``expected_files``: how many files the caller expects in all (the last
        listing, HMS's ``numFiles``); None counts one per directory. Blocks for
        the listing.
        """
        expected = len(locations) if expected_files is None else expected_files
        big = expected > self.spark_threshold
        remote = [loc for loc in locations if local_path(loc) is None]
        to_spark = list(locations) if big else remote
        found: dict[str, list[FileInfo] | None] = {}
        if to_spark:
            distributed = big or len(to_spark) > REMOTE_JOB_ABOVE
            found.update(self._by_spark(to_spark, distributed=distributed))
        local = [loc for loc in locations if loc not in found and local_path(loc) is not None]
        if local:
            found.update(zip(local, list_locations(local, threads=self.threads), strict=True))
            with self._lock:
                self.stats.by_threads += len(local)
        return [found.get(loc) for loc in locations]

    def _by_spark(self, locations: list[str], *, distributed: bool) -> dict[str, list[FileInfo]]:
        """Spark's listing of ``locations``; empty (the caller falls back) when
        Spark is unavailable, which is logged once per reason."""
        try:
            listed = self.spark(locations, distributed=distributed)
        except UnavailableError as exc:
            with self._lock:
                self.stats.spark_failures += 1
                first = str(exc) not in self._reported
                self._reported.add(str(exc))
            if first:
                log.error("file listing: %s", exc)
            return {}
        with self._lock:
            self.stats.by_spark += len(locations)
        return dict(zip(locations, listed, strict=True))

    def close(self) -> None:
        """Stop the Spark session this lister started, if any (idempotent)."""
        self.spark.close()
