"""The Hive Metastore backing-database tables that catalogd reads, in SQLAlchemy Core.

Only the columns catalogd reads are declared: a query names its columns, so
extra ones in a real schema do no harm, and column types are declared loosely
(DataNucleus-made and schematool-made schemas differ in widths and in int vs
bigint). Every table and column name is upper case, as HMS makes them;
SQLAlchemy quotes such names, which PostgreSQL needs and MySQL/MariaDB accept.

Three schema versions are read: 2.3.0, 3.1.0 and 4.0.0 (HMS 4.0.x writes
4.0.0). A column that a later version added is declared with the generation
that has it (``_since(3, ...)``); :class:`Layout` says which columns a schema
has (:meth:`Layout.columns`) and gives the databases of the one catalog
catalogd reads (:attr:`Layout.dbs`: 3.x and 4.x keep databases per catalog in
``DBS.CTLG_NAME``; catalogd reads the default catalog, ``hive``, as its Thrift
source does). :func:`layout_of` is the layout of a connection's database: it
reads ``VERSION`` once per database connection and refuses a schema whose
version is not in :data:`SUPPORTED_VERSIONS` (the layouts these queries were
written and tested against).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Column, Float, Integer, MetaData, String, Table, Text, select
from sqlalchemy.engine import Connection

from subscriber.protocol.errors import MetastoreError

__all__ = [
    "DEFAULT_CATALOG",
    "SUPPORTED_VERSIONS",
    "Layout",
    "check_version",
    "layout_of",
    "metadata",
]

# ``VERSION.SCHEMA_VERSION`` -> generation: 2 (HMS 2.3), 3 (3.1: catalogs, table owner
# types, grant authorizers, SerDe descriptions), 4 (4.0: write ids, database types and
# creation times, statistics per engine).
_GENERATIONS = {"2.3.0": 2, "3.1.0": 3, "4.0.0": 4}
SUPPORTED_VERSIONS = tuple(_GENERATIONS)
# The catalog HMS serves to clients that name none (``metastore.catalog.default``).
DEFAULT_CATALOG = "hive"

metadata = MetaData()


def _table(name: str, *columns: Column) -> Table:  # type: ignore[type-arg]
    return Table(name, metadata, *columns, quote=True)


def _id(name: str) -> Column:  # type: ignore[type-arg]
    return Column(name, BigInteger, quote=True)


def _int(name: str) -> Column:  # type: ignore[type-arg]
    return Column(name, Integer, quote=True)


def _str(name: str) -> Column:  # type: ignore[type-arg]
    return Column(name, String, quote=True)


def _text(name: str) -> Column:  # type: ignore[type-arg]
    return Column(name, Text, quote=True)


def _since(generation: int, column: Column) -> Column:  # type: ignore[type-arg]
    """``column``, which schemas of ``generation`` (3: HMS 3.1, 4: HMS 4.0) and later have."""
    column.info["since"] = generation
    return column


def _params(name: str, owner: str) -> Table:
    return _table(name, _id(owner), _str("PARAM_KEY"), _text("PARAM_VALUE"))


VERSION = _table("VERSION", _id("VER_ID"), _str("SCHEMA_VERSION"), _str("VERSION_COMMENT"))
DBS = _table(
    "DBS",
    _id("DB_ID"),
    _str("DESC"),
    _str("DB_LOCATION_URI"),
    _str("NAME"),
    _str("OWNER_NAME"),
    _str("OWNER_TYPE"),
    _since(3, _str("CTLG_NAME")),
    _since(4, _id("CREATE_TIME")),
    _since(4, _str("DB_MANAGED_LOCATION_URI")),
    _since(4, _str("TYPE")),
    _since(4, _str("DATACONNECTOR_NAME")),
    _since(4, _str("REMOTE_DBNAME")),
)
DATABASE_PARAMS = _params("DATABASE_PARAMS", "DB_ID")
TBLS = _table(
    "TBLS",
    _id("TBL_ID"),
    _int("CREATE_TIME"),
    _id("DB_ID"),
    _int("LAST_ACCESS_TIME"),
    _str("OWNER"),
    _int("RETENTION"),
    # Boolean in PostgreSQL, BIT(1) or a tinyint in MySQL: converted in Python.
    Column("IS_REWRITE_ENABLED", quote=True),
    _id("SD_ID"),
    _str("TBL_NAME"),
    _str("TBL_TYPE"),
    _text("VIEW_EXPANDED_TEXT"),
    _text("VIEW_ORIGINAL_TEXT"),
    _since(3, _str("OWNER_TYPE")),
    _since(4, _id("WRITE_ID")),
)
TABLE_PARAMS = _params("TABLE_PARAMS", "TBL_ID")
SDS = _table(
    "SDS",
    _id("SD_ID"),
    _id("CD_ID"),
    _str("INPUT_FORMAT"),
    Column("IS_COMPRESSED", quote=True),
    Column("IS_STOREDASSUBDIRECTORIES", quote=True),
    _str("LOCATION"),
    _int("NUM_BUCKETS"),
    _str("OUTPUT_FORMAT"),
    _id("SERDE_ID"),
)
SD_PARAMS = _params("SD_PARAMS", "SD_ID")
COLUMNS_V2 = _table(
    "COLUMNS_V2",
    _id("CD_ID"),
    _str("COMMENT"),
    _str("COLUMN_NAME"),
    _text("TYPE_NAME"),
    _int("INTEGER_IDX"),
)
SERDES = _table(
    "SERDES",
    _id("SERDE_ID"),
    _str("NAME"),
    _str("SLIB"),
    _since(3, _str("DESCRIPTION")),
    _since(3, _str("SERIALIZER_CLASS")),
    _since(3, _str("DESERIALIZER_CLASS")),
    _since(3, _int("SERDE_TYPE")),
)
SERDE_PARAMS = _params("SERDE_PARAMS", "SERDE_ID")
BUCKETING_COLS = _table(
    "BUCKETING_COLS", _id("SD_ID"), _str("BUCKET_COL_NAME"), _int("INTEGER_IDX")
)
SORT_COLS = _table(
    "SORT_COLS", _id("SD_ID"), _str("COLUMN_NAME"), _int("ORDER"), _int("INTEGER_IDX")
)
SKEWED_COL_NAMES = _table(
    "SKEWED_COL_NAMES", _id("SD_ID"), _str("SKEWED_COL_NAME"), _int("INTEGER_IDX")
)
SKEWED_VALUES = _table(
    "SKEWED_VALUES", _id("SD_ID_OID"), _id("STRING_LIST_ID_EID"), _int("INTEGER_IDX")
)
SKEWED_STRING_LIST_VALUES = _table(
    "SKEWED_STRING_LIST_VALUES",
    _id("STRING_LIST_ID"),
    _str("STRING_LIST_VALUE"),
    _int("INTEGER_IDX"),
)
PARTITION_KEYS = _table(
    "PARTITION_KEYS",
    _id("TBL_ID"),
    _str("PKEY_COMMENT"),
    _str("PKEY_NAME"),
    _str("PKEY_TYPE"),
    _int("INTEGER_IDX"),
)
PARTITIONS = _table(
    "PARTITIONS",
    _id("PART_ID"),
    _int("CREATE_TIME"),
    _int("LAST_ACCESS_TIME"),
    _str("PART_NAME"),
    _id("SD_ID"),
    _id("TBL_ID"),
    _since(4, _id("WRITE_ID")),
)
PARTITION_KEY_VALS = _table(
    "PARTITION_KEY_VALS", _id("PART_ID"), _str("PART_KEY_VAL"), _int("INTEGER_IDX")
)
PARTITION_PARAMS = _params("PARTITION_PARAMS", "PART_ID")
ROLES = _table("ROLES", _id("ROLE_ID"), _int("CREATE_TIME"), _str("OWNER_NAME"), _str("ROLE_NAME"))
ROLE_MAP = _table(
    "ROLE_MAP",
    _id("ROLE_GRANT_ID"),
    _int("ADD_TIME"),
    _int("GRANT_OPTION"),
    _str("GRANTOR"),
    _str("GRANTOR_TYPE"),
    _str("PRINCIPAL_NAME"),
    _str("PRINCIPAL_TYPE"),
    _id("ROLE_ID"),
)


def _privs(name: str, grant_id: str, privilege: str, *extra: Column) -> Table:  # type: ignore[type-arg]
    return _table(
        name,
        _id(grant_id),
        _int("CREATE_TIME"),
        _int("GRANT_OPTION"),
        _str("GRANTOR"),
        _str("GRANTOR_TYPE"),
        _str("PRINCIPAL_NAME"),
        _str("PRINCIPAL_TYPE"),
        _str(privilege),
        _since(3, _str("AUTHORIZER")),
        *extra,
    )


GLOBAL_PRIVS = _privs("GLOBAL_PRIVS", "USER_GRANT_ID", "USER_PRIV")
DB_PRIVS = _privs("DB_PRIVS", "DB_GRANT_ID", "DB_PRIV", _id("DB_ID"))
TBL_PRIVS = _privs("TBL_PRIVS", "TBL_GRANT_ID", "TBL_PRIV", _id("TBL_ID"))
TBL_COL_PRIVS = _privs(
    "TBL_COL_PRIVS", "TBL_COLUMN_GRANT_ID", "TBL_COL_PRIV", _id("TBL_ID"), _str("COLUMN_NAME")
)
PART_PRIVS = _privs("PART_PRIVS", "PART_GRANT_ID", "PART_PRIV", _id("PART_ID"))
PART_COL_PRIVS = _privs(
    "PART_COL_PRIVS", "PART_COLUMN_GRANT_ID", "PART_COL_PRIV", _id("PART_ID"), _str("COLUMN_NAME")
)
FUNCS = _table(
    "FUNCS",
    _id("FUNC_ID"),
    _str("CLASS_NAME"),
    _int("CREATE_TIME"),
    _id("DB_ID"),
    _str("FUNC_NAME"),
    _int("FUNC_TYPE"),
    _str("OWNER_NAME"),
    _str("OWNER_TYPE"),
)
FUNC_RU = _table(
    "FUNC_RU", _id("FUNC_ID"), _int("RESOURCE_TYPE"), _str("RESOURCE_URI"), _int("INTEGER_IDX")
)
TAB_COL_STATS = _table(
    "TAB_COL_STATS",
    _id("TBL_ID"),
    _str("COLUMN_NAME"),
    _str("COLUMN_TYPE"),
    _id("LONG_LOW_VALUE"),
    _id("LONG_HIGH_VALUE"),
    Column("DOUBLE_LOW_VALUE", Float, quote=True),
    Column("DOUBLE_HIGH_VALUE", Float, quote=True),
    _str("BIG_DECIMAL_LOW_VALUE"),
    _str("BIG_DECIMAL_HIGH_VALUE"),
    _id("NUM_NULLS"),
    _id("NUM_DISTINCTS"),
    Column("AVG_COL_LEN", Float, quote=True),
    _id("MAX_COL_LEN"),
    _id("NUM_TRUES"),
    _id("NUM_FALSES"),
    _since(4, _str("ENGINE")),
)
NOTIFICATION_LOG = _table(
    "NOTIFICATION_LOG",
    _id("NL_ID"),
    _str("DB_NAME"),
    _id("EVENT_ID"),
    _int("EVENT_TIME"),
    _str("EVENT_TYPE"),
    _text("MESSAGE"),
    _str("MESSAGE_FORMAT"),
    _str("TBL_NAME"),
    _since(3, _str("CAT_NAME")),
)
NOTIFICATION_SEQUENCE = _table("NOTIFICATION_SEQUENCE", _id("NNI_ID"), _id("NEXT_EVENT_ID"))


@dataclass(frozen=True)
class Layout:
    """What one schema version holds, for the queries over it.

    Args:
        version: ``VERSION.SCHEMA_VERSION`` (one of :data:`SUPPORTED_VERSIONS`).
        catalog: the catalog whose databases are read (3.x and 4.x schemas).
    """

    version: str
    catalog: str = DEFAULT_CATALOG

    @property
    def generation(self) -> int:
        """2, 3 or 4: the HMS major version whose schema this is."""
        return _GENERATIONS[self.version]

    def columns(self, table: Table) -> list[Any]:
        """The declared columns of ``table`` that this schema has, in declared order."""
        return [c for c in table.c if c.info.get("since", 2) <= self.generation]

    @functools.cached_property
    def dbs(self) -> Any:
        """``DBS`` as this schema has it, limited to :attr:`catalog`'s databases: use it
        (its ``.c``) wherever a query would name ``DBS``."""
        query = select(*self.columns(DBS))
        if self.generation >= 3:
            query = query.where(DBS.c.CTLG_NAME == self.catalog)  # noqa: SIM300
        return query.subquery("CATALOG_DBS")


_LAYOUT_KEY = "catalogd_hms_layout"


def layout_of(conn: Connection, where: str = "the metastore database") -> Layout:
    """The :class:`Layout` of ``conn``'s database: ``VERSION`` is read once per database
    connection (kept in its ``info``) and checked as :func:`check_version` does.

    Raises:
        MetastoreError, sqlalchemy.exc.DBAPIError: as :func:`check_version`.
    """
    layout = conn.info.get(_LAYOUT_KEY)
    if layout is None:
        layout = conn.info[_LAYOUT_KEY] = Layout(check_version(conn, where))
    return layout  # type: ignore[no-any-return]


def check_version(conn: Connection, where: str) -> str:
    """Return the schema version in ``VERSION``; refuse one catalogd cannot read.

    Args:
        conn: an open connection to the metastore database.
        where: the database, for messages (no password).

    Raises:
        MetastoreError: no ``VERSION`` row, or a version not in
            :data:`SUPPORTED_VERSIONS` (the message names both).
        sqlalchemy.exc.DBAPIError: the query failed (no ``VERSION`` table: the
            caller maps it to "not a metastore").
    """
    rows = conn.execute(select(VERSION.c.SCHEMA_VERSION)).scalars().all()
    supported = ", ".join(SUPPORTED_VERSIONS)
    if not rows:
        raise MetastoreError(f"{where} has an empty VERSION table; supported: {supported}")
    version = str(rows[0])
    if version not in SUPPORTED_VERSIONS:
        raise MetastoreError(
            f"{where} holds Hive Metastore schema version {version}, which catalogd cannot "
            f"read directly (supported: {supported}); use --hms thrift://... instead"
        )
    return version
