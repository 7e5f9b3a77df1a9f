"""The daemon's side of HA: the glue ``catalogd serve`` uses when ``ha.enabled``.

* :func:`open_keeper` checks the settings (SQLite refuses HA), builds the
  :class:`~catalogd.ha.keeper.LeaseKeeper` and takes the first lease step;
* :func:`fenced_reserve` is the server's ``reserve``: the local lease check, then the
  store's epoch-checked reservation (no version is published without both);
* :func:`await_active` is a standby's main loop (watchdog, STATUS) until it becomes
  the active; it returns the version to continue after (the shared mark + 1);
* :func:`admin_handlers` makes every admin command but ``status`` answer
  :class:`NotActiveError` (with the active's admin endpoint) on a non-active, and
  adds the HA facts to ``status``;
* a fenced active (lease lost, or not renewed in time) exits at once with
  :data:`EXIT_FENCED`, from whichever thread noticed: it must not publish again,
  and a restart (systemd ``Restart=``) brings it back as a standby.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from catalogd.admin.endpoint import AdminResult, Handler
from catalogd.config import Config, ConfigError
from catalogd.core import cache_pools as caching
from catalogd.ha.keeper import LeaseKeeper, holder_id
from catalogd.ha.lease import SAFETY, Claim, Role, RoleState
from catalogd.state.store import StateStore
from catalogd.writes.operations import Operations
from subscriber.protocol.errors import CatalogError

__all__ = ["EXIT_FENCED", "admin_handlers", "await_active", "fenced_reserve", "open_keeper"]

log = logging.getLogger("catalogd")

EXIT_FENCED = 75  # EX_TEMPFAIL: restart me (as a standby)


def open_keeper(config: Config, store: StateStore, wake: threading.Event) -> LeaseKeeper:
    """Build and start the lease keeper (one lease step done on return).

    Raises:
        ConfigError: SQLite state store, or a renew interval too long for the lease.
    """
    ha = config.ha
    if store.backend == "sqlite":
        raise ConfigError(
            f"ha.enabled needs a state store every catalogd reaches (PostgreSQL or "
            f"MySQL/MariaDB via --state-db); {store.url} is a SQLite file on one host"
        )
    if ha.renew_interval_s >= ha.lease_s * SAFETY:
        raise ConfigError(
            f"ha.renew_interval_s ({ha.renew_interval_s:g}) must be below "
            f"{SAFETY:g} x ha.lease_s ({ha.lease_s * SAFETY:g}): an active must renew "
            "before its own deadline"
        )
    me = Claim(
        holder_id(),
        ha.advertise or config.server.bind,
        ha.advertise_admin or config.server.admin_bind,
    )

    def on_change(old: RoleState, new: RoleState) -> None:
        wake.set()
        if new.role is Role.FENCED and not keeper.releasing.is_set():
            if new.lease.holder == me.holder:  # the last row seen is still ours
                why = "not renewed before its local deadline: this process was paused or "
                why += f"too slow, or the state store; last seen held by this one, {me.holder}"
            else:
                why = f"now held by {new.lease.holder or 'nobody'} at epoch {new.lease.epoch}"
            log.critical(
                "HA: lost the lease (epoch %s; %s): exiting without publishing anything "
                "more (exit code %d)",
                old.epoch,
                why,
                EXIT_FENCED,
            )
            logging.shutdown()
            sys.stderr.flush()
            os._exit(EXIT_FENCED)

    keeper = LeaseKeeper(
        store,
        me,
        lease_s=ha.lease_s,
        renew_interval_s=ha.renew_interval_s,
        on_change=on_change,
    )
    return keeper.start()


def fenced_reserve(keeper: LeaseKeeper, store: StateStore) -> Callable[[int], object]:
    """The server's ``reserve``: refuse unless active within the local deadline."""

    def reserve(version: int) -> object:
        keeper.check()
        return store.reserve(version)

    return reserve


def await_active(
    keeper: LeaseKeeper,
    stop: threading.Event,
    wake: threading.Event,
    tick: Callable[[], None],
) -> int | None:
    """Wait as a standby until this process holds the lease.

    ``tick`` runs every second or on a wake-up (watchdog, STATUS). Returns the
    version to continue after (the shared high-water mark + 1), or None when
    ``stop`` was set first.
    """
    while not stop.is_set():
        if keeper.state.role is Role.ACTIVE:
            try:
                mark = keeper.store.high_water_mark()
            except CatalogError as exc:  # the database blinked: ask again next turn
                log.warning("HA: cannot read the version high-water mark: %s", exc)
            else:
                log.info("HA: this catalogd is now the active (epoch %s)", keeper.state.epoch)
                return mark + 1
        tick()
        wake.wait(min(1.0, keeper.renew_interval_s))
        wake.clear()
    return None


def refresh_from_store(ops: Operations, store: StateStore) -> None:
    """At takeover: what the old active changed in the state store (cache pools and
    marks) reaches this catalog before it serves. HMS changes it followed itself."""
    old = ops.cache_marks
    new = caching.marks_by_table(store.list_cached())
    ops.set_cache_marks(new)
    ops.publish_pools(store.list_pools())
    for db, table in sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k)):
        try:
            ops.load_table(db, table)
        except CatalogError as exc:
            log.warning("HA takeover: cannot reload %s.%s for its cache marks: %s", db, table, exc)


def describe(keeper: LeaseKeeper) -> dict[str, Any]:
    """The HA facts ``admin status`` shows: role, epoch, lease expiry, peers."""
    state = keeper.state
    lease = state.lease
    expires_in = lease.expires_us / 1e6 - (time.time() + keeper.db_offset_s)
    return {
        "role": state.role.value,
        "epoch": state.epoch if state.role is Role.ACTIVE else None,
        "holder": keeper.me.holder,
        "lease_s": keeper.lease_s,
        "renew_interval_s": keeper.renew_interval_s,
        "active": {
            "holder": lease.holder or None,
            "epoch": lease.epoch,
            "endpoint": lease.endpoint or None,
            "admin": lease.admin or None,
            "expires_in_s": round(expires_in, 3) if lease.holder else None,
        },
        "peers": [
            {
                "holder": holder,
                "endpoint": endpoint,
                "admin": admin,
                "role": "active" if holder == lease.holder and lease.expires_us else "standby",
                "seen_s_ago": round(ago, 3),
                "self": holder == keeper.me.holder,
            }
            for holder, endpoint, admin, ago in keeper.members
            if ago <= 3 * keeper.lease_s  # alive: heard of within three leases
        ],
    }


def status_prefix(ha: dict[str, Any] | None) -> str:
    """The systemd STATUS prefix: "active (epoch N): ", "standby (active: ENDPOINT): ",
    from :func:`describe` ("" without HA)."""
    if ha is None:
        return ""
    if ha["role"] == Role.ACTIVE.value:
        return f"active (epoch {ha['epoch']}): "
    return f"{ha['role']} (active: {ha['active']['endpoint'] or 'none'}): "


def admin_handlers(handlers: dict[int, Handler], keeper: LeaseKeeper) -> dict[int, Handler]:
    """``handlers`` guarded by the lease; ``status`` also reports the HA facts."""
    import idl

    status = idl.catalog_service.TAdminCommand.STATUS

    def guarded(handler: Handler, command: int) -> Handler:
        def run(request: Any) -> AdminResult:
            if command == status:
                result = handler(request)
                return AdminResult(result.version, {**result.detail, "ha": describe(keeper)})
            keeper.check()
            return handler(request)

        return run

    return {command: guarded(handler, command) for command, handler in handlers.items()}
