"""Loading tables: lazy and urgent table loads, load worker processes, progress.

- :mod:`.table_loader`: ``TableLoader``, a pool of ``catalogd-loader-N`` threads
  turning placeholders into loaded tables (background, and urgent for a
  subscriber's load request).
- :mod:`.workers`: ``LoadWorkers``, processes that read and convert large
  tables beside the daemon; its parts: :mod:`.pool` (where the processes come
  from, how they stop), :mod:`.tasks` (what a worker runs), :mod:`.feed` (pure:
  which task goes next) and :mod:`.dispatch` (the feed on the executor),
  :mod:`.ranges` (a large table's ``PART_ID`` ranges), :mod:`.forkserver_main`
  (imported by the fork server only).
- :mod:`.progress`: ``LoadProgress``, what the initial load has done (status).
"""
