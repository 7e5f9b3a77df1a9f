"""An HMS-compatible Thrift endpoint backed by the subscriber's cache.

Unmodified HMS clients (Spark with ``enableHiveSupport()``, Hive, Trino) point
``hive.metastore.uris`` at it: the reads they make are answered from the local
cache, everything else is forwarded to the real HMS. Parts:

* :mod:`~subscriber.metastore.framing` (pure) -- binary-protocol messages as bytes;
* :mod:`~subscriber.metastore.filters` (pure) -- ``get_partitions_by_filter`` strings;
* :mod:`~subscriber.metastore.answers` (pure) -- read calls answered from a cache view;
* :mod:`~subscriber.metastore.writes` (pure) -- what a forwarded write touched;
* :mod:`~subscriber.metastore.replies` (pure) -- call arguments and replies the endpoint makes;
* :mod:`~subscriber.metastore.session` (pure) -- the locks and transactions a connection holds;
* :mod:`~subscriber.metastore.freshness` (pure) -- does a forwarded read show the cache behind?
* :mod:`~subscriber.metastore.counters` -- calls per method, served or forwarded and why;
* :mod:`~subscriber.metastore.upstream` -- one connection to the real HMS;
* :mod:`~subscriber.metastore.endpoint` (threads) -- the server, policy and counters.

Which calls are served and from where: ``docs/HMS-ENDPOINT.md``.
"""

from subscriber.metastore.endpoint import EndpointConfig, EndpointStats, MetastoreEndpoint

__all__ = ["EndpointConfig", "EndpointStats", "MetastoreEndpoint"]
