"""Which tables carry file metadata, and attaching it to freshly loaded objects.

A table opts in through the configuration (``files.tables``: database names or
``db.table`` names) or at run time (``catalogd admin refresh DB.TABLE --files``,
kept until restart). :meth:`FileMetadata.attach` runs in the loading thread
(refresh, change detection, the background loader: every table load goes
through :class:`~catalogd.freshness.operations.Operations`) and lists every
partition of an opted-in table in parallel (:mod:`catalogd.files.listing`).

Each listed partition gets ``file_desc`` (one ``THdfsFileDesc`` per file,
sorted by path, :mod:`subscriber.protocol.files` encoding) and
``total_file_size_bytes``, and its ``stats.total_file_bytes`` is the listed
total (HMS's ``totalSize`` does not change when files are copied in behind its
back). An unpartitioned table's files go on its header's
``hdfs_table.prototype_partition`` (it has no partition object).
Thread-safe: the opt-in sets are replaced whole, never mutated.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import idl
from catalogd.files.listing import DEFAULT_THREADS, list_locations
from subscriber.protocol.files import FileInfo, file_descs

T = idl.catalog_objects.TCatalogObjectType


class FileMetadata:
    """The opt-in policy and the attaching step. Cheap when nothing opted in."""

    def __init__(self, tables: Iterable[str] = (), *, threads: int = DEFAULT_THREADS) -> None:
        self.threads = threads
        self._names: frozenset[str] = frozenset(n.lower() for n in tables)

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

        Blocks for the listing (local paths only; others stay without files).
        """
        if not self._names:
            return 0
        targets: list[Any] = []
        locations: list[str] = []
        for obj in objects.values():
            part = getattr(obj, "hdfs_partition", None)
            if part is not None and self.wants(part.db_name or "", part.tbl_name or ""):
                targets.append(part)
                locations.append(part.location.suffix if part.location else "")
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
        if not targets:
            return 0
        listed = list_locations(locations, threads=self.threads)
        count = 0
        for part, files in zip(targets, listed, strict=True):
            if files is not None:
                set_files(part, files)
                count += len(files)
        return count


def set_files(part: Any, files: list[FileInfo]) -> None:
    """Put ``files`` on one ``THdfsPartition`` (file list, byte totals)."""
    total = sum(f.length for f in files)
    part.file_desc = file_descs(files)
    part.total_file_size_bytes = total
    if part.stats is not None:
        part.stats.total_file_bytes = total
