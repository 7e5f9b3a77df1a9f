"""Reading Hive Metastore metadata straight from its backing database (``--hms-db``).

:mod:`.schema` declares the HMS 2.3 tables (SQLAlchemy Core) and checks the
schema version; :mod:`.structs` assembles storage descriptors and parameter
maps set by set; :mod:`.grants` reads roles, grants and functions;
:mod:`.source` is :class:`SqlSource`, the
:class:`~catalogd.sources.MetastoreSource` over all of them.
"""

from catalogd.sources.sql.source import SqlSource

__all__ = ["SqlSource"]
