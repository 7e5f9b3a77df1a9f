"""Which tables carry file metadata, and attaching it to freshly loaded objects.

A table opts in through the configuration (``files.tables``: database names or
``db.table`` names) or at run time (``catalogd admin refresh DB.TABLE --files``,
kept until restart). :meth:`FileMetadata.attach` runs in the loading thread
(refresh, change detection, the background loader: every table load goes
through :class:`~catalogd.writes.operations.Operations`) and lists every
partition of an opted-in table in parallel, with whichever backend the
:class:`~catalogd.files.lister.Lister` picks (a thread pool for local paths, a
Spark job for other schemes and for listings expected above
``files.spark_listing_threshold`` files).

Each listed partition gets ``file_desc`` (one ``THdfsFileDesc`` per file,
sorted by path, :mod:`subscriber.protocol.files` encoding) and
``total_file_size_bytes``, and its ``stats.total_file_bytes`` is the listed
total (HMS's ``totalSize`` does not change when files are copied in behind its
back). An unpartitioned table's files go on its header's
``hdfs_table.prototype_partition`` (it has no partition object).
Thread-safe: the opt-in sets are replaced whole, never mutated.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import idl
from catalogd.files.lister import DEFAULT_SPARK_THRESHOLD, Lister
from catalogd.files.listing import DEFAULT_THREADS
from subscriber.protocol.files import FileInfo, file_descs

T = idl.catalog_objects.TCatalogObjectType


class FileMetadata:
    """The opt-in policy and the attaching step. Cheap when nothing opted in."""

    def __init__(
        self,
        tables: Iterable[str] = (),
        *,
        threads: int = DEFAULT_THREADS,
        spark_threshold: int = DEFAULT_SPARK_THRESHOLD,
        lister: Lister | None = None,
    ) -> None:
        self.threads = threads
        self.lister = lister or Lister(threads=threads, spark_threshold=spark_threshold)
        self._names: frozenset[str] = frozenset(n.lower() for n in tables)

    def list_files(
        self, locations: Sequence[str], *, expected_files: int | None = None
    ) -> list[list[FileInfo] | None]:
        """List ``locations`` with the configured backend (see :class:`Lister`)."""
        return self.lister(locations, expected_files=expected_files)

    def close(self) -> None:
        """Stop the listing's Spark session, if one was started (idempotent)."""
        self.lister.close()

    @property
    def enabled(self) -> bool:
        """Whether any table or database opted in."""
        return bool(self._names)

    def opt_in(self, db: str, table: str) -> None:
        """Carry file metadata for ``db.table`` from its next load on."""
        self._names = self._names | {f"{db.lower()}.{table.lower()}"}

    def wants(self, db: str, table: str) -> bool:
        """Whether ``db.table`` (or all of ``db``) opted in."""
        names = self._names
        return bool(names) and (db.lower() in names or f"{db.lower()}.{table.lower()}" in names)

    def attach(self, objects: dict[str, Any]) -> int:
        """List and attach the files of every opted-in partition in ``objects``
        (decoded catalog objects, changed in place). Returns the files listed.

        Blocks for the listing (partitions that cannot be listed, e.g. ``hdfs:``
        without PySpark, stay without files).
        """
        if not self._names:
            return 0
        targets: list[Any] = []
        locations: list[str] = []
        expected = 0
        for obj in objects.values():
            part = getattr(obj, "hdfs_partition", None)
            if part is not None and self.wants(part.db_name or "", part.tbl_name or ""):
                targets.append(part)
                locations.append(part.location.suffix if part.location else "")
                expected += _expected_files(part.hms_parameters)
                continue
            table = getattr(obj, "table", None)
            if (
                obj.type == T.TABLE
                and table is not None
                and table.hdfs_table is not None
                and not table.clustering_columns
                and self.wants(table.db_name, table.tbl_name)
            ):
                targets.append(table.hdfs_table.prototype_partition)
                locations.append(table.hdfs_table.hdfsBaseDir)
                expected += _expected_files(getattr(table.metastore_table, "parameters", None))
        if not targets:
            return 0
        listed = self.list_files(locations, expected_files=expected)
        count = 0
        for part, files in zip(targets, listed, strict=True):
            if files is not None:
                set_files(part, files)
                count += len(files)
        return count


def _expected_files(params: dict[str, str] | None) -> int:
    """HMS's ``numFiles`` of a partition or table (at least 1: a directory)."""
    value = (params or {}).get("numFiles", "")
    return max(1, int(value)) if value.isdigit() else 1


def set_files(part: Any, files: list[FileInfo]) -> None:
    """Put ``files`` on one ``THdfsPartition`` (file list, byte totals)."""
    total = sum(f.length for f in files)
    part.file_desc = file_descs(files)
    part.total_file_size_bytes = total
    if part.stats is not None:
        part.stats.total_file_bytes = total
