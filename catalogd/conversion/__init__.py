"""Hive Metastore structs to Impala catalog objects (pure: no I/O).

- :mod:`.objects`: databases, tables, views, partitions and functions.
- :mod:`.column_stats`: HMS and Spark column statistics to ``TColumnStats``.
- :mod:`.grants`: roles and grants to ``PRINCIPAL``/``PRIVILEGE`` objects (the
  reads go through an injected reader).
"""
