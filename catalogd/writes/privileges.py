"""What a privileges reload asks HMS about, read from the catalog.

HMS 2.3 cannot list the principals that hold grants, so
:meth:`Operations.load_privileges <catalogd.writes.operations.Operations.load_privileges>`
asks, per object, who holds grants on it: the objects come from the catalog
(:func:`grant_subjects`, run on the server thread), and the owners of databases and
loaded tables hold Spark's owner grants (:func:`decode_owners`, in the caller's thread).
"""

from __future__ import annotations

from typing import Any

from catalogd.core import plans
from catalogd.core.catalog import Catalog
from subscriber.protocol import codec
from subscriber.protocol.keys import DATABASE_PREFIX, TABLE_PREFIX

Subjects = tuple[list[bytes], list[tuple[str, str | None]]]


def grant_subjects(catalog: Catalog) -> Subjects:
    """Server thread: the encoded DATABASE and TABLE headers (decoded by the caller,
    for their owners) and (db, None) for every database and (db, table) for every
    table and view."""
    payloads = [
        e.payload
        for e in catalog.live_entries()
        if e.payload is not None and e.key.startswith((DATABASE_PREFIX, TABLE_PREFIX))
    ]
    names: list[tuple[str, str | None]] = []
    for key in catalog.keys_with_prefix(DATABASE_PREFIX):
        db = key.partition(":")[2]
        names.append((db, None))
        names.extend((db, t) for t in sorted(plans.table_names_of(catalog, db)))
    return payloads, names


def decode_owners(payloads: list[bytes]) -> list[Any]:
    """Databases and loaded tables among ``payloads``: their owners hold owner grants."""
    objects = []
    for payload in payloads:
        obj = codec.decode_object(payload)
        if obj.db is not None or (obj.table is not None and obj.table.metastore_table):
            objects.append(obj)
    return objects
