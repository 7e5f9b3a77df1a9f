"""The HMS endpoint: a Thrift server speaking HMS that answers reads from the cache.

::

    with CatalogSubscriber("tcp://catalogd:26500") as sub, \\
            sub.metastore_endpoint(upstream="thrift://hms:9083") as ep:
        spark = SparkSession.builder.config("spark.hadoop.hive.metastore.uris", ep.uri) ...

Threads: ``catalogd-hms-endpoint`` accepts; each client connection gets a thread
(``catalogd-hms-conn-N``) owning the client socket and its upstream socket; one
probe (:mod:`~subscriber.metastore.dialect`) learns what HMS reads (``@hive#db``, Hive 4 calls).

Per call (binary protocol, unframed; see :mod:`subscriber.metastore.framing`):

* a read in :attr:`CacheAnswers.methods` is answered from the cache while the
  cache is current or behind by at most ``max_lag_s`` (else it is forwarded,
  counted as *forwarded_stale*); an answer that cannot be exact is forwarded;
* every read is forwarded while the connection holds an HMS lock or an open
  transaction (a :class:`~subscriber.metastore.session.Session` per connection
  follows them): a writer's read under its lock decides its commit;
* a forwarded ``get_table`` whose answer shows the cache behind HMS makes catalogd
  reload that table, which is pending until the cache shows that reload
  (:mod:`~subscriber.metastore.freshness`), as after a write;
* ``set_ugi`` is answered here (HMS echoes the groups) and replayed upstream;
  fb303's ``shutdown`` closes the upstream connection; ``get_config_value`` is
  forwarded once per argument set and remembered;
* everything else is forwarded byte for byte, whatever the method. After a
  write succeeds, its answer goes back at once; catalogd is asked to reload what
  it touched, and those objects are *pending*
  (:class:`~subscriber.metastore.pending.Pending`, shared by every connection):
  a read that could show one is forwarded (reason ``pending``) until the cache
  reaches the version catalogd answered that reload with (or ``write_wait_s``
  passes), so the same driver reads its own write. HMS unreachable: the write
  fails with a ``MetaException`` naming the endpoint and HMS's address.

Bytes that are no Thrift message close that connection only. Counters per
method and reason: :class:`~subscriber.metastore.counters.EndpointStats`.

Why one module of over 400 lines: the connection threads, forwarding and read-your-
writes marking share one connection lifecycle; answers, filters, framing and replies are
separate pure modules. The subscriber is reached only through :class:`CachedCatalog`.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from thriftpy2.thrift import TException

import idl
from subscriber.cache import CacheView
from subscriber.metastore import framing, freshness, replies
from subscriber.metastore.answers import CacheAnswers, Decode, Forward
from subscriber.metastore.counters import EndpointStats, answers_reason, forward_reason
from subscriber.metastore.dialect import Dialect
from subscriber.metastore.methods import is_write
from subscriber.metastore.readback import ReadBack
from subscriber.metastore.session import LOCK_METHODS, Session
from subscriber.metastore.upstream import Upstream, parse_uri
from subscriber.metastore.writes import resolve, touched
from subscriber.protocol.errors import (
    MetastoreUnavailableError,
    ProtocolError,
)

log = logging.getLogger(__name__)
hms = idl.hive_metastore
_SERVICE = hms.ThriftHiveMetastore


class CachedCatalog(Protocol):
    """What the endpoint uses of a :class:`~subscriber.api.CatalogSubscriber`: its
    public reads of the cache, and nothing else (so the endpoint does not import
    the subscriber's module, which creates endpoints).
    """

    @property
    def databases(self) -> tuple[str, ...] | None:
        """The databases followed (lower case); None: all."""

    @property
    def lag_seconds(self) -> float:
        """How far behind catalogd the cache is (inf before the first sync)."""

    @property
    def decoder(self) -> Decode:
        """Entry -> decoded catalog object (shared, read-only)."""

    def cache_view(self) -> CacheView:
        """The current immutable cache view."""

    def request_reload(
        self,
        db: str,
        table: str | None = None,
        on_loaded: Callable[[int | None], None] | None = None,
    ) -> None:
        """Ask catalogd to reload ``db.table`` (or ``db``) from HMS now; ``on_loaded``
        gets the version that shows it (None: no answer will come)."""


@dataclass(frozen=True, slots=True)
class EndpointConfig:
    """How the endpoint listens, forwards and decides.

    Attributes:
        upstream: ``thrift://host:port`` of the Hive Metastore.
        listen: ``host:port`` to bind (port 0: a free one).
        max_lag_s: serve reads from the cache while it is behind catalogd by at
            most this long (stale); beyond it, or before the first sync, forward.
        write_wait_s: how long, at most, the objects a write touched stay pending
            after its answer (reads that could show them forwarded to HMS) while
            the cache does not show the write yet; then they are served from the
            cache again, with a warning. The write's answer itself never waits.
        connect_timeout_s / call_timeout_s: for the upstream HMS.
        partial_timeout_s: a client that sent part of a message and nothing
            more for this long is disconnected.
        max_connections: client connections served at once (more are refused).
    """

    upstream: str
    listen: str = "127.0.0.1:0"
    max_lag_s: float = 30.0
    write_wait_s: float = 10.0
    connect_timeout_s: float = 5.0
    call_timeout_s: float = 600.0
    partial_timeout_s: float = 30.0
    max_connections: int = 256


class MetastoreEndpoint:
    """An HMS Thrift endpoint over a :class:`~subscriber.api.CatalogSubscriber` (any
    :class:`CachedCatalog`).

    Start with :meth:`start` (or ``with``); :attr:`uri` is what HMS clients use.
    """

    def __init__(self, subscriber: CachedCatalog, config: EndpointConfig) -> None:
        parse_uri(config.upstream)  # fail early on a malformed address
        self.config = config
        self.stats = EndpointStats()
        self._sub = subscriber
        databases = subscriber.databases
        self._answers = CacheAnswers(
            subscriber.decoder, None if databases is None else frozenset(databases)
        )
        self._config_memo: dict[bytes, bytes] = {}
        self._dialect = Dialect(  # facts: reads_catalogs, serves_requests
            config.upstream, lambda fact, known: setattr(self._answers, f"upstream_{fact}", known)
        )
        self._readback = ReadBack(
            config.write_wait_s, self.stats, databases, subscriber.request_reload
        )
        self._stop = threading.Event()
        self._listener: socket.socket | None = None
        self._accepter: threading.Thread | None = None
        self._clients: dict[int, socket.socket] = {}
        self._clients_lock = threading.Lock()
        self._ids = itertools.count(1)
        self.address: tuple[str, int] = ("", 0)

    @property
    def uri(self) -> str:
        """``thrift://host:port`` to give HMS clients (``hive.metastore.uris``)."""
        return f"thrift://{self.address[0]}:{self.address[1]}"

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> MetastoreEndpoint:
        """Bind and start accepting (idempotent). Raises OSError when the address is taken."""
        if self._listener is not None:
            return self
        host, _, port = self.config.listen.rpartition(":")
        listener = socket.create_server((host or "127.0.0.1", int(port or 0)), backlog=64)
        self._listener = listener
        self.address = listener.getsockname()[:2]
        self._accepter = threading.Thread(
            target=self._accept, name="catalogd-hms-endpoint", daemon=True
        )
        self._accepter.start()
        self._dialect.start()
        log.info("HMS endpoint on %s, forwarding to %s", self.uri, self.config.upstream)
        return self

    def close(self, timeout: float = 5.0) -> None:
        """Stop accepting, close every client connection, join (idempotent)."""
        self._stop.set()
        self._dialect.close()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        with self._clients_lock:
            clients = list(self._clients.values())
        for client in clients:
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)
        if self._accepter is not None and self._accepter is not threading.current_thread():
            self._accepter.join(timeout)

    def __enter__(self) -> MetastoreEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- threads ----------------------------------------------------------------------------

    def wait_settled(self, timeout: float) -> bool:
        """Block until no object a write touched is pending (reads are the cache's
        again, as far as writes go); False on timeout. For tests and benchmarks."""
        deadline = time.monotonic() + timeout
        while not self._readback.settled(self._sub.cache_view()):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)
        return True

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._clients_lock:
                full = len(self._clients) >= self.config.max_connections
            if full:
                log.warning("HMS endpoint: %d connections, refusing one", len(self._clients))
                client.close()
                continue
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            cid = next(self._ids)
            with self._clients_lock:
                self._clients[cid] = client
            self.stats.connections += 1
            threading.Thread(
                target=self._connection,
                args=(cid, client),
                name=f"catalogd-hms-conn-{cid}",
                daemon=True,
            ).start()

    def _connection(self, cid: int, client: socket.socket) -> None:
        upstream = Upstream(
            self.config.upstream,
            connect_timeout_s=self.config.connect_timeout_s,
            call_timeout_s=self.config.call_timeout_s,
        )
        session = Session()
        buf = bytearray()
        try:
            while not self._stop.is_set():
                end = framing.message_end(buf)
                if end is None:
                    client.settimeout(self.config.partial_timeout_s if buf else None)
                    chunk = client.recv(1 << 16)
                    if not chunk:
                        return
                    buf += chunk
                    _drain(client, buf)
                    continue
                message = bytes(buf[:end])
                del buf[:end]
                out = self._call(message, upstream, session)
                if out is not None:
                    client.sendall(out)
        except ProtocolError as exc:
            self.stats.garbage += 1
            log.info("HMS endpoint: closing connection %d: %s", cid, exc)
        except OSError as exc:  # reset, timeout mid-message, closed by close()
            log.debug("HMS endpoint: connection %d ended: %s", cid, exc)
        finally:
            upstream.close()
            with contextlib.suppress(OSError):
                client.close()
            with self._clients_lock:
                self._clients.pop(cid, None)

    # -- calls --------------------------------------------------------------------------------

    def _call(
        self, message: bytes, upstream: Upstream, session: Session | None = None
    ) -> bytes | None:
        """The reply to one call message (None for a oneway call); ``session``: what
        the calling connection holds (None: a connection of one call)."""
        session = session if session is not None else Session()
        header = framing.read_header(message)
        assert header is not None  # message_end saw a whole message
        if header.type not in (framing.CALL, framing.ONEWAY):
            raise ProtocolError(f"a client sent a message of type {header.type}")
        name, seqid = header.name, header.seqid
        body = message[header.body_start :]
        if name == "set_ugi":
            args = replies.decode_args(name, body)
            upstream.ugi_message = message
            groups = list(args.group_names or [])  # what HMS 2.3 answers (checked)
            self.stats.add("served", name)
            return replies.result(name, seqid, _SERVICE.set_ugi_result(success=groups))
        if name == "get_config_value":
            return self._config_value(message, header, upstream)
        if name == "shutdown":
            # fb303's "this client is done": HMS only frees the connection's state,
            # which closing the upstream connection does too. Not worth a connection.
            self.stats.add("served", name)
            upstream.close()
            return None if header.type == framing.ONEWAY else framing.reply(name, seqid, b"\x00")
        learn = None
        if name not in self._answers.methods:
            reason = forward_reason(name)
        elif session.holding:
            reason = "locked"
        elif self._sub.lag_seconds > self.config.max_lag_s:
            reason = "stale"
        else:
            args = replies.decode_args(name, body)
            view = self._sub.cache_view()  # one view: the pending check and the answer
            if self._readback.is_pending(view, name, args):
                return self._forward(message, header, upstream, session, "pending")
            try:
                result = self._answers.answer(view, name, args)
            except Forward as exc:
                log.debug("HMS endpoint: forwarding %s: %s", name, exc)
                reason, learn = answers_reason(exc), exc.learn
            except TException as exc:
                self.stats.add("served", name)
                return replies.exception(name, seqid, exc)
            except Exception:  # noqa: BLE001 - a bug here must not cost the answer
                log.exception("HMS endpoint: answering %s failed; forwarding it", name)
                reason = "cannot_evaluate"
            else:
                self.stats.add("served", name)
                return framing.reply(name, seqid, result)
        return self._forward(message, header, upstream, session, reason, learn)

    def _forward(
        self,
        message: bytes,
        header: framing.Header,
        upstream: Upstream,
        session: Session,
        reason: str,
        learn: Callable[[str, bytes], None] | None = None,
    ) -> bytes | None:
        name = header.name
        write = is_write(name)
        view = self._sub.cache_view() if name in freshness.CHECKED else None
        before = self._sub.cache_view() if write else None
        try:
            reply = upstream.call(message, oneway=header.type == framing.ONEWAY)
        except MetastoreUnavailableError as exc:
            self.stats.add("failed", name)
            log.warning("HMS endpoint: %s failed: %s", name, exc)
            if name in LOCK_METHODS:
                session.observe(name, message[header.body_start :], None)
            if header.type == framing.ONEWAY:
                return None
            return replies.unavailable(name, header.seqid, f"catalogd HMS endpoint: {exc}")
        self.stats.forwarded(name, reason)
        if reply is not None and learn is not None:
            try:
                learn(name, reply)  # what the cache lacked to answer it (orders.py)
            except Exception:  # noqa: BLE001 - learning must not cost the answer
                log.exception("HMS endpoint: learning from %s's answer failed", name)
        if name in LOCK_METHODS:
            session.observe(name, message[header.body_start :], reply)
        if reply is not None and view is not None:
            self._catch_up(name, message[header.body_start :], reply, view)
        if reply is not None and before is not None and replies.succeeded(reply):
            targets = resolve(touched(name, message[header.body_start :]), before.by_database)
            if targets:
                self._readback.mark(name, targets, self._sub.cache_view())
        return reply

    def _config_value(self, message: bytes, header: framing.Header, upstream: Upstream) -> bytes:
        body = message[header.body_start :]
        known = self._config_memo.get(body)
        if known is not None:
            self.stats.add("served", header.name)
            return framing.reply(header.name, header.seqid, known)
        try:
            reply = upstream.call(message)
        except MetastoreUnavailableError:
            # HMS down and never asked: its default is the best answer there is.
            args = replies.decode_args(header.name, body)
            self.stats.add("served", header.name)
            return replies.result(
                header.name,
                header.seqid,
                _SERVICE.get_config_value_result(success=args.defaultValue),
            )
        assert reply is not None
        self.stats.add("forwarded", header.name)
        reply_header = framing.read_header(reply)
        if (
            reply_header is not None
            and reply_header.type == framing.REPLY
            and replies.succeeded(reply)
        ):
            self._config_memo[body] = reply[reply_header.body_start :]
        return reply

    def _catch_up(self, name: str, body: bytes, reply: bytes, view: CacheView) -> None:
        """A forwarded read showed HMS ahead of the cache: reload what differs and
        keep it pending, so this client's next cached read is not older than this
        one. A table already pending (its reload asked for) is left as it is."""
        if self._sub.lag_seconds > self.config.max_lag_s:
            return  # the cache is not serving reads now anyway
        try:
            args = replies.decode_args(name, body)
        except ProtocolError:
            return
        behind = tuple(freshness.behind(view, self._sub.decoder, name, args, reply))
        if behind:
            behind = self._readback.mark(name, behind, self._sub.cache_view(), stale=True)
        if behind:
            self.stats.stale_reloads += len(behind)
            log.info("HMS endpoint: %s showed %s newer in HMS; reloading", name, behind)


def _drain(client: socket.socket, buf: bytearray) -> None:
    """Append what ``client`` has already delivered, without waiting.

    :func:`framing.message_end` walks the buffer from its start, so scanning after
    every 64 KiB chunk would make a large message cost its thread time quadratic
    in its size; reading what is there first walks it about once. (Non-blocking
    mode rather than ``MSG_DONTWAIT``: with a timeout set, Python waits for
    readability before every ``recv``.)
    """
    timeout = client.gettimeout()
    client.setblocking(False)
    try:
        while True:
            try:
                more = client.recv(1 << 20)
            except (BlockingIOError, InterruptedError):
                return
            if not more:  # the peer closed: the next blocking recv says so
                return
            buf += more
    finally:
        client.settimeout(timeout)
