"""The HA lease row in the state store, and the epoch check that fences writes.

Every function here runs inside a transaction the caller holds (``conn``) and locks
the lease row: lease changes ``FOR UPDATE``, fenced writes in share mode (``FOR
SHARE`` / ``LOCK IN SHARE MODE``; SQLite locks the whole database for a write
anyway). So a lease change and any fenced write are serialized: a write that
checked epoch ``e`` commits before a takeover to ``e + 1`` can commit, and every
write that starts after the takeover sees ``e + 1`` (a locking read waits for the
takeover and reads the row it committed) and is refused. Fenced writes do not
wait for one another.

Times are the database's (:func:`db_now_us`), so the hosts' clocks do not matter
for who holds the lease; decisions are :mod:`catalogd.ha.lease`'s (pure).
Used only by :mod:`catalogd.state.store`.
"""

from __future__ import annotations

import sqlalchemy as sa

from catalogd.ha.lease import Claim, Decision, LeaseRow, decide, release
from catalogd.state.schema import ha_lease, ha_member
from subscriber.protocol.errors import NotActiveError

__all__ = [
    "PEER_FORGET_S",
    "check_epoch",
    "list_members",
    "touch_member",
    "db_now_us",
    "limit_idle_transactions",
    "observe_lease",
    "read_lease",
    "release_lease",
    "step_lease",
]

_NOW_US = {
    "postgresql": "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)",
    "mysql": "SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)",
    "mariadb": "SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)",
    "sqlite": "SELECT CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)",
}


def limit_idle_transactions(engine: sa.Engine, seconds: float) -> None:
    """Make the server end sessions idle in a transaction for ``seconds`` (new
    connections; pooled ones are dropped). MySQL has no such setting: there a
    paused process holding the lease row delays takeovers until it resumes."""
    backend = engine.dialect.name
    if backend == "postgresql":
        statement = f"SET idle_in_transaction_session_timeout = {max(1, int(seconds * 1000))}"
    elif getattr(engine.dialect, "is_mariadb", False):  # known once connected
        statement = f"SET SESSION idle_transaction_timeout = {max(1, round(seconds))}"
    else:
        return

    def on_connect(dbapi_conn: object, _record: object) -> None:
        cursor = dbapi_conn.cursor()  # type: ignore[attr-defined]
        try:
            cursor.execute(statement)
        finally:
            cursor.close()
        if backend == "postgresql":
            dbapi_conn.commit()  # type: ignore[attr-defined]  # psycopg opened a transaction

    sa.event.listen(engine, "connect", on_connect)
    engine.dispose()


def db_now_us(conn: sa.Connection) -> int:
    """The database server's wall clock, in microseconds since the epoch."""
    return int(conn.execute(sa.text(_NOW_US[conn.dialect.name])).scalar_one())


def read_lease(conn: sa.Connection, *, lock: bool = False, shared: bool = False) -> LeaseRow:
    """The lease row, locked for update when ``lock``, in share mode when ``shared``
    (fenced writes: they exclude lease changes, not one another)."""
    query = sa.select(ha_lease).where(ha_lease.c.id == 1)
    if lock or shared:
        query = query.with_for_update(read=shared and not lock)
    row = conn.execute(query).one()
    return LeaseRow(row.holder, int(row.epoch), int(row.expires_us), row.endpoint, row.admin)


def _write(conn: sa.Connection, decision: Decision) -> None:
    if decision.write:
        row = decision.row
        conn.execute(
            ha_lease.update()
            .where(ha_lease.c.id == 1)
            .values(
                holder=row.holder,
                epoch=row.epoch,
                expires_us=row.expires_us,
                endpoint=row.endpoint,
                admin=row.admin,
            )
        )


def step_lease(
    conn: sa.Connection, me: Claim, my_epoch: int | None, lease_s: float
) -> tuple[Decision, int]:
    """Acquire, renew or observe the lease (see :func:`catalogd.ha.lease.decide`).

    Returns the decision and the database time it was taken at.
    """
    row = read_lease(conn, lock=True)
    now = db_now_us(conn)
    decision = decide(row, me, my_epoch, now, int(lease_s * 1_000_000))
    _write(conn, decision)
    return decision, now


def observe_lease(conn: sa.Connection, me: Claim, lease_s: float) -> tuple[Decision, int] | None:
    """A standby's look at the lease without locking it: the HELD decision while
    another holds a live lease (nothing to write), else None (lock and decide).
    Keeps a standby's polls from taking the row lock the active's writes need."""
    row = read_lease(conn)
    now = db_now_us(conn)
    decision = decide(row, me, None, now, int(lease_s * 1_000_000))
    return (decision, now) if not decision.write else None


def release_lease(conn: sa.Connection, me: Claim, my_epoch: int | None) -> Decision:
    """Give the lease up now when we hold it (a standby may take it at once)."""
    decision = release(read_lease(conn, lock=True), me, my_epoch)
    _write(conn, decision)
    return decision


# Members not heard of for this long are deleted (each process start is a new holder).
PEER_FORGET_S = 60.0


def touch_member(conn: sa.Connection, me: Claim) -> int:
    """Record that ``me`` is alive now (database time); forget long-silent members.

    Not fenced: membership is what every node, standby or active, reports.
    Returns the database time.
    """
    now = db_now_us(conn)
    values = {"endpoint": me.endpoint, "admin": me.admin, "seen_us": now}
    updated = conn.execute(
        ha_member.update().where(ha_member.c.holder == me.holder).values(values)
    ).rowcount
    if not updated:
        conn.execute(ha_member.insert().values(holder=me.holder, **values))
    conn.execute(ha_member.delete().where(ha_member.c.seen_us < now - int(PEER_FORGET_S * 1e6)))
    return now


def list_members(conn: sa.Connection) -> list[tuple[str, str, str, int]]:
    """Every member: (holder, endpoint, admin, seen_us), by holder id."""
    rows = conn.execute(sa.select(ha_member).order_by(ha_member.c.holder))
    return [(r.holder, r.endpoint, r.admin, int(r.seen_us)) for r in rows]


def check_epoch(conn: sa.Connection, epoch: int | None) -> None:
    """Refuse the enclosing write unless the lease still carries ``epoch``.

    Locks the lease row in share mode until the transaction ends (see the module
    docstring): concurrent writes of the active do not wait for one another, a
    lease change (``FOR UPDATE``) waits for them all, and they for it.
    Expiry is not checked: while the epoch is unchanged nobody else took over, so
    the write cannot diverge; the active's own deadline stops it publishing.

    Raises:
        NotActiveError: ``epoch`` is None (a standby) or the lease moved on.
    """
    row = read_lease(conn, shared=True)
    if epoch is None or row.epoch != epoch:
        mine = "this catalogd holds no lease" if epoch is None else f"epoch {epoch} is over"
        raise NotActiveError(
            f"not the active catalogd ({mine}; the lease is at epoch {row.epoch}, "
            f"held by {row.holder or 'nobody'}, admin {row.admin or 'unknown'})",
            row.admin,
        )
