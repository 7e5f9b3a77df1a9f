"""Listing partition directories with Spark, through Hadoop's ``FileSystem``.

For directories catalogd cannot list itself (``hdfs:``, ``s3a:``, ``abfs:``...:
whatever the Spark session's Hadoop configuration can read) and for listings
big enough to pay for a Spark job. :class:`SparkLister` calls Spark's own bulk
lister, ``org.apache.spark.util.HadoopFSUtils.parallelListLeafFiles`` (a
``@DeveloperApi``; what ``InMemoryFileIndex`` lists tables with), through the
driver's JVM:

* ``distributed=True``: a Spark job of ``min(directories, max_tasks)`` tasks;
  each task lists its share of the directories recursively with
  ``FileSystem.listStatus`` on an executor and sends the statuses back;
* ``distributed=False``: the same listing, serially in the driver's JVM (no
  job: cheaper for a few directories).

A PySpark task cannot do this itself: Python workers have no JVM to call.

Back to Python in bulk: a py4j call costs ~70 µs here, so reading each
``FileStatus`` through its getters (~6 calls a file) would cost ~0.4 ms a file,
more than listing it. Instead the driver's JVM flattens the result (``unzip`` and
``flatten`` with Scala's identity evidence ``Predef.$conforms``), takes every
status's path, length and modification time with commons-collections'
``InvokerTransformer`` (Spark ships commons-collections4) and joins each into
one string: a dozen py4j calls per listing, whatever its size. Only those
three getters are called (``getPermission`` on a local file would start a
process per file).

Files are matched to the directory they were listed under by order (Spark keeps
the input order) and path; directories nested in one another are listed in
separate rounds. Spark's hidden-file rule keeps a few names the thread pool
skips (``_metadata``, ``_k=v`` directories): results are filtered with
:func:`~catalogd.files.listing.visible`, so both listers return the same files.

PySpark is imported only when a listing needs it; without it,
:class:`~subscriber.protocol.errors.UnavailableError` says so.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from catalogd.files.listing import split_location, visible
from subscriber.protocol.errors import UnavailableError
from subscriber.protocol.files import FileInfo

_SEP = "\0"  # never in a path
_SLASHES = re.compile("/+")
_NO_PYSPARK = (
    "listing {what} directories with Spark needs PySpark (pip install 'catalogd[spark]'), "
    "which is not installed; without it catalogd lists local (file:) directories only"
)


def listing_session() -> Any:
    """A Spark session for listing (no Hive support): ``spark.master`` from
    Spark's own configuration (``spark-defaults.conf``), else ``local[*]``;
    the Hadoop configuration (``HADOOP_CONF_DIR``, ``spark.hadoop.*``) decides
    what ``hdfs:``/``s3a:`` mean."""
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("catalogd-listing").config(
        "spark.ui.showConsoleProgress", "false"
    )
    if not SparkConf().contains("spark.master"):
        builder = builder.master("local[*]")
    return builder.getOrCreate()


class SparkLister:
    """Lists directories through Spark; thread-safe (jobs may run concurrently).

    Args:
        spark: a Spark session to use (the stats job passes its own); None
            starts ``session()`` on the first listing and stops it in :meth:`close`.
        session: makes that session (default :func:`listing_session`).
        max_tasks: tasks of a distributed listing at most (None: four per core
            of the session, ``defaultParallelism``).
    """

    def __init__(
        self,
        spark: Any = None,
        *,
        session: Callable[[], Any] = listing_session,
        max_tasks: int | None = None,
    ) -> None:
        self.max_tasks = max_tasks
        self._spark = spark
        self._owned = False
        self._session = session
        self._lock = threading.Lock()

    def session(self, what: str = "these") -> Any:
        """The Spark session, started now if needed. Raises UnavailableError
        without PySpark."""
        with self._lock:
            if self._spark is None:
                try:
                    import pyspark  # noqa: F401
                except ImportError as exc:
                    raise UnavailableError(_NO_PYSPARK.format(what=what)) from exc
                self._spark = self._session()
                self._owned = True
            return self._spark

    def close(self) -> None:
        """Stop the session if this lister started it (idempotent)."""
        with self._lock:
            spark, owned = self._spark, self._owned
            self._spark, self._owned = None, False
        if spark is not None and owned:
            spark.stop()

    def __call__(
        self, locations: Sequence[str], *, distributed: bool = True
    ) -> list[list[FileInfo]]:
        """The visible files under each location (recursively), in order; a
        missing directory is empty.

        Blocks for the listing. Raises UnavailableError without PySpark or when
        Spark cannot list (an unreachable file system, a permission error).
        """
        if not locations:
            return []
        roots = list(dict.fromkeys(locations))
        found: dict[str, list[FileInfo]] = {}
        for batch in _rounds(roots):
            found.update(self._list(batch, distributed))
        return [list(found[loc]) for loc in locations]

    def _list(self, roots: list[str], distributed: bool) -> dict[str, list[FileInfo]]:
        schemes = sorted({split_location(root)[0] or "file" for root in roots})
        spark = self.session(", ".join(f"{scheme}:" for scheme in schemes))
        from py4j.protocol import Py4JError
        from pyspark.errors import PySparkException

        try:
            paths, lengths, mtimes = _bulk_listing(spark, roots, distributed, self.max_tasks)
        except (Py4JError, PySparkException) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UnavailableError(
                f"Spark could not list {len(roots)} directories ({roots[0]}, ...): {first}"
            ) from exc
        return _assign(roots, paths, lengths, mtimes)


def _bulk_listing(
    spark: Any, roots: list[str], distributed: bool, max_tasks: int | None
) -> tuple[list[str], list[str], list[str]]:
    """Run Spark's listing; the files' paths, lengths and mtimes, flattened in
    the roots' order (three lists of strings of equal length)."""
    jvm = spark._jvm
    strings = jvm.org.apache.commons.lang3.StringUtils
    hadoop_paths = jvm.org.apache.hadoop.util.StringUtils.stringToPath(
        strings.splitByWholeSeparatorPreserveAllTokens(_SEP.join(roots), _SEP)
    )
    seq = jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(hadoop_paths)
    utils = jvm.org.apache.spark.util.HadoopFSUtils
    tasks = max_tasks or 4 * spark.sparkContext.defaultParallelism
    listed = utils.parallelListLeafFiles(
        spark._jsc.sc(),
        seq,
        spark._jsc.hadoopConfiguration(),
        None,  # no PathFilter
        True,  # ignoreMissingFiles: a missing partition directory is empty
        utils.defaultIgnoredPathSegmentRegexPattern(),
        True,  # ignoreLocality: no block locations
        0 if distributed else 2**31 - 1,  # parallelismThreshold: a job above it
        max(1, tasks),
    )
    identity = getattr(jvm.scala.Predef, "$conforms")()
    statuses = jvm.scala.jdk.javaapi.CollectionConverters.asJava(
        listed.unzip(identity)._2().flatten(identity)
    )
    collect = jvm.org.apache.commons.collections4.CollectionUtils.collect
    getter = jvm.org.apache.commons.collections4.functors.InvokerTransformer.invokerTransformer

    def column(method: str) -> list[str]:
        text = strings.join(collect(statuses, getter(method)), _SEP)
        return text.split(_SEP) if text else []

    return column("getPath"), column("getLen"), column("getModificationTime")


