"""The broadcast server: publishes the versioned catalog to subscribers over ZeroMQ.

Modules:

* :mod:`~catalogd.server.thread` - :class:`~catalogd.server.thread.CatalogServer`,
  the only module that owns a thread (``catalogd-server``). That thread alone
  owns the :class:`~catalogd.core.catalog.Catalog`, the PUB and ROUTER sockets,
  the work queue and the heartbeats; it reserves each version durably before
  publishing it. It receives, calls :mod:`~catalogd.server.requests` and
  :mod:`~catalogd.server.snapshots`, and sends through :mod:`~catalogd.server.sockets`.
* :mod:`~catalogd.server.requests` - pure request handling: a decoded
  ``TRequest`` plus the catalog and the server's state in, the response and
  its side effects (counters, subscriber reports, load requests) out as values.
* :mod:`~catalogd.server.snapshots` - pure snapshot streaming: the chunk
  generator and the per-peer job that remembers an unsent frame.
* :mod:`~catalogd.server.sockets` - binding the ROUTER and PUB sockets and
  writing them without blocking (replies, snapshot frames); called only by
  the server thread, keeps no state.
* :mod:`~catalogd.server.config` - :class:`~catalogd.server.config.ServerConfig`
  and :class:`~catalogd.server.config.ServerStats` (re-exported by ``thread``).
* :mod:`~subscriber.doorbell` - the pipe that wakes a polling thread from
  other threads (also used by the admin endpoint).

``requests``, ``snapshots`` and ``config`` are pure: they import no zmq, socket,
threading or clock module (``tests/unit/test_server_requests.py`` checks it).
"""
