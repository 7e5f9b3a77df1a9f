"""The write path into the catalog: every change is committed here.

- :mod:`.operations`: ``Operations``, the one way into the catalog for everyone
  outside the server thread: reads HMS in the caller's thread, then one
  submission to the server thread plans, commits and answers the published
  version; plus the catalog reads the others need. No thread.
- :mod:`.table_locks`: ``TableTurns``, one writer per table at a time.
"""
