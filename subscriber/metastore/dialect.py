"""Whether the upstream HMS reads catalog-qualified database names (probed once).

A Hive 3/4 client sends ``@hive#db`` for database ``db`` (:mod:`subscriber.metastore.catalogs`).
HMS 3.1 and later read the marker; HMS 2.3 takes the whole string for a database's
name and answers "not found". The endpoint answers such a call from the cache only
when the HMS it stands in for reads the marker, so :class:`Dialect` asks once, in the
background: ``get_database("@hive#default")`` (every HMS has ``default``) succeeds on
HMS 3.1+ and raises ``NoSuchObjectException`` on 2.3. Until it knows (HMS down, or the
probe not answered yet), calls with qualified names are forwarded: always correct.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import idl
from subscriber.metastore import framing, replies
from subscriber.metastore.upstream import Upstream
from subscriber.protocol import codec
from subscriber.protocol.errors import MetastoreUnavailableError

__all__ = ["Dialect"]

log = logging.getLogger(__name__)
_SERVICE = idl.hive_metastore.ThriftHiveMetastore
_PROBE = "get_database"


class Dialect:
    """See the module docstring. ``reads_catalogs`` is None until known."""

    def __init__(
        self,
        upstream: str,
        on_known: Callable[[bool], None] = lambda _: None,
        retry_s: float = 5.0,
    ) -> None:
        self.reads_catalogs: bool | None = None
        self._on_known = on_known
        self._uri = upstream
        self._retry_s = retry_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="catalogd-hms-dialect", daemon=True)

    def start(self) -> Dialect:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        args = _SERVICE.get_database_args(name="@hive#default")
        message = framing.header_bytes(_PROBE, framing.CALL, 1) + codec.encode(args)
        while not self._stop.is_set():
            upstream = Upstream(self._uri, connect_timeout_s=5.0, call_timeout_s=30.0)
            try:
                reply = upstream.call(message)
            except MetastoreUnavailableError:
                self._stop.wait(self._retry_s)
                continue
            finally:
                upstream.close()
            self.reads_catalogs = reply is not None and replies.succeeded(reply)
            self._on_known(self.reads_catalogs)
            log.info(
                "HMS endpoint: the HMS at %s %s catalog-qualified database names",
                self._uri,
                "reads" if self.reads_catalogs else "does not read (HMS 2.x)",
            )
            return
