"""High availability: one active catalogd, standbys, a fenced lease in the state store.

* :mod:`catalogd.ha.lease` (pure): what to write to the lease row, and which role
  this process holds, given the row, the clocks (passed in) and the settings.
* :mod:`catalogd.ha.keeper` (thread): renews or acquires the lease every
  ``renew_interval_s`` through :mod:`catalogd.state.lease`, and tells the daemon
  when its role changes.

The design and its bounds: docs/DESIGN.md, "High availability".
"""
