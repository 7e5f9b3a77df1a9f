"""Keeping the catalog fresh: finding what changed in HMS and asking for reloads.

Every reload goes through :mod:`catalogd.writes` (the write path); loading
tables is :mod:`catalogd.loading`.

Modules:

- :mod:`~catalogd.freshness.detector`: ``ChangeDetector``, the
  ``catalogd-detector`` thread: each interval, an events or a polling cycle
  (mode chosen per cycle), and the privileges reload.
- :mod:`~catalogd.freshness.events`: which HMS notification events are new
  (``EventWindow``, pure, the time passed in) and what they ask to reload.
- :mod:`~catalogd.freshness.polling`: ``Poller``: names every cycle, then table
  fingerprints in a rotation bounded by a call budget. No thread.
- :mod:`~catalogd.freshness.sql_detection`: ``SqlPoller``, fingerprints
  aggregated in the HMS backing database.
- :mod:`~catalogd.freshness.files`: watching table files for changes.
- :mod:`~catalogd.freshness.budget`: ``CallBudget``, at most N HMS calls per
  second (clock and sleep passed in). No thread.
- :mod:`~catalogd.freshness.order_learner`: ``TableOrderLearner``, the
  ``catalogd-orders`` thread: HMS's row order of each changed database's tables,
  learnt and published for HMS endpoints (the rules: :mod:`catalogd.core.table_orders`).
"""
