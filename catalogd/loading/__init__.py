"""Loading tables: lazy and urgent table loads, load worker processes, progress.

- :mod:`.table_loader`: ``TableLoader``, a pool of ``catalogd-loader-N`` threads
  turning placeholders into loaded tables (background, and urgent for a
  subscriber's load request).
- :mod:`.workers`: ``LoadWorkers``, processes that read and convert large
  tables beside the daemon.
- :mod:`.progress`: ``LoadProgress``, what the initial load has done (status).
"""