def _base(location: str) -> str:
    """The path part of a location as Hadoop normalizes it (no repeated or trailing ``/``)."""
    return _SLASHES.sub("/", split_location(location)[2]).rstrip("/")


def _rounds(roots: list[str]) -> Iterator[list[str]]:
    """``roots`` in rounds where no path is another's or inside another's, so
    each listed file belongs to exactly one root of its round."""
    pending = roots
    while pending:
        first: dict[str, str] = {}
        for root in pending:
            first.setdefault(_base(root), root)
        now: list[str] = []
        later: list[str] = []
        for root in pending:
            base = _base(root)
            parts = base.split("/")
            inside = any("/".join(parts[:i]) in first for i in range(len(parts)))
            (later if first[base] is not root or inside else now).append(root)
        yield now
        pending = later


def _assign(
    roots: list[str], paths: list[str], lengths: list[str], mtimes: list[str]
) -> dict[str, list[FileInfo]]:
    """Each root's visible files, from the flattened listing (in root order).

    Files are matched by their path part (the file system may qualify them with
    an authority the location left out); once one file of a root is matched, the
    text before its path part is reused, so most files cost one ``startswith``.
    """
    out: dict[str, list[FileInfo]] = {root: [] for root in roots}
    bases = [_base(root) for root in roots]
    i = 0
    prefix = None  # "scheme://authority/base/" of root i, as the listing spells it
    for path, length, mtime in zip(paths, lengths, mtimes, strict=True):
        if prefix is not None and path.startswith(prefix):
            relative = path[len(prefix) :]
        else:
            part = _SLASHES.sub("/", split_location(path)[2])
            while i < len(roots) and not (part == bases[i] or part.startswith(bases[i] + "/")):
                i += 1
            if i == len(roots):
                raise UnavailableError(f"Spark listed {path}, outside every directory asked for")
            relative = part[len(bases[i]) + 1 :]
            head = path[: len(path) - len(part)] if path.endswith(part) else None
            prefix = None if head is None else head + bases[i] + "/"
        if relative and visible(relative):  # "" when the location is a file itself
            out[roots[i]].append(FileInfo(relative, int(length), int(mtime)))
    return out
