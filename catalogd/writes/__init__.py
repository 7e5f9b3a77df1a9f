"""The write path into the catalog: every change from HMS is committed here.

- :mod:`.operations`: ``Operations``, the one way into the catalog for everyone
  outside the server thread (admin handlers, change detection, table loads):
  reads HMS in the caller's thread, then one submission plans, commits and
  answers the published version; plus the catalog reads the others need.
- :mod:`.tables`: the table commands (load, load several, refresh partitions,
  invalidate), guarded by table epochs and taken in per-table turns.
- :mod:`.commits`: a write as a value (a pure plan plus a guard) and the one
  function that runs it on the server thread; ``Committer``, the channel.
- :mod:`.epochs`: ``TableEpochs``, state only the server thread changes.
- :mod:`.table_locks`: ``TableTurns``, one writer per table at a time.
- :mod:`.thread_sources`, :mod:`.privileges`: one metastore source per thread;
  what a privileges reload asks HMS about.

No module here owns a thread.
"""
