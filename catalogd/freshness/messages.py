"""What an HMS notification event's message says beyond its header (pure).

catalogd acts on an event's header (type, database, table): a reload of the table
named there finds everything else. One fact is only in the message: the name an
``ALTER_TABLE`` event's table had *before* the change. HMS names the event after the
new table, so a rename into another database (``ALTER TABLE a.t RENAME TO b.t``)
would leave ``a.t`` behind if only ``b`` were listed again.

Message encodings read here, as HMS writes them (checked against the real encoders):

* ``json-0.2`` (HMS 2.3 and 3.1's ``JSONMessageFactory`` / ``JSONMessageEncoder``,
  catalogd's own 2.3 listener): a JSON object;
* ``gzip(json-2.0)`` (HMS 4's ``GzipJSONMessageEncoder``): that JSON, gzip-compressed,
  then Base64 (standard alphabet).

An ``ALTER_TABLE`` message's ``db`` and ``table`` are the table's names before the
change in both. A message that cannot be read (another encoding, corrupt) is reported
as such; the caller then lists every database again rather than guess.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from typing import Any

__all__ = ["MAX_MESSAGE_BYTES", "UNREADABLE", "Unreadable", "table_before"]

MAX_MESSAGE_BYTES = 64 << 20
"""The most a compressed message may expand to (a table with many columns is ~100 KB)."""


class Unreadable:
    """The message could not be read (see :data:`UNREADABLE`)."""

    def __repr__(self) -> str:
        return "UNREADABLE"


UNREADABLE = Unreadable()


def table_before(event: Any) -> tuple[str, str] | Unreadable:
    """(db, table), lower case, that an ``ALTER_TABLE`` event's table was named before;
    :data:`UNREADABLE` when its message cannot be read."""
    body = _json(event.messageFormat or "", event.message or "")
    if not isinstance(body, dict):
        return UNREADABLE
    db, table = body.get("db"), body.get("table")
    if not (isinstance(db, str) and isinstance(table, str) and db and table):
        return UNREADABLE
    return db.lower(), table.lower()


def _json(message_format: str, message: str) -> Any:
    text: str | None = message
    if message_format.startswith("gzip(") or not message.lstrip().startswith("{"):
        text = _gunzip(message)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _gunzip(message: str) -> str | None:
    try:
        packed = base64.b64decode(message, validate=True)
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip framing
        data = inflater.decompress(packed, MAX_MESSAGE_BYTES)
        if inflater.unconsumed_tail or not inflater.eof:
            return None  # larger than the bound, or truncated
        return data.decode()
    except (binascii.Error, ValueError, zlib.error, UnicodeDecodeError):
        return None
