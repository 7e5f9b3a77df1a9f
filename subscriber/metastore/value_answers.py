"""``get_partition_values`` answered from a cache view, as HMS answers it (pure).

A handler group of :class:`~subscriber.metastore.answers.CacheAnswers` (shared
lookups: :class:`~subscriber.metastore.lookups.Lookups`). What HMS does, read in
``ObjectStore.listPartitionValues`` of 2.3.10 (the pyspark wheel's, which has the
method: HIVE-17466 is in 2.3), 3.1.3 and 4.0.1 (the same logic in all three) and checked
against each (``tests/integration/test_hms_endpoint_specs.py``):

* **No filter** (absent or ``""``): the values of the asked keys with or without SQL
  ``DISTINCT`` and *no* ``ORDER BY``: the backing database's row order (measured on
  Derby: ``DISTINCT`` comes sorted, without it creation order; ``ascending`` is not
  read). Forwarded.
* **A filter**: the names of the matching partitions, ``ORDER BY partitionName``
  ascending or descending, at most ``maxParts`` (negative: all), then, for
  ``ascending=false``, sorted again in Java's reverse ``String`` order; each row is
  *every* value of the partition (``Warehouse.makeValsFromName``), whatever
  ``partitionKeys`` asked; ``applyDistinct`` and ``partitionOrder`` are not read.
  String filters run as JDOQL; one on an integral key fails there and HMS falls back to
  ``getPartitionsByFilter`` (``maxParts`` cast to ``short``, the first names
  *ascending*): so a descending answer cut short by ``maxParts``, and a ``maxParts``
  outside a ``short``, are forwarded. The filter is evaluated by
  :mod:`~subscriber.metastore.filters` (what it cannot evaluate exactly is forwarded).

The database and table names are lower-cased and trimmed by HMS; names needing either
beyond ASCII lower-casing are forwarded, as are a missing table (HMS wraps a null
pointer in a ``MetaException``), another catalog, ``validWriteIdList``, and no
``partitionKeys`` (HMS reads the first one before anything else).
"""

from __future__ import annotations

from typing import Any

import idl
from subscriber.cache import CacheView
from subscriber.metastore import filters
from subscriber.metastore.framing import success_struct
from subscriber.metastore.lookups import Handler, Lookups
from subscriber.metastore.shapes import Forward
from subscriber.protocol import codec
from subscriber.protocol.binary import STRUCT

__all__ = ["ValueAnswers", "java_string_key"]

hms = idl.hive_metastore
_SHORT = range(-0x8000, 0x8000)


def java_string_key(text: str) -> bytes:
    """Orders strings as Java's ``String.compareTo`` does (by UTF-16 code unit)."""
    return text.encode("utf-16-be", "surrogatepass")


class ValueAnswers:
    """The partition-value handlers over shared :class:`Lookups`."""

    def __init__(self, lookups: Lookups) -> None:
        self._lookups = lookups

    def handlers(self) -> dict[str, Handler]:
        return {"get_partition_values": self._get_partition_values}

    def _get_partition_values(self, view: CacheView, args: Any) -> bytes:
        req = args.request
        if req is None:
            raise Forward("no request")
        if self._lookups.upstream_reads_catalogs is None:
            raise Forward("the upstream HMS's version is not known yet")
        if req.catName is not None and req.catName.lower() != "hive":
            raise Forward(f"catalog {req.catName!r}")
        if req.validWriteIdList is not None:
            raise Forward("a write-id list")
        if not req.partitionKeys:
            raise Forward("no partition keys: HMS's own error")
        if not req.filter:
            raise Forward("no filter: HMS lists values in its database's row order")
        max_parts = -1 if req.maxParts is None else req.maxParts
        if max_parts not in _SHORT:
            raise Forward("maxParts outside a Java short: HMS's paths differ")
        db, name = req.dbName or "", req.tblName or ""
        if not (db.isascii() and name.isascii()) or db != db.strip() or name != name.strip():
            raise Forward("names HMS trims or lower-cases beyond ASCII")
        table, rows = self._lookups.partitioned(view, db, name)
        columns = [(k.name, k.type) for k in table.partitionKeys or []]
        try:
            predicate = filters.compile_filter(filters.parse(req.filter), columns)
        except filters.Unsupported as exc:
            raise Forward(f"filter {req.filter!r}: {exc}") from exc
        found = [row for row in rows.rows if predicate(row[1])]
        if req.ascending is False:
            if 0 <= max_parts < len(found):
                raise Forward("descending and cut by maxParts: HMS's paths differ")
            found.sort(key=lambda row: java_string_key(row[0]), reverse=True)
        elif max_parts >= 0:
            found = found[:max_parts]
        response = hms.PartitionValuesResponse(
            partitionValues=[hms.PartitionValuesRow(row=list(row[1])) for row in found]
        )
        return success_struct(STRUCT, codec.encode(response, check=False))
