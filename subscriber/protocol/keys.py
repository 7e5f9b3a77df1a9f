"""Catalog object keys: Impala's topic-key scheme, as values.

Every object in the catalog is addressed by a string key built the way Impala's
catalogd builds its statestore topic keys (``Catalog.toCatalogObjectKey``)::

    DATABASE:sales
    TABLE:sales.orders            VIEW:sales.recent_orders
    HDFS_PARTITION:sales.orders:dt=2024-01-01/region=eu
    FUNCTION:sales.my_udf(signature)
    PRINCIPAL:analyst.ROLE        PRIVILEGE:server=server1->db=sales.3.ROLE
    HDFS_CACHE_POOL:pool1

Invariants:

* database, table, view and pool names are lower-cased (HMS is case-insensitive
  for them); partition names keep their case and HMS escaping (``k=v/k2=v2``).
* A key names at most one database, readable from the key alone
  (:func:`database_of`), so a publisher can route an entry to its database's
  topic without decoding it. Keys of global objects (principals, privileges,
  cache pools) belong to database ``""``.

Pure functions only; no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from subscriber.protocol.errors import InvalidRequestError

GLOBAL = ""
"""The pseudo-database of objects that belong to no database."""

# Every key starts with its object type and a colon; these prefixes select one type.
DATABASE_PREFIX = "DATABASE:"
TABLE_PREFIX = "TABLE:"
VIEW_PREFIX = "VIEW:"
PARTITION_PREFIX = "HDFS_PARTITION:"
FUNCTION_PREFIX = "FUNCTION:"
PRINCIPAL_PREFIX = "PRINCIPAL:"
PRIVILEGE_PREFIX = "PRIVILEGE:"
CACHE_POOL_PREFIX = "HDFS_CACHE_POOL:"
_PARTITION_PREFIX_LEN = len(PARTITION_PREFIX)
AUTHORIZATION_PREFIXES = (PRINCIPAL_PREFIX, PRIVILEGE_PREFIX)
"""Roles, users, groups and their grants: what a privileges reload replaces."""

# Object types whose key carries a database name right after the colon.
_DB_SCOPED = ("DATABASE", "TABLE", "VIEW", "HDFS_PARTITION", "FUNCTION")


def database_key(db: str) -> str:
    return f"{DATABASE_PREFIX}{db.lower()}"


def table_key(db: str, table: str, *, view: bool = False) -> str:
    return f"{VIEW_PREFIX if view else TABLE_PREFIX}{db.lower()}.{table.lower()}"


def partition_key(db: str, table: str, partition_name: str) -> str:
    return f"{partition_prefix(db, table)}{partition_name}"


def partition_prefix(db: str, table: str) -> str:
    """The prefix shared by every partition key of one table."""
    return f"{PARTITION_PREFIX}{db.lower()}.{table.lower()}:"


def split_partition_key(key: str) -> tuple[str, str]:
    """``HDFS_PARTITION:db.t:k=v`` -> (``db.t``, ``k=v``): the inverse of
    :func:`partition_key` (names as stored). ``key`` must start with
    :data:`PARTITION_PREFIX`; nothing else is checked (it runs once per cached entry)."""
    table, _, name = key[_PARTITION_PREFIX_LEN:].partition(":")
    return table, name


def function_key(db: str, name: str, signature: str) -> str:
    return f"{FUNCTION_PREFIX}{db.lower()}.{name.lower()}({signature})"


def principal_key(name: str, principal_type: str) -> str:
    # Role names are case-insensitive in HMS, user names are not.
    return (
        f"{PRINCIPAL_PREFIX}{name.lower() if principal_type == 'ROLE' else name}.{principal_type}"
    )


def privilege_key(privilege_name: str, principal_id: int, principal_type: str) -> str:
    return f"{PRIVILEGE_PREFIX}{privilege_name.lower()}.{principal_id}.{principal_type}"


def cache_pool_key(pool: str) -> str:
    return f"{CACHE_POOL_PREFIX}{pool.lower()}"


def object_type_of(key: str) -> str:
    """The TCatalogObjectType name a key starts with (``"TABLE"`` for ``TABLE:a.b``)."""
    return key.partition(":")[0]


def database_of(key: str) -> str:
    """The database a key belongs to, or :data:`GLOBAL` for global objects."""
    kind, _, rest = key.partition(":")
    if kind not in _DB_SCOPED:
        return GLOBAL
    if kind == "DATABASE":
        return rest
    return rest.partition(".")[0]


@dataclass(frozen=True, slots=True)
class TableName:
    """A fully qualified, lower-cased table (or view) name."""

    db: str
    table: str

    @classmethod
    def parse(cls, text: str) -> TableName:
        """Parse ``"db.table"``.

        Raises:
            InvalidRequestError: when the text is not exactly two non-empty
                dot-separated parts.
        """
        db, dot, table = text.strip().partition(".")
        if not dot or not db or not table or "." in table:
            raise InvalidRequestError(f"expected a table name of the form DB.TABLE, got {text!r}")
        return cls(db.lower(), table.lower())

    def __str__(self) -> str:
        return f"{self.db}.{self.table}"


# Hive escapes these characters in partition path names (FileUtils.escapePathName);
# '%' itself and control characters are escaped too.
_HIVE_ESCAPED = set("\"#%'*/:=?\\\x7f{[]^")


def escape_partition_value(value: str) -> str:
    """Escape one partition value the way Hive writes it into a partition name."""
    return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPED or ord(c) < 0x20 else c for c in value)


_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")


def unescape_partition_value(text: str) -> str:
    """Reverse :func:`escape_partition_value` (``%3D`` becomes ``=``)."""
    if "%" not in text:  # most values: no regex pass
        return text
    return _PERCENT.sub(lambda m: chr(int(m.group(1), 16)), text)


def make_partition_name(
    columns: list[str] | tuple[str, ...], values: list[str] | tuple[str, ...]
) -> str:
    """Build an HMS partition name (``k=v/k2=v2``) from columns and values."""
    if len(columns) != len(values):
        raise InvalidRequestError(
            f"{len(values)} partition values for {len(columns)} partition columns"
        )
    return "/".join(
        f"{escape_partition_value(c.lower())}={escape_partition_value(v)}"
        for c, v in zip(columns, values, strict=True)
    )


def parse_partition_name(name: str) -> tuple[tuple[str, str], ...]:
    """Split an HMS partition name into ``((column, value), ...)``, unescaped.

    Raises:
        InvalidRequestError: when a component is not of the form ``k=v``.
    """
    if not name:
        raise InvalidRequestError("empty partition spec; expected the form k=v/k2=v2")
    pairs = []
    for part in name.split("/"):
        column, eq, value = part.partition("=")
        if not eq or not column:
            raise InvalidRequestError(
                f"malformed partition spec {name!r}: expected the form k=v/k2=v2"
            )
        pairs.append((unescape_partition_value(column).lower(), unescape_partition_value(value)))
    return tuple(pairs)
