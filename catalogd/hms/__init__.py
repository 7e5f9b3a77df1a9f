"""Talking to and running a Hive Metastore.

- :mod:`.client`: ``MetastoreClient``, the thin HMS Thrift client with retries
  (used by the Thrift source, the stats job and the demo).
- :mod:`.connection`: which HMS catalogd talks to (configured, or embedded and
  supervised), the instrumented client.
- :mod:`.embedded`: a real HMS run as a child JVM (Derby, PostgreSQL, MariaDB).
- :mod:`.listener` and :mod:`.java`: the Java sources compiled at run time
  (catalogd's notification listener, the loopback agent).
- :mod:`.demo` and :mod:`.builders`: the demo warehouse and the HMS structs it,
  the tests and the benchmarks create tables with.

Reading metadata is :mod:`catalogd.sources`; turning it into catalog objects is
:mod:`catalogd.conversion`.
"""
