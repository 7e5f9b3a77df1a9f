"""One metastore source per thread: the write path reads HMS in its callers' threads.

A source (a Thrift client, an SQL connection) is not shared between threads, so
:class:`ThreadSources` makes one per thread on first use and remembers them all,
to close them together.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from catalogd.sources import MetastoreSource

SourceFactory = Callable[[], MetastoreSource]


class ThreadSources:
    """Per-thread metastore sources made by ``factory``. Thread-safe."""

    def __init__(self, factory: SourceFactory) -> None:
        self._factory = factory
        self._local = threading.local()
        self._made: list[MetastoreSource] = []
        self._lock = threading.Lock()

    def get(self) -> MetastoreSource:
        """This thread's source (made on first use)."""
        source: MetastoreSource | None = getattr(self._local, "source", None)
        if source is None:
            source = self._factory()
            self._local.source = source
            with self._lock:
                self._made.append(source)
        return source

    def close(self) -> None:
        """Close every source made so far (sources made later are new ones)."""
        with self._lock:
            for source in self._made:
                source.close()
            self._made.clear()
