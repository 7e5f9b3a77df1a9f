"""The HA half of the state store: the lease, and the epoch check that fences writes.

:class:`FencedStore` is a base of :class:`~catalogd.state.store.StateStore` (kept
apart so each file stays small). After :meth:`FencedStore.enable_fencing`, every
write transaction of the store first runs :meth:`FencedStore._fence`, which checks,
under the lease row's lock, that the lease still carries this process's epoch
(:meth:`FencedStore.set_epoch`; None: a standby, which may not write). The SQL is
:mod:`catalogd.state.lease`'s; the decisions :mod:`catalogd.ha.lease`'s.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager

import sqlalchemy as sa

from catalogd.ha.lease import Claim, Decision, LeaseRow
from catalogd.state import lease as lease_sql

__all__ = ["FencedStore"]


class FencedStore:
    """Lease and fencing methods; the attributes are the store's (set by its __init__)."""

    _engine: sa.Engine
    _lock: threading.Lock
    _reserved: int
    _fencing: bool
    _epoch: int | None

    def _db(self, doing: str) -> AbstractContextManager[None]:
        raise NotImplementedError

    def enable_fencing(self, idle_timeout_s: float | None = None) -> None:
        """From now on every write checks the lease epoch (none set yet: refused).

        ``idle_timeout_s``: the database ends a session idle inside a transaction
        for longer (PostgreSQL ``idle_in_transaction_session_timeout``, MariaDB
        ``idle_transaction_timeout``), so a paused process cannot hold the lease
        row's lock, and with it every takeover, for as long as it is paused.
        """
        self._fencing = True
        if idle_timeout_s is not None:
            lease_sql.limit_idle_transactions(self._engine, idle_timeout_s)

    def set_epoch(self, epoch: int | None) -> None:
        """The epoch this process's writes carry (None: it is not the active)."""
        with self._lock:
            self._epoch = epoch
            self._reserved = -1  # the next reservation is written under this epoch

    def step_lease(self, me: Claim, lease_s: float) -> tuple[Decision, int]:
        """Acquire, renew or observe the lease in one transaction (catalogd.ha.lease.decide).

        Returns the decision and the database time (microseconds) it was taken at.
        """
        if self._epoch is None:  # a standby: look without locking while the lease is held
            with self._db("read the HA lease"), self._engine.connect() as conn:
                held = lease_sql.observe_lease(conn, me, lease_s)
            if held is not None:
                return held
        with self._db("acquire or renew the HA lease"), self._engine.begin() as conn:
            return lease_sql.step_lease(conn, me, self._epoch, lease_s)

    def release_lease(self, me: Claim) -> Decision:
        """Give the lease up if this process holds it (graceful stop); fences our writes."""
        with self._db("release the HA lease"), self._engine.begin() as conn:
            decision = lease_sql.release_lease(conn, me, self._epoch)
        self.set_epoch(None)
        return decision

    def read_lease(self) -> tuple[LeaseRow, int]:
        """The lease row and the database's time now (microseconds)."""
        with self._db("read the HA lease"), self._engine.connect() as conn:
            return lease_sql.read_lease(conn), lease_sql.db_now_us(conn)

    def touch_member(self, me: Claim) -> tuple[list[tuple[str, str, str, int]], int]:
        """Report this node alive in the member table (any role; not fenced); returns
        every member (holder, endpoint, admin, seen_us) and the database time."""
        with self._db("record HA membership"), self._engine.begin() as conn:
            now = lease_sql.touch_member(conn, me)
            return lease_sql.list_members(conn), now

    def _fence(self, conn: sa.Connection) -> None:
        if self._fencing:
            lease_sql.check_epoch(conn, self._epoch)
