"""Waiting for catalogd's order of a database's tables (``TDatabase.table_order``).

catalogd learns HMS's row order of a database's tables about a second after they
change (``catalogd/freshness/order_learner.py``); a test or benchmark that wants an
endpoint's first ``list_tables`` served waits for it here.
"""

from __future__ import annotations

import time
from typing import Any

from subscriber.protocol import codec
from subscriber.protocol.keys import database_key, object_type_of


def published(sub: Any, db: str) -> bool:
    """Whether ``sub``'s cache holds catalogd's order of ``db``'s tables for the
    versions they have now."""
    view = sub.cache_view()
    entry = view.get(database_key(db))
    rows = codec.decode_object(entry.payload).db.table_order if entry is not None else None
    tables = {
        key.partition(".")[2]: view.get(key).version
        for key in view.keys_of(db)
        if object_type_of(key) in ("TABLE", "VIEW")
    }
    return rows is not None and {r.name: r.catalog_version for r in rows} == tables


def wait_for_table_order(sub: Any, db: str, timeout: float) -> float:
    """Seconds until :func:`published` holds (CatalogTimeoutError after ``timeout``)."""
    started = time.monotonic()
    sub.wait_until(lambda: published(sub, db), timeout, f"catalogd's order of {db}'s tables")
    return time.monotonic() - started
