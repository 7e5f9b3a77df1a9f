"""Reading Hive Metastore metadata straight from its backing database (``--hms-db``).

:mod:`.schema` declares the HMS tables (SQLAlchemy Core; 2.3, 3.1 and 4.0) and checks the
schema version; :mod:`.structs` assembles storage descriptors and parameter
maps set by set; :mod:`.tables` reads databases and tables, :mod:`.partitions`
partitions (in batches, by name, by ``PART_ID`` range, several tables at once),
:mod:`.notifications` the notification log, :mod:`.grants` roles, grants and
functions, :mod:`.column_stats` table column statistics; :mod:`.fingerprints`
summarizes the metastore for change detection. :mod:`.source` is
:class:`SqlSource`, the :class:`~catalogd.sources.BulkSource` over all of them
(engine, read-only sessions, connections, error mapping).
"""

from catalogd.sources.sql.source import SqlSource

__all__ = ["SqlSource"]
