"""catalogd's persistent state: version high-water mark, cache pools, admin audit log.

A thin adapter over SQLAlchemy 2 Core (no ORM). One database holds it: by
default a SQLite file in catalogd's data directory (:func:`sqlite_url`), or
PostgreSQL / MySQL / MariaDB by URL (``postgresql+psycopg://...``,
``mysql+pymysql://...``). :meth:`StateStore.open` creates or upgrades the
schema (:mod:`catalogd.state.schema`) before returning.

The version high-water mark
---------------------------
Contract: after any restart, ``kill -9`` and power loss included,
:meth:`StateStore.high_water_mark` is >= every version ever passed to a
:meth:`StateStore.reserve` call that returned. catalogd calls ``reserve(v)``
*before* publishing version ``v`` and starts its catalog at
``high_water_mark()``, so versions never go backwards across restarts.
``reserve`` persists ``v + block - 1`` in one committed transaction, so the
next ``block - 1`` versions cost no I/O (a restart then skips at most
``block - 1`` versions, which is harmless: versions need only grow).

Fencing (HA, :mod:`catalogd.ha`): after :meth:`StateStore.enable_fencing`, every
write transaction (``reserve``, pools, marks, audit) first checks, under the lease
row's lock, that the lease still carries this process's epoch
(:meth:`StateStore.set_epoch`; None: a standby, which may not write), and raises
:class:`NotActiveError` otherwise. So an old active cannot reserve versions or write
state once a new active took over. The lease itself: :meth:`StateStore.step_lease`.

Concurrency without HA: one catalogd (one writer) per state store is the supported shape.
Two processes racing cannot lower the mark: the write is a single atomic
``UPDATE ... SET mark = CASE WHEN mark < :new THEN :new ELSE mark END``, which
PostgreSQL and InnoDB run under a row lock and SQLite under its database
write lock, so neither write can undo the other and the mark read back in
the same transaction is >= this writer's request. A second writer is logged
(as a warning), not refused.

Errors (foreign DBAPI errors mapped here, the original chained):

* the database cannot be reached (refused, timed out, bad credentials, a
  SQLite file that cannot be opened) -> :class:`UnavailableError` naming the
  URL with its password masked;
* a SQLite database locked by another writer beyond the busy timeout ->
  :class:`BusyError`;
* anything else from the driver -> :class:`CatalogError`.

Thread safety: every method may be called from any thread; ``reserve`` is
serialized by a lock. Every method blocks on database I/O, except ``reserve``
within an already persisted block.

Every fenced write (``reserve``, pools, marks, audit) runs in one transaction that
is fenced first and has its driver errors mapped (``_write``). The SQL of cache pools
and marks is :mod:`catalogd.state.pools`'s, of the audit log
:mod:`catalogd.state.audit_log`'s, of the lease :mod:`catalogd.state.lease`'s
(through :class:`~catalogd.state.fencing.FencedStore`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from types import EllipsisType, TracebackType
from typing import Any

import sqlalchemy as sa

from catalogd.core.cache_pools import CacheMark, CachePool, check_limit, check_pool_name
from catalogd.state import audit_log, pools
from catalogd.state.claim import WriterClaim, claim_writer
from catalogd.state.fencing import FencedStore
from catalogd.state.schema import create_engine, database_errors, upgrade_schema, version_mark
from catalogd.state.values import AuditRecord
from subscriber.protocol.errors import InvalidRequestError, UnavailableError

__all__ = ["AuditRecord", "CacheMark", "CachePool", "StateStore", "sqlite_url"]

log = logging.getLogger(__name__)

DEFAULT_BLOCK = 1000


def sqlite_url(path: str) -> str:
    """The SQLAlchemy URL of a SQLite state file at ``path`` (catalogd's default)."""
    return f"sqlite:///{path}"


class StateStore(FencedStore):
    """catalogd's state in one SQL database. Build with :meth:`open`.

    Args:
        engine: a SQLAlchemy engine whose schema is already current.
        block: how many versions one :meth:`reserve` write covers (>= 1).
    """

    def __init__(self, engine: sa.Engine, *, block: int = DEFAULT_BLOCK) -> None:
        if isinstance(block, bool) or not isinstance(block, int) or block < 1:
            raise InvalidRequestError(f"block must be an integer >= 1, not {block!r}")
        self._engine = engine
        self._block = block
        self._lock = threading.Lock()
        self._reserved = -1  # the mark this process last persisted (-1: none yet)
        self._closed = False
        self._fencing = False  # HA: every write checks the lease epoch (FencedStore)
        self._epoch: int | None = None
        self.url = engine.url.render_as_string(hide_password=True)

    def _db(self, doing: str) -> AbstractContextManager[None]:
        """Map driver errors raised while ``doing`` to our exception tree."""
        if self._closed:
            raise UnavailableError(f"state store {self.url} is closed: cannot {doing}")
        return database_errors(self._engine, doing)

    @contextmanager
    def _write(self, doing: str) -> Iterator[sa.Connection]:
        """A write transaction: driver errors mapped (:meth:`_db`), fenced first."""
        with self._db(doing), self._engine.begin() as conn:
            self._fence(conn)
            yield conn

    @classmethod
    def open(
        cls, url: str, *, block: int = DEFAULT_BLOCK, connect_timeout_s: float = 10.0
    ) -> StateStore:
        """Connect to the database at ``url`` and create or upgrade its schema.

        Blocks for the connection and the schema work (bounded by
        ``connect_timeout_s`` for reaching the server).

        Raises:
            InvalidRequestError: ``url`` is not a SQLAlchemy URL of an
                installed driver, or ``block`` < 1.
            UnavailableError: the database cannot be reached.
            ConflictError: the schema is newer than this catalogd knows.
        """
        engine = create_engine(url, connect_timeout_s=connect_timeout_s)
        store = cls(engine, block=block)
        try:
            with store._db("create or upgrade the schema"):
                upgrade_schema(engine)
        except BaseException:
            engine.dispose()
            raise
        return store

    # -- lifecycle

    def close(self) -> None:
        """Release every pooled connection. Idempotent."""
        self._closed = True
        self._engine.dispose()

    def __enter__(self) -> StateStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def claim_writer(self, *, ha: bool) -> WriterClaim:
        """This daemon's claim on the store (see :mod:`catalogd.state.claim`).

        Raises:
            ConflictError: another catalogd serves from this store in a way that
                excludes this one (both without HA, or one without).
        """
        with self._db("claim the state store"):
            return claim_writer(self._engine, self.url, ha=ha)

    @property
    def block(self) -> int:
        return self._block

    @property
    def backend(self) -> str:
        """The database dialect: "sqlite", "postgresql", "mysql", ..."""
        return self._engine.dialect.name

    # -- version high-water mark

    def high_water_mark(self) -> int:
        """The persisted mark: >= every version any ``reserve`` call returned for."""
        with self._db("read the version high-water mark"), self._engine.connect() as conn:
            return int(conn.execute(sa.select(version_mark.c.mark)).scalar_one())

    def reserve(self, version: int) -> int:
        """Make sure the persisted mark is >= ``version``; return the persisted mark.

        A no-op (no I/O) when this process already persisted a mark >= ``version``;
        otherwise commits ``version + block - 1`` (or more, if another writer
        went further) before returning.

        Raises:
            InvalidRequestError: ``version`` is negative or not an int.
            UnavailableError, BusyError, CatalogError: the write failed; the
                version must then not be published.
        """
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise InvalidRequestError(f"version must be an integer >= 0, not {version!r}")
        with self._lock:
            if version <= self._reserved:
                return self._reserved
            wanted = version + self._block - 1
            with self._write("persist the version high-water mark") as conn:
                conn.execute(
                    version_mark.update().values(
                        mark=sa.case(
                            (version_mark.c.mark < wanted, wanted), else_=version_mark.c.mark
                        )
                    )
                )
                mark = int(conn.execute(sa.select(version_mark.c.mark)).scalar_one())
            if self._reserved >= 0 and mark > max(wanted, self._reserved):
                log.warning(
                    "version mark moved to %d by another writer of %s (expected %d): "
                    "more than one catalogd uses this state store",
                    mark,
                    self.url,
                    wanted,
                )
            self._reserved = mark
            return mark

    # -- cache pools (catalogd.state.pools)

    def add_pool(
        self, name: str, owner: str | None = None, limit_bytes: int | None = None
    ) -> CachePool:
        """Create a cache pool; returns it (name lower-cased).

        Raises:
            InvalidRequestError: empty or malformed name, negative limit.
            ConflictError: a pool of that name exists.
        """
        pool = CachePool(check_pool_name(name), owner, check_limit(limit_bytes))
        with self._write(f"add cache pool {pool.name!r}") as conn:
            pools.add_pool(conn, pool)
        return pool

    def alter_pool(
        self,
        name: str,
        *,
        owner: str | None | EllipsisType = ...,
        limit_bytes: int | None | EllipsisType = ...,
    ) -> CachePool:
        """Change a pool's owner and/or limit (``...``: keep; ``None``: clear).

        Raises:
            NotFoundError: no such pool.
            InvalidRequestError: negative limit, malformed name.
        """
        key = check_pool_name(name)
        changes: dict[str, Any] = {}
        if owner is not ...:
            changes["owner"] = owner
        if limit_bytes is not ...:
            changes["limit_bytes"] = check_limit(limit_bytes)
        with self._write(f"alter cache pool {key!r}") as conn:
            return pools.alter_pool(conn, key, changes)

    def remove_pool(self, name: str) -> CachePool:
        """Delete an unused pool; returns what it was.

        Raises:
            NotFoundError: no such pool.
            ConflictError: tables or partitions are still cached in it (named).
        """
        key = check_pool_name(name)
        with self._write(f"remove cache pool {key!r}") as conn:
            return pools.remove_pool(conn, key)

    def list_pools(self) -> list[CachePool]:
        """Every pool, sorted by name."""
        with self._db("list cache pools"), self._engine.connect() as conn:
            return pools.list_pools(conn)

    # -- cache marks (catalogd.state.pools)

    def mark_cached(self, db: str, table: str, partition: str | None, pool: str) -> CacheMark:
        """Mark a table (``partition`` None) or one partition as cached in ``pool``.

        Marking again moves the mark to ``pool``. Whether the table exists is the
        caller's to check (the store does not know HMS).

        Raises:
            NotFoundError: no such pool.
            InvalidRequestError: empty db or table name.
        """
        mark = CacheMark.of(db, table, partition, check_pool_name(pool))
        with self._write(f"mark {mark.display_name} cached") as conn:
            pools.mark_cached(conn, mark)
        return mark

    def unmark_cached(self, db: str, table: str, partition: str | None) -> list[CacheMark]:
        """Remove cache marks; returns the removed ones (empty when none existed).

        With ``partition`` None the table's mark *and* every partition mark of
        the table go (Impala's ``SET UNCACHED`` on a table); otherwise only that
        partition's.
        """
        probe = CacheMark.of(db, table, partition, "")
        with self._write(f"uncache {probe.display_name}") as conn:
            return pools.unmark_cached(conn, probe)

    def list_cached(self, pool: str | None = None) -> list[CacheMark]:
        """Every cache mark (of one pool), sorted by db, table, partition.

        Raises:
            NotFoundError: ``pool`` names no pool.
        """
        key = None if pool is None else check_pool_name(pool)
        with self._db("list cache marks"), self._engine.connect() as conn:
            return pools.list_cached(conn, key)

    # -- admin audit log (catalogd.state.audit_log)

    def record_admin(
        self,
        command: str,
        args: Mapping[str, Any],
        requester: str | None,
        outcome: str,
        version: int | None,
        at: datetime,
    ) -> int:
        """Append one admin command to the audit log; returns its id.

        ``args`` must be JSON-serializable; ``at`` is stored to the microsecond
        as UTC (a naive ``at`` is taken to be UTC).

        Raises:
            InvalidRequestError: empty command, or ``args`` not JSON-serializable.
        """
        args_text = audit_log.args_json(command, args)
        with self._write(f"record admin command {command!r}") as conn:
            return audit_log.append(conn, command, args_text, requester, outcome, version, at)

    def audit(self, limit: int = 50) -> list[AuditRecord]:
        """The newest ``limit`` audit records, newest first.

        Raises:
            InvalidRequestError: ``limit`` < 1.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidRequestError(f"limit must be an integer >= 1, not {limit!r}")
        with self._db("read the audit log"), self._engine.connect() as conn:
            return audit_log.newest(conn, limit)
