"""Where catalogd reads metadata from: the :class:`MetastoreSource` protocol and its sources.

:mod:`.protocol` is the seam; :mod:`.thrift` reads a real HMS over Thrift,
:mod:`.sql` its backing database, :mod:`.memory` structs held in memory;
:mod:`.objects` turns what any of them returns into catalog objects (through
:mod:`catalogd.conversion`). The HMS Thrift client and the code that runs an
HMS live in :mod:`catalogd.hms`.
"""

from catalogd.sources.memory import InMemorySource
from catalogd.sources.objects import (
    LoadStats,
    column_stats_of,
    hms_table,
    load_catalog,
    load_database,
    load_table,
    load_table_objects,
)
from catalogd.sources.protocol import BulkSource, MetastoreSource, bulk
from catalogd.sources.thrift import ThriftSource

__all__ = [
    "InMemorySource",
    "LoadStats",
    "BulkSource",
    "MetastoreSource",
    "ThriftSource",
    "bulk",
    "column_stats_of",
    "hms_table",
    "load_catalog",
    "load_database",
    "load_table",
    "load_table_objects",
]
