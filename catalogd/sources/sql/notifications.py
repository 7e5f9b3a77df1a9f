# ruff: noqa: SIM300  (UPPER_CASE schema columns look like constants to ruff: `col == value` is right)
"""HMS notification events (``NOTIFICATION_LOG``) from the backing database.

What the change detector polls: the newest event id and the events after one, as
the ``NotificationEvent`` s HMS's ``get_next_notification`` returns. Functions over a
connection the caller holds (:class:`~catalogd.sources.sql.SqlSource`).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import select
from sqlalchemy.engine import Connection

import idl
from catalogd.sources.sql import schema as s

__all__ = ["current_notification_id", "next_notifications"]

hms = idl.hive_metastore


def current_notification_id(conn: Connection) -> int:
    """The id of the newest event (0 when none was ever logged)."""
    next_id = conn.execute(select(sa.func.max(s.NOTIFICATION_SEQUENCE.c.NEXT_EVENT_ID))).scalar()
    return max(0, int(next_id) - 1) if next_id is not None else 0


def next_notifications(conn: Connection, last_event: int, max_events: int) -> list[Any]:
    """Up to ``max_events`` events with ids above ``last_event``, in id order."""
    n = s.NOTIFICATION_LOG.c
    columns = s.layout_of(conn).columns(s.NOTIFICATION_LOG)
    rows = conn.execute(
        select(*columns).where(n.EVENT_ID > last_event).order_by(n.EVENT_ID).limit(max_events)
    ).all()
    return [
        hms.NotificationEvent(
            eventId=r.EVENT_ID,
            eventTime=r.EVENT_TIME,
            eventType=r.EVENT_TYPE,
            dbName=r.DB_NAME,
            tableName=r.TBL_NAME,
            message=r.MESSAGE,
            messageFormat=r.MESSAGE_FORMAT,
            catName=getattr(r, "CAT_NAME", None),  # 3.x and 4.x
        )
        for r in rows
    ]
