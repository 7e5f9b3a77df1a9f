"""The lease keeper: the thread that acquires and renews the HA lease.

:class:`LeaseKeeper` runs ``catalogd-lease``: every ``renew_interval_s`` it runs one
lease transaction (:meth:`StateStore.step_lease`) and folds the result into its
:class:`~catalogd.ha.lease.RoleState`. A standby thereby takes the lease within
``renew_interval_s`` of its expiry; an active renews it. A failed transaction
(database down) changes nothing but the clock: an active whose local deadline
passes is fenced (:meth:`LeaseKeeper.check` raises from then on, for good).

Role changes are reported through ``on_change(old, new)`` on the keeper thread
(must not block); the daemon wakes its main loop there. The store's write epoch
is set here, before ``on_change``, so fenced writes are refused at once.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable

from catalogd.ha.lease import Claim, Role, RoleState
from catalogd.state.store import StateStore
from subscriber.protocol.errors import CatalogError, NotActiveError

__all__ = ["LeaseKeeper", "holder_id"]

log = logging.getLogger(__name__)


def holder_id() -> str:
    """A holder id unique to this process: host, pid and a random suffix."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class LeaseKeeper:
    """Keeps (or waits for) the lease. See the module docstring.

    Args:
        store: the state store (fencing is enabled on it here).
        me: this process's holder id and advertised endpoints.
        lease_s: how long a renewal keeps the lease.
        renew_interval_s: how often to renew (active) or try to acquire (standby);
            must be below ``lease_s * SAFETY`` so one slow renewal is survivable.
        on_change: called with (old, new) role states on every role change.
        clock: the local monotonic clock.
    """

    def __init__(
        self,
        store: StateStore,
        me: Claim,
        *,
        lease_s: float,
        renew_interval_s: float,
        on_change: Callable[[RoleState, RoleState], None] = lambda old, new: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < renew_interval_s < lease_s:
            raise ValueError("the renew interval must be positive and shorter than the lease")
        self.store = store
        self.me = me
        self.lease_s = lease_s
        self.renew_interval_s = renew_interval_s
        self._on_change = on_change
        self._clock = clock
        self._state = RoleState()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.releasing = threading.Event()  # graceful stop: no more renewals
        self._thread = threading.Thread(target=self._run, name="catalogd-lease", daemon=True)
        self.db_offset_s = 0.0  # database clock - local wall clock, from the last step
        # Every node seen: (holder, endpoint, admin, seconds since seen), from the last step.
        self.members: list[tuple[str, str, str, float]] = []
        # A paused holder of the lease row's lock delays a takeover this long at most;
        # shorter would kill our own transactions whenever the host is busy.
        store.enable_fencing(idle_timeout_s=max(1.0, lease_s / 2))
        store.set_epoch(None)

    @property
    def state(self) -> RoleState:
        """This process's role now (the local deadline applied)."""
        return self._advance(None)

    def start(self) -> LeaseKeeper:
        """Run one lease step now (so the first role is known), then keep going."""
        self.step()
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop the thread (the lease is left to expire; see :meth:`release`)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(5.0)

    def check(self) -> None:
        """Raise unless this process is the active and its local deadline holds.

        Called before every publication (cheap: no I/O).

        Raises:
            NotActiveError: a standby, or fenced.
        """
        state = self.state
        if not state.may_publish(self._clock()):
            raise NotActiveError(
                f"this catalogd is {state.role.value}, not the active one "
                f"(the active's admin endpoint: {state.lease.admin or 'unknown'})",
                state.lease.admin,
            )

    def step(self) -> RoleState:
        """One lease transaction; returns the new state (errors leave it to the clock)."""
        if self.releasing.is_set() or self._state.role is Role.FENCED:
            return self._advance(None)  # fenced for good: never claims again
        started = self._clock()
        try:
            decision, db_now_us = self.store.step_lease(self.me, self.lease_s)
        except CatalogError as exc:
            state = self._advance(None)
            log.warning(
                "HA lease step failed (%s: %s); role %s", type(exc).__name__, exc, state.role.value
            )
            return state
        self.db_offset_s = db_now_us / 1e6 - time.time()
        finished = self._clock()
        state = self._advance(lambda s: s.after(decision, started, self.lease_s, finished))
        try:
            members, now_us = self.store.touch_member(self.me)
            self.members = [(h, e, a, (now_us - seen) / 1e6) for h, e, a, seen in members]
        except CatalogError as exc:  # membership is for status only
            log.debug("cannot record HA membership: %s", exc)
        return state

    def release(self) -> None:
        """Graceful stop: hand the lease over now (the caller stopped publishing first)."""
        self.releasing.set()
        self._stop.set()
        try:
            decision = self.store.release_lease(self.me)
            log.info("HA lease %s (epoch %d)", decision.outcome.value, decision.row.epoch)
        except CatalogError as exc:
            log.warning("could not release the HA lease (it expires on its own): %s", exc)

    def _advance(self, change: Callable[[RoleState], RoleState] | None) -> RoleState:
        with self._lock:
            old = self._state
            new = old.tick(self._clock())
            if change is not None:
                new = change(new)
            self._state = new
        if new.role is not old.role or new.epoch != old.epoch:
            if new.role is not Role.FENCED:
                # Fenced: the daemon is told first (it exits); the store's lock may be
                # held by a reservation blocked on an unreachable database.
                self.store.set_epoch(new.epoch if new.role is Role.ACTIVE else None)
            log.log(
                logging.ERROR if new.role is Role.FENCED else logging.INFO,
                "HA role %s -> %s (epoch %s; lease held by %s)",
                old.role.value,
                new.role.value,
                new.epoch,
                new.lease.holder or "nobody",
            )
            self._on_change(old, new)
            if new.role is Role.FENCED:
                self.store.set_epoch(None)
        return new

    def _run(self) -> None:
        while not self._stop.wait(self.renew_interval_s):
            try:
                self.step()
            except Exception:  # noqa: BLE001 - the keeper must outlive a bad step
                log.exception("HA lease step failed unexpectedly")
