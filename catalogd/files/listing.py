"""Listing partition directories, in parallel, into :class:`FileInfo` values.

Local paths (``file:`` URIs and plain paths) are listed with ``os.scandir`` on a
thread pool (the GIL is released during the system calls, so listings of many
directories overlap). Other schemes (``hdfs:``, ``s3a:``...) need a Hadoop
client, which catalogd does not embed: :func:`list_locations` reports them as
unlisted (None), and the partition is published without file metadata.

Hidden entries (names starting with ``_`` or ``.``: ``_SUCCESS``, ``.crc``
files, staging directories) are skipped at every level, as Spark's and Hive's
file listings do. A missing directory is an empty partition.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote, urlsplit

from subscriber.protocol.files import FileInfo

DEFAULT_THREADS = 8


def local_path(location: str) -> str | None:
    """The local filesystem path of ``location``, or None when it is not local."""
    if location.startswith("/"):
        return location
    parts = urlsplit(location)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        return unquote(parts.path)
    return None


def list_directory(path: str) -> list[FileInfo]:
    """The visible files under ``path`` (recursively), paths relative to it."""
    out: list[FileInfo] = []
    stack = [("", path)]
    while stack:
        prefix, directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if entry.name.startswith(("_", ".")):
                continue
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=True):
                stack.append((rel + "/", entry.path))
                continue
            try:
                st = entry.stat()
            except FileNotFoundError:
                continue  # removed while listing
            out.append(FileInfo(rel, st.st_size, st.st_mtime_ns // 1_000_000))
    return out


def list_locations(
    locations: Sequence[str], *, threads: int = DEFAULT_THREADS
) -> list[list[FileInfo] | None]:
    """The files of each location (None where it is not a local path), in order.

    Blocks until every listing is done; uses up to ``threads`` threads.
    """
    paths = [local_path(loc) for loc in locations]
    todo = [p for p in paths if p is not None]
    if len(todo) <= 1 or threads <= 1:
        listed = [list_directory(p) for p in todo]
    else:
        with ThreadPoolExecutor(min(threads, len(todo)), thread_name_prefix="list-files") as pool:
            listed = list(pool.map(list_directory, todo))
    found = iter(listed)
    return [next(found) if p is not None else None for p in paths]
