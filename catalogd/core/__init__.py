"""The pure core of catalogd: no sockets, threads, clocks or databases.

* :mod:`catalogd.core.catalog` -- the versioned catalog: one monotonic version
  counter, tombstones, ``delta_since(v)`` and snapshots.
* :mod:`catalogd.core.plans` -- what a reload, invalidate or refresh changes,
  computed from the catalog and what HMS said (run on the server thread).
* :mod:`catalogd.core.placeholders` -- stable object ids and the placeholder
  ``TABLE`` object of a table not loaded yet.
* :mod:`catalogd.core.cache_pools` -- cache pools and cache marks as catalog
  objects.

Everything here is called by exactly one thread (the server thread owns the
catalog); ``tests/unit/test_boundaries.py`` checks that importing the package
loads no I/O module.
"""
