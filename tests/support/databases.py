"""Scratch databases on the machine's PostgreSQL and MariaDB for state-store tests.

:func:`scratch_database` creates an empty database with a random name on one
backend, yields its SQLAlchemy URL and drops it afterwards (PostgreSQL with
``FORCE``, so open sessions do not keep it alive).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/{db}"
MARIADB = "mysql+pymysql://root@127.0.0.1:3306/{db}"


def execute(url: str, statement: str) -> None:
    """Run one statement outside a transaction (CREATE/DROP DATABASE need that)."""
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(statement))
    finally:
        engine.dispose()


@contextmanager
def scratch_database(backend: str, prefix: str) -> Iterator[str]:
    """An empty database on ``backend`` (``postgresql`` or ``mysql``): its URL, dropped after."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    template = POSTGRES if backend == "postgresql" else MARIADB
    admin = template.format(db="postgres" if backend == "postgresql" else "")
    execute(admin, f"CREATE DATABASE {name}")
    try:
        yield template.format(db=name)
    finally:
        force = " WITH (FORCE)" if backend == "postgresql" else ""
        execute(admin, f"DROP DATABASE IF EXISTS {name}{force}")
