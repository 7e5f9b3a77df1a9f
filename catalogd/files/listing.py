"""Listing local partition directories on a thread pool, into :class:`FileInfo` values.

Local paths (``file:`` URIs and plain paths) are listed with ``os.scandir`` on a
thread pool (the GIL is released during the system calls, so listings of many
directories overlap). Other schemes (``hdfs:``, ``s3a:``...) need a Hadoop
client: :func:`list_locations` reports them as unlisted (None), and
:class:`~catalogd.files.lister.Lister` hands them to Spark
(:mod:`catalogd.files.spark_listing`).

Which files count (:func:`visible`), the same for every lister: names starting
with ``_`` or ``.`` (``_SUCCESS``, ``.crc`` files, staging directories) are
skipped at every level, as are names ending ``._COPYING_`` (a copy in progress),
as Spark's and Hive's file listings do. A missing directory is an empty partition.

Locations are read as Hadoop reads them (``org.apache.hadoop.fs.Path``): the
text after ``file:`` and an optional ``//authority`` is the path, taken
literally — ``%2F`` in a partition directory's name (Hive's escape for ``/``
in a value) is three characters of the name, not a slash.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from subscriber.protocol.files import FileInfo

DEFAULT_THREADS = 8
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def split_location(location: str) -> tuple[str, str, str]:
    """``(scheme, authority, path)`` of a location, split as Hadoop's ``Path`` does
    (no query or fragment: ``?`` and ``#`` belong to the path)."""
    scheme = ""
    rest = location
    match = _SCHEME.match(location)
    if match:
        scheme, rest = match.group()[:-1].lower(), location[match.end() :]
    authority = ""
    if rest.startswith("//"):
        end = rest.find("/", 2)
        authority, rest = (rest[2:end], rest[end:]) if end >= 0 else (rest[2:], "/")
    return scheme, authority, rest


def local_path(location: str) -> str | None:
    """The local filesystem path of ``location``, or None when it is not local."""
    scheme, authority, path = split_location(location)
    if scheme in ("", "file") and authority in ("", "localhost") and path.startswith("/"):
        return path
    return None


def visible(relative_path: str) -> bool:
    """Whether a file at ``relative_path`` (below a partition directory) is data."""
    return not relative_path.endswith("._COPYING_") and not any(
        part.startswith(("_", ".")) for part in relative_path.split("/")
    )


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
            if not visible(rel):
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
