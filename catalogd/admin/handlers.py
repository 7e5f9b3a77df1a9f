"""Admin command handlers: invalidate, refresh, status.

Each handler takes a ``TAdminRequest`` and returns an
:class:`~catalogd.admin.endpoint.AdminResult`; errors are our exceptions, which the
admin endpoint maps to status codes. Handlers run on admin worker threads.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import idl
from catalogd.admin.endpoint import AdminResult, Handler, table_name
from catalogd.core import cache_pools as caching
from catalogd.loading.table_loader import TableLoader
from catalogd.runtime_info import RuntimeInfo
from catalogd.server.thread import CatalogServer
from catalogd.state.store import StateStore
from catalogd.status import status_detail
from catalogd.writes.operations import Operations
from subscriber.protocol.errors import InvalidRequestError, NotFoundError
from subscriber.protocol.keys import partition_key

svc = idl.catalog_service
Cmd = svc.TAdminCommand


def invalidate(ops: Operations, loader: TableLoader, request: Any) -> AdminResult:
    """``invalidate`` (all), ``invalidate DB`` or ``invalidate DB.TABLE``."""
    if request.tbl_name:
        name = table_name(request)
        version = ops.invalidate_table(name.db, name.table)
        queued = loader.enqueue_unloaded(name.db)
        return AdminResult(version, {"target": str(name), "queued_for_load": queued})
    if request.db_name:
        version = ops.load_names(request.db_name, reset=True)
        queued = loader.enqueue_unloaded(request.db_name.lower())
        return AdminResult(version, {"target": request.db_name.lower(), "queued_for_load": queued})
    ops.load_names(reset=True)
    version = ops.load_privileges()
    queued = loader.enqueue_unloaded()
    return AdminResult(version, {"target": "*", "queued_for_load": queued})


def refresh(ops: Operations, request: Any) -> AdminResult:
    """``refresh DB.TABLE [--partition k=v/k2=v2 ...]``: reload now, publish the difference."""
    name = table_name(request)
    before = ops.version()
    if (request.options or {}).get("files") == "true":
        ops.files.opt_in(name.db, name.table)  # --files: file metadata from now on
    if request.partitions:
        version = ops.refresh_partitions(name.db, name.table, request.partitions)
    else:
        version = ops.load_table(name.db, name.table)
    detail = {"target": str(name), "changes": version - before}
    if request.partitions:
        detail["partitions"] = list(request.partitions)
    return AdminResult(version, detail)


def _pool_fields(request: Any) -> tuple[str, dict[str, Any]]:
    options = dict(request.options or {})
    name = options.get("pool", "")
    if not name:
        raise InvalidRequestError("a cache pool name is needed")
    fields: dict[str, Any] = {}
    if "owner" in options:
        fields["owner"] = options["owner"] or None
    if "limit" in options:
        text = options["limit"]
        try:
            fields["limit_bytes"] = int(text) if text else None
        except ValueError:
            raise InvalidRequestError(f"limit must be a number of bytes, got {text!r}") from None
    return name, fields


def cache_pool(ops: Operations, store: StateStore, request: Any) -> AdminResult:
    """cache-pool add / alter / remove / list."""
    if request.command == Cmd.CACHE_POOL_LIST:
        pools = [dataclasses.asdict(p) for p in store.list_pools()]
        marks = [dataclasses.asdict(m) for m in store.list_cached()]
        return AdminResult(None, {"pools": pools, "cached": marks})
    name, fields = _pool_fields(request)
    if request.command == Cmd.CACHE_POOL_ADD:
        pool = store.add_pool(name, **fields)
    elif request.command == Cmd.CACHE_POOL_ALTER:
        pool = store.alter_pool(name, **fields)
    else:
        pool = store.remove_pool(name)
    version = ops.publish_pools(store.list_pools())
    return AdminResult(version, {"pool": dataclasses.asdict(pool)})


def cache(ops: Operations, store: StateStore, request: Any) -> AdminResult:
    """cache / uncache DB.TABLE [--partition ...] [--pool P]: mark, then republish the table."""
    name = table_name(request)
    if not ops.has_table(name.db, name.table):
        raise NotFoundError(f"table {name} not found")
    partitions: list[str | None] = list(request.partitions or []) or [None]
    for partition in partitions:
        if partition is not None:
            key = partition_key(name.db, name.table, partition)
            if not ops.contains(key):
                raise NotFoundError(f"partition {partition} of {name} not found")
    if request.command == Cmd.CACHE:
        pool = dict(request.options or {}).get("pool", "")
        if not pool:
            raise InvalidRequestError("cache needs --pool NAME")
        for partition in partitions:
            store.mark_cached(name.db, name.table, partition, pool)
    else:
        for partition in partitions:
            store.unmark_cached(name.db, name.table, partition)
    ops.set_cache_marks(caching.marks_by_table(store.list_cached()))
    version = ops.load_table(name.db, name.table)
    return AdminResult(version, {"target": str(name), "partitions": request.partitions or []})


def audit(store: StateStore, request: Any) -> AdminResult:
    """The newest audit records; option ``limit`` (1..10000, default 50).

    Raises:
        InvalidRequestError: ``limit`` is not a whole number in range.
    """
    text = dict(request.options or {}).get("limit", "50")
    try:
        limit = int(text)
    except ValueError:
        raise InvalidRequestError(f"limit must be a whole number, got {text!r}") from None
    if not 1 <= limit <= 10_000:
        raise InvalidRequestError("limit must be between 1 and 10000")
    records = []
    for record in store.audit(limit):
        row = dataclasses.asdict(record)
        row["at"] = record.at.isoformat()
        records.append(row)
    return AdminResult(None, {"records": records})


def handlers(
    server: CatalogServer,
    ops: Operations,
    loader: TableLoader,
    info: RuntimeInfo,
    live: Any,
    store: StateStore | None = None,
) -> dict[int, Handler]:
    """The handler table for :class:`~catalogd.admin.endpoint.AdminServer`."""

    def status(request: Any) -> AdminResult:
        detail = status_detail(server, loader, info, live())
        return AdminResult(None, detail)

    def refresh_handler(request: Any) -> AdminResult:
        return refresh(ops, request)

    def invalidate_handler(request: Any) -> AdminResult:
        if request.partitions:
            raise InvalidRequestError("invalidate takes no partitions; use refresh")
        return invalidate(ops, loader, request)

    table: dict[int, Handler] = {
        Cmd.STATUS: status,
        Cmd.INVALIDATE: invalidate_handler,
        Cmd.REFRESH: refresh_handler,
    }
    if store is not None:
        for command in (
            Cmd.CACHE_POOL_ADD,
            Cmd.CACHE_POOL_ALTER,
            Cmd.CACHE_POOL_REMOVE,
            Cmd.CACHE_POOL_LIST,
        ):
            table[command] = lambda request: cache_pool(ops, store, request)
        table[Cmd.CACHE] = table[Cmd.UNCACHE] = lambda request: cache(ops, store, request)
        table[Cmd.AUDIT] = lambda request: audit(store, request)
    return table
