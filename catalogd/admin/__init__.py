"""catalogd's admin interface: commands an operator sends to a running catalogd.

Modules:

- :mod:`~catalogd.admin.endpoint`: the ``catalogd-admin`` thread that owns the
  admin ROUTER socket, runs each command on a worker pool and sends the answer
  (``AdminServer``); ``AdminResult``, ``error_code`` (exception -> status code).
- :mod:`~catalogd.admin.handlers`: the commands themselves (invalidate, refresh,
  status, cache pools, audit), pure-ish functions of a ``TAdminRequest`` over
  the catalog operations and the state store; they know nothing of sockets.
- :mod:`~catalogd.admin.barrier`: ``SubscriberBarrier``, how ``--sync`` waits
  until live subscribers report applying a version.
- :mod:`~catalogd.admin.client`: ``AdminClient``, one request and its answer
  over ZeroMQ (the CLI and tests use it).
- :mod:`~catalogd.admin.cli`: ``catalogd admin ...``: argument parsing, the
  request it sends, and the exit code; :mod:`~catalogd.admin.output`: how the
  answers print as text.
"""
