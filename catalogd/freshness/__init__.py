"""Keeping the catalog fresh: reading HMS and publishing what changed.

Modules:

- :mod:`~catalogd.freshness.operations`: ``Operations``, the one way into the
  catalog for everyone outside the server thread: reads HMS in the caller's
  thread, then one submission to the server thread plans, commits and answers
  the published version; plus the catalog reads the others need. No thread.
- :mod:`~catalogd.freshness.table_loader`: ``TableLoader``, a pool of
  ``catalogd-loader-N`` threads turning placeholders into loaded tables
  (background, and urgent for a subscriber's load request).
- :mod:`~catalogd.freshness.detector`: ``ChangeDetector``, the
  ``catalogd-detector`` thread: each interval, an events or a polling cycle
  (mode chosen per cycle), and the privileges reload.
- :mod:`~catalogd.freshness.events`: which HMS notification events are new
  (``EventWindow``, pure, the time passed in) and what they ask to reload.
- :mod:`~catalogd.freshness.polling`: ``Poller``: names every cycle, then table
  fingerprints in a rotation bounded by a call budget. No thread.
- :mod:`~catalogd.freshness.budget`: ``CallBudget``, at most N HMS calls per
  second (clock and sleep passed in). No thread.
"""
