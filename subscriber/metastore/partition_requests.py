"""Hive 4's request-style partition reads answered from a cache view (pure), by the
handlers of their HMS 2.x forms: ``fetch_partition_names_req``,
``get_partition_names_ps_req``, ``get_partitions_by_filter_req`` and
``get_partitions_by_names_req`` (what Spark's Hive 4.0.1 client sends for ``SHOW
PARTITIONS``, an ``INSERT`` into a partial spec, a pruned and a full scan).

A handler group of :class:`~subscriber.metastore.answers.CacheAnswers`. HMS 4.0's
``HMSHandler`` runs each request through the same store call as the old method of the
same name (``listPartitionNames``, ``listPartitionNamesPs``, ``getPartitionsByFilter``,
``getPartitionsByNames``), so the old handler's rows, order and ``max_parts`` rules are
the answer; checked call by call against a real HMS 4.0.1
(``tests/integration/test_hms_endpoint_requests.py``, ``HMS_ENDPOINT_ALL_VERSIONS=1``).

Served only against an HMS that has these calls (probed: HMS 4.0+; before, HMS's
"Invalid method name" is the answer, forwarded), for the ``hive`` catalog and a plain
request: anything the cache cannot honour (``validWriteIdList``, a table ``id``,
processor capabilities, column statistics, file metadata, a column-less or
parameter-filtered partition form, an engine -- except a by-names request's, which
HMS reads for column statistics only) is forwarded. So is a table the cache
does not hold: HMS 4's messages for a missing table are not HMS 2.3's, and the
forward gives HMS's own.
"""

from __future__ import annotations

from typing import Any

import idl
from subscriber.cache import CacheView
from subscriber.metastore import shapes
from subscriber.metastore.framing import success_struct
from subscriber.metastore.lookups import Handler, Lookups
from subscriber.metastore.shapes import Forward
from subscriber.protocol import codec
from subscriber.protocol.binary import STRUCT

__all__ = ["PartitionRequests"]

hms = idl.hive_metastore
_SERVICE = hms.ThriftHiveMetastore
_CATALOG = "hive"
# Request fields the cache cannot honour: forwarded when set (false/empty is unset).
_UNHONOURED = (
    "validWriteIdList",
    "id",
    "processorCapabilities",
    "processorIdentifier",
    "get_col_stats",
    "getFileMetadata",
    "engine",
    "skipColumnSchemaForPartition",
    "includeParamKeyPattern",
    "excludeParamKeyPattern",
)


class PartitionRequests:
    """The request-style partition handlers over shared :class:`Lookups`."""

    def __init__(self, lookups: Lookups) -> None:
        self._lookups = lookups

    def handlers(self) -> dict[str, Handler]:
        return {
            "fetch_partition_names_req": self._fetch_partition_names_req,
            "get_partition_names_ps_req": self._get_partition_names_ps_req,
            "get_partitions_by_filter_req": self._get_partitions_by_filter_req,
            "get_partitions_by_names_req": self._get_partitions_by_names_req,
        }

    def _plain(self, view: CacheView, request: Any, db: str | None, table: str | None) -> None:
        """Forward unless the request is one the old call answers the same way."""
        if self._lookups.upstream_serves_requests is not True:
            raise Forward("the upstream HMS may not have this call (HMS 4.0+)")
        if request is None or not db or not table:
            raise Forward("no request, database or table: HMS's own error")
        catalog = getattr(request, "catName", _CATALOG)  # by-names requests have none
        if catalog is None or catalog.lower() != _CATALOG:
            # HMS 4.0.1 (measured): no catName is a MetaException; another catalog is
            # another catalog's partitions.
            raise Forward(f"catalog {catalog!r}: catalogd mirrors {_CATALOG!r}")
        if db.startswith("@"):
            raise Forward("a catalog-qualified name in a request that names its catalog")
        for field in _UNHONOURED:
            value = getattr(request, field, None)
            if field == "engine" and hasattr(request, "get_col_stats"):
                # HMS 4.0.1 reads a by-names request's engine for its column statistics
                # only (Spark's Hive 4 client sends "hive" without asking for them).
                continue  # get_col_stats itself is unhonoured
            if value not in (None, False, [], "", -1):
                raise Forward(f"{field} set: the cache cannot honour it")
        self._lookups.partitioned(view, db, table)  # a missing table: HMS's own message

    def _old(self, view: CacheView, method: str, **args: Any) -> bytes:
        return self._lookups.answer(view, method, getattr(_SERVICE, f"{method}_args")(**args))

    def _fetch_partition_names_req(self, view: CacheView, args: Any) -> bytes:
        req = args.partitionReq
        self._plain(view, req, req and req.dbName, req and req.tblName)
        if req.maxParts == 0:
            return shapes.strings([])  # HMS 4.0.1 (measured): 0 is none here, all in 2.3's call
        max_parts = -1 if req.maxParts is None else req.maxParts
        return self._old(
            view, "get_partition_names", db_name=req.dbName, tbl_name=req.tblName,
            max_parts=max_parts,
        )  # fmt: skip

    def _get_partition_names_ps_req(self, view: CacheView, args: Any) -> bytes:
        req = args.req
        self._plain(view, req, req and req.dbName, req and req.tblName)
        max_parts = -1 if req.maxParts is None else req.maxParts
        names = _success(
            "get_partition_names_ps",
            self._old(
                view,
                "get_partition_names_ps",
                db_name=req.dbName,
                tbl_name=req.tblName,
                part_vals=req.partValues,
                max_parts=max_parts,
            ),  # fmt: skip
        )
        response = hms.GetPartitionNamesPsResponse(names=names)
        return success_struct(STRUCT, codec.encode(response, check=False))

    def _get_partitions_by_filter_req(self, view: CacheView, args: Any) -> bytes:
        req = args.req
        self._plain(view, req, req and req.dbName, req and req.tblName)
        max_parts = -1 if req.maxParts is None else req.maxParts
        return self._old(
            view, "get_partitions_by_filter", db_name=req.dbName, tbl_name=req.tblName,
            filter=req.filter, max_parts=max_parts,
        )  # fmt: skip

    def _get_partitions_by_names_req(self, view: CacheView, args: Any) -> bytes:
        req = args.req
        self._plain(view, req, req and req.db_name, req and req.tbl_name)
        partitions = _success(
            "get_partitions_by_names",
            self._old(
                view,
                "get_partitions_by_names",
                db_name=req.db_name,
                tbl_name=req.tbl_name,
                names=req.names,
            ),  # fmt: skip
        )
        result = hms.GetPartitionsByNamesResult(partitions=partitions)
        return success_struct(STRUCT, codec.encode(result, check=False))


def _success(method: str, result: bytes) -> Any:
    """The ``success`` value of an encoded ``<method>_result`` (an old handler's answer)."""
    return codec.decode(getattr(_SERVICE, f"{method}_result"), result).success
