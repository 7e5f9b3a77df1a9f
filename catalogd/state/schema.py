"""The state store's database: engine, tables, schema upgrades, error mapping.

Used only inside :mod:`catalogd.state` (the store and its SQL modules).

* :func:`create_engine` builds a SQLAlchemy engine for a URL with per-backend
  settings (connect timeouts, utf8mb4 on MySQL, WAL and ``synchronous=FULL``
  on SQLite).
* :func:`database_errors` maps driver errors to our exception tree: cannot
  reach the database -> :class:`UnavailableError`, SQLite locked or no pooled
  connection free -> :class:`BusyError`, anything else -> :class:`CatalogError`;
  messages name the URL with its password masked.
* :func:`upgrade_schema` applies every schema step newer than the version in
  the one-row table ``schema_version``, each followed by its version number.

Invariants:

* Steps are idempotent (``CREATE ... IF NOT EXISTS``, inserts guarded by a
  read), because MySQL/MariaDB and Python's sqlite3 run DDL outside the
  transaction: a step interrupted there leaves part of its work behind, and
  must be safe to run again. On PostgreSQL a step and its version bump commit
  together.
* A database whose schema is newer than :data:`LATEST` is refused: an older
  catalogd must not write a layout it does not know.
* Names of tables are plain (``cache_pool``, ...): give the state store its own
  database (or PostgreSQL schema via ``?options=-csearch_path=...``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from subscriber.protocol.errors import (
    BusyError,
    CatalogError,
    ConflictError,
    InvalidRequestError,
    UnavailableError,
)

__all__ = [
    "LATEST",
    "admin_audit",
    "cache_mark",
    "cache_pool",
    "create_engine",
    "database_errors",
    "ha_lease",
    "ha_member",
    "mark_id",
    "schema_version",
    "upgrade_schema",
    "version_mark",
]

metadata = sa.MetaData()

schema_version = sa.Table(
    "schema_version",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("version", sa.Integer, nullable=False),
)

# One row (id 1): the version high-water mark.
version_mark = sa.Table(
    "version_mark",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("mark", sa.BigInteger, nullable=False),
)

cache_pool = sa.Table(
    "cache_pool",
    metadata,
    sa.Column("name", sa.String(255), primary_key=True),
    sa.Column("owner", sa.String(255), nullable=True),
    sa.Column("limit_bytes", sa.BigInteger, nullable=True),  # NULL: unlimited
)

# A table is marked with partition_name "" (a NULL cannot sit in a key on every
# backend). The id is a hash of (db, table, partition): MySQL limits index
# widths, and partition names can be long.
cache_mark = sa.Table(
    "cache_mark",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("db", sa.String(128), nullable=False),
    sa.Column("tbl", sa.String(256), nullable=False),
    sa.Column("partition_name", sa.Text, nullable=False),
    sa.Column("pool", sa.String(255), sa.ForeignKey("cache_pool.name"), nullable=False),
    sa.Index("cache_mark_table", "db", "tbl"),
    sa.Index("cache_mark_pool", "pool"),
)

admin_audit = sa.Table(
    "admin_audit",
    metadata,
    # SQLite only auto-increments an INTEGER PRIMARY KEY.
    sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column("at_us", sa.BigInteger, nullable=False),  # microseconds since the epoch, UTC
    sa.Column("command", sa.String(64), nullable=False),
    sa.Column("args", sa.Text, nullable=False),  # JSON object, sorted keys
    sa.Column("requester", sa.String(255), nullable=True),
    sa.Column("outcome", sa.Text, nullable=False),
    sa.Column("version", sa.BigInteger, nullable=True),
)


# One row (id 1) once HA is used: who is the active catalogd, under which epoch, until
# when (microseconds on the database's clock), and where it serves (catalogd.ha.lease).
ha_lease = sa.Table(
    "ha_lease",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("holder", sa.String(255), nullable=False),
    sa.Column("epoch", sa.BigInteger, nullable=False),
    sa.Column("expires_us", sa.BigInteger, nullable=False),
    sa.Column("endpoint", sa.String(255), nullable=False),
    sa.Column("admin", sa.String(255), nullable=False),
)


# Every HA node's last sign of life (its lease step), for ``admin status`` -> peers.
ha_member = sa.Table(
    "ha_member",
    metadata,
    sa.Column("holder", sa.String(255), primary_key=True),
    sa.Column("endpoint", sa.String(255), nullable=False),
    sa.Column("admin", sa.String(255), nullable=False),
    sa.Column("seen_us", sa.BigInteger, nullable=False),
)


def mark_id(db: str, table: str, partition: str | None) -> str:
    """The primary key of a cache mark (names already normalized)."""
    text = f"{db}\0{table}\0{partition or ''}"
    return hashlib.sha256(text.encode()).hexdigest()


def _v1(conn: sa.Connection) -> None:
    for table in (version_mark, cache_pool, cache_mark, admin_audit):
        table.create(conn, checkfirst=True)
    if conn.execute(sa.select(version_mark.c.id)).first() is None:
        conn.execute(version_mark.insert().values(id=1, mark=0))


def _v2(conn: sa.Connection) -> None:
    # The HA lease row, never held (epoch 0, expired): the first claimant takes epoch 1.
    ha_lease.create(conn, checkfirst=True)
    ha_member.create(conn, checkfirst=True)
    if conn.execute(sa.select(ha_lease.c.id)).first() is None:
        conn.execute(
            ha_lease.insert().values(id=1, holder="", epoch=0, expires_us=0, endpoint="", admin="")
        )


# version -> the step that upgrades a schema of version - 1 to it.
STEPS: dict[int, Callable[[sa.Connection], None]] = {1: _v1, 2: _v2}
LATEST = max(STEPS)


def upgrade_schema(engine: sa.Engine) -> int:
    """Create or upgrade the schema to :data:`LATEST`; returns the version found.

    Blocks on the database. Safe to run again (and, on PostgreSQL, by two
    processes at once: the second waits on the ``schema_version`` row lock).

    Raises:
        ConflictError: the database holds a newer schema than this code knows.
        sqlalchemy.exc.DBAPIError: the database failed (the caller maps it).
    """
    try:
        return _upgrade(engine)
    except sa_exc.IntegrityError:
        # Another process created the version row between our read and insert.
        return _upgrade(engine)


def _upgrade(engine: sa.Engine) -> int:
    with engine.begin() as conn:
        schema_version.create(conn, checkfirst=True)
        found = conn.execute(
            sa.select(schema_version.c.version).where(schema_version.c.id == 1).with_for_update()
        ).scalar_one_or_none()
        if found is None:
            conn.execute(schema_version.insert().values(id=1, version=0))
            found = 0
        if found > LATEST:
            raise ConflictError(
                f"the state store has schema version {found}, newer than this catalogd "
                f"knows ({LATEST}): upgrade catalogd or use another database"
            )
        for version in range(found + 1, LATEST + 1):
            STEPS[version](conn)
            conn.execute(
                schema_version.update().where(schema_version.c.id == 1).values(version=version)
            )
        return int(found)


# ---------------------------------------------------------------- connections


def create_engine(url: str, *, connect_timeout_s: float) -> sa.Engine:
    """An engine for ``url`` (no connection is made yet).

    Raises:
        InvalidRequestError: not a URL, or one whose driver is not installed.
    """
    try:
        parsed = sa.make_url(url)
    except sa_exc.ArgumentError as exc:
        raise InvalidRequestError(
            f"not a database URL: {url!r} (expected e.g. sqlite:///path, "
            "postgresql+psycopg://user@host/db, mysql+pymysql://user@host/db)"
        ) from exc
    try:
        engine = sa.create_engine(parsed, **_engine_options(parsed, connect_timeout_s))
    except (sa_exc.ArgumentError, sa_exc.NoSuchModuleError, ImportError) as exc:
        raise InvalidRequestError(
            f"cannot use database URL {parsed.render_as_string(hide_password=True)}: {exc}"
        ) from exc
    if parsed.get_backend_name() == "sqlite":
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    return engine


@contextmanager
def database_errors(engine: sa.Engine, doing: str) -> Iterator[None]:
    """Map driver errors raised while ``doing`` to our exception tree (see module doc)."""
    url = engine.url.render_as_string(hide_password=True)
    try:
        yield
    except sa_exc.DBAPIError as exc:
        detail = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
        message = f"state store {url}: cannot {doing}: {detail}"
        if engine.dialect.name == "sqlite" and "locked" in detail:
            raise BusyError(message) from exc
        if (
            isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError))
            or exc.connection_invalidated
        ):
            raise UnavailableError(message) from exc
        raise CatalogError(message) from exc
    except sa_exc.TimeoutError as exc:  # no pooled connection became free
        raise BusyError(f"state store {url}: cannot {doing}: {exc}") from exc


def _engine_options(url: sa.URL, connect_timeout_s: float) -> dict[str, Any]:
    backend = url.get_backend_name()
    timeout = max(1, round(connect_timeout_s))
    if backend == "sqlite":
        # Seconds to wait for another writer's lock before "database is locked".
        return {"connect_args": {"timeout": connect_timeout_s}}
    options: dict[str, Any] = {"pool_pre_ping": True, "pool_size": 2, "max_overflow": 4}
    if backend == "postgresql":
        options["connect_args"] = {"connect_timeout": timeout}
    elif backend in ("mysql", "mariadb"):
        args: dict[str, Any] = {"connect_timeout": timeout}
        if "charset" not in url.query:
            args["charset"] = "utf8mb4"
        options["connect_args"] = args
    return options


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # WAL lets readers run beside the writer; synchronous=FULL makes each commit
    # durable through power loss, not only through a killed process.
    cursor = dbapi_conn.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


def private_sqlite_file(url: str) -> None:
    """Make a SQLite state file (it holds the audit log) readable by its owner only."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or url == prefix or ":memory:" in url:
        return
    path = Path(url[len(prefix) :].partition("?")[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)  # SQLite gives its journal files the database file's mode
    path.chmod(0o600)
