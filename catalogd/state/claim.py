"""Who else serves from this state store: a session lock held for the daemon's life.

Two catalogd on one shared state store without ``--ha`` would both serve as active,
numbering versions from the same high-water mark. So each daemon, right after
opening the store, takes a lock the database drops when the session ends (even
when the process is killed): on PostgreSQL an advisory lock (exclusive without
HA, shared with HA, so an HA pair coexists but a node without ``--ha`` and any
other node do not); on MySQL/MariaDB ``GET_LOCK`` (exclusive; HA nodes skip it,
as the lock has no shared mode). SQLite needs none: its file is private to one
data directory, which :mod:`catalogd.data_dir` locks.

The lock lives on one dedicated connection, kept out of the pool; releasing it
closes that connection.
"""

from __future__ import annotations

import contextlib
import logging

import sqlalchemy as sa

from subscriber.protocol.errors import ConflictError

log = logging.getLogger("catalogd")

PG_KEY = 0x63617464  # "catd": advisory lock keys are per database
MYSQL_NAME = "catalogd-state-store-writer"


class WriterClaim:
    """A held claim (or none, where the backend needs none); :meth:`release` is idempotent."""

    def __init__(self, conn: sa.Connection | None) -> None:
        self._conn = conn

    def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.invalidate()  # the database ends the session, and with it the lock
            with contextlib.suppress(Exception):
                conn.close()


def claim_writer(engine: sa.Engine, url: str, *, ha: bool) -> WriterClaim:
    """Take this daemon's claim on the state store at ``engine``.

    Raises:
        ConflictError: another catalogd holds a claim that excludes this one.
    """
    dialect = engine.dialect.name
    if dialect == "postgresql":
        query = "pg_try_advisory_lock_shared" if ha else "pg_try_advisory_lock"
        statement = sa.text(f"SELECT {query}({PG_KEY})")
    elif dialect in ("mysql", "mariadb") and not ha:
        statement = sa.text(f"SELECT GET_LOCK('{MYSQL_NAME}', 0)")
    else:
        return WriterClaim(None)
    conn = engine.connect()
    try:
        got = conn.execute(statement).scalar()
        conn.commit()
    except BaseException:
        conn.invalidate()
        conn.close()
        raise
    if not got:
        conn.invalidate()
        conn.close()
        raise ConflictError(
            f"state store {url} is in use by another catalogd"
            + (" running without --ha" if ha else "")
            + ": two daemons on one state store would both serve as active with the same "
            "versions. Run every daemon of a shared state store with --ha (one active, the "
            "others standby), or give this one another --state-db"
        )
    return WriterClaim(conn)
