"""catalogd's persistent state in one SQL database (SQLite by default).

* :mod:`catalogd.state.store` -- :class:`~catalogd.state.store.StateStore`: the
  version high-water mark, cache pools, cache marks and the admin audit log;
  its transactions, fencing and error mapping.
* :mod:`catalogd.state.pools`, :mod:`catalogd.state.audit_log` -- the SQL of cache
  pools and marks, and of the audit log, inside the store's transactions.
* :mod:`catalogd.state.fencing`, :mod:`catalogd.state.lease` -- the HA lease and the
  epoch check that fences writes.
* :mod:`catalogd.state.schema` -- engine settings per backend, tables, schema
  upgrades and the mapping of driver errors to our exception tree.
* :mod:`catalogd.state.values` -- the frozen values the store returns and the
  checks on what it is given (pure; the core uses them too).
"""
