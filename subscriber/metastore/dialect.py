"""Whether the upstream HMS reads catalog-qualified database names (probed once).

A Hive 3/4 client sends ``@hive#db`` for database ``db`` (:mod:`subscriber.metastore.catalogs`).
HMS 3.1 and later read the marker; HMS 2.3 takes the whole string for a database's
name and answers "not found". The endpoint answers such a call from the cache only
when the HMS it stands in for reads the marker, so :class:`Dialect` asks once, in the
background: ``get_database("@hive#default")`` (every HMS has ``default``) succeeds on
HMS 3.1+ and raises ``NoSuchObjectException`` on 2.3. Until it knows (HMS down, or the
probe not answered yet), calls with qualified names are forwarded: always correct.

The same thread then asks whether the HMS has Hive 4's request calls:
``get_database_req`` of ``hive.default`` succeeds on HMS 4.0+ and is an unknown method
(``TApplicationException``) on 2.3 and 3.1 (``serves_requests``, told to
``on_known``). A cached answer to a call the upstream HMS lacks would be wrong, so
those calls are answered only once this is True.
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
# (fact, method, args, what the log says when False/True), asked in this order.
_PROBES = (
    (
        "reads_catalogs",
        "get_database",
        _SERVICE.get_database_args(name="@hive#default"),
        (
            "does not read (HMS 2.x) catalog-qualified database names",
            "reads catalog-qualified database names",
        ),
    ),
    (
        "serves_requests",
        "get_database_req",
        _SERVICE.get_database_req_args(
            request=idl.hive_metastore.GetDatabaseRequest(name="default", catalogName="hive")
        ),
        ("lacks (HMS 2.x/3.x) Hive 4's request calls", "has Hive 4's request calls"),
    ),
)


class Dialect:
    """See the module docstring. ``reads_catalogs`` and ``serves_requests`` are None
    until known; ``on_known(fact, value)`` is called once with each fact's name
    (``"reads_catalogs"``, ``"serves_requests"``) and value, from the probe's thread."""

    def __init__(
        self,
        upstream: str,
        on_known: Callable[[str, bool], None] = lambda fact, known: None,
        retry_s: float = 5.0,
    ) -> None:
        self.reads_catalogs: bool | None = None
        self.serves_requests: bool | None = None
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
        for seq, (fact, method, args, what) in enumerate(_PROBES, 1):
            message = framing.header_bytes(method, framing.CALL, seq) + codec.encode(args)
            known = self._ask(message)
            if known is None:
                return  # closed first
            setattr(self, fact, known)
            self._on_known(fact, known)
            log.info("HMS endpoint: the HMS at %s %s", self._uri, what[known])

    def _ask(self, message: bytes) -> bool | None:
        """Whether HMS answered ``message`` with success (None: stopped first)."""
        while not self._stop.is_set():
            upstream = Upstream(self._uri, connect_timeout_s=5.0, call_timeout_s=30.0)
            try:
                reply = upstream.call(message)
            except MetastoreUnavailableError:
                self._stop.wait(self._retry_s)
                continue
            finally:
                upstream.close()
            return reply is not None and replies.succeeded(reply)
        return None
