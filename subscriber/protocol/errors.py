"""The one exception tree of catalogd and its subscriber library.

::

    CatalogError                      root: catch this to catch everything we raise
    ├── NotFoundError                 unknown database, table, partition, pool, ...
    ├── InvalidRequestError           malformed input (partition spec, name, option)
    │   └── ConfigError               [catalogd] a bad configuration file or flag
    ├── ConflictError                 the request contradicts the current state
    ├── BusyError                     try again later (a load is in progress, ...)
    ├── ProtocolError                 bytes that do not decode as our messages
    ├── VersionGapError               a delta applied to a copy at another version
    ├── DeltaUnavailableError         [catalogd] the delta log no longer reaches back
    ├── CatalogTimeoutError           a bounded wait ran out (wait_for_version, ...)
    ├── ForkedProcessError            a subscriber used in a forked child process
    ├── UnavailableError              a peer cannot be reached
    │   ├── MetastoreUnavailableError the Hive Metastore cannot be reached
    │   ├── AuthenticationError       CURVE handshake failed (key refused, wrong server key)
    │   └── NotActiveError            [HA] this catalogd is a standby or lost its lease
    └── MetastoreError                the Hive Metastore answered with an error

The classes are defined here, except ``VersionGapError``
(:mod:`subscriber.protocol.delta`, next to the rule it guards) and the two
marked [catalogd], which catalogd defines for its own use: ``ConfigError`` in
``catalogd/config_schema.py`` (re-exported by ``catalogd/config.py``) and
``DeltaUnavailableError`` in ``catalogd/core/catalog.py``.

Adapters map foreign errors (zmq, thrift, DBAPI) to the most specific class here,
chaining the original (``raise NotFoundError(...) from exc``). Every class
pickles with its message intact (Spark ships exceptions between processes).
This module lives in ``subscriber.protocol`` because ``subscriber`` installs
with pyzmq and thriftpy2 only; ``catalogd`` builds on it.
"""

from __future__ import annotations


class CatalogError(Exception):
    """Root of every error raised by catalogd and the subscriber library."""


class NotFoundError(CatalogError, LookupError):
    """The named object does not exist (in HMS, or in the cache)."""


class InvalidRequestError(CatalogError, ValueError):
    """The request is malformed; the message shows the expected form."""


class ConflictError(CatalogError):
    """The request contradicts the current state (e.g. removing a pool in use)."""


class BusyError(CatalogError):
    """The server cannot take the request now; retrying later may succeed."""


class ProtocolError(CatalogError):
    """Bytes that do not decode as one of our messages."""


class CatalogTimeoutError(CatalogError, TimeoutError):
    """A bounded wait ran out before its condition held."""


class ForkedProcessError(CatalogError):
    """A subscriber created in a parent process was used in a forked child."""


class UnavailableError(CatalogError, ConnectionError):
    """A peer (catalogd, HMS, a database) cannot be reached."""


class MetastoreUnavailableError(UnavailableError):
    """The Hive Metastore at the named address cannot be reached."""


class AuthenticationError(UnavailableError):
    """The CURVE handshake failed: our key is not allowed, or the server key is wrong."""


class NotActiveError(UnavailableError):
    """This catalogd is not the active one (a standby, or fenced after losing its lease).

    ``active_admin`` is the active's admin endpoint when known ("" otherwise); it is
    not pickled (only the message is), which is all a redirect needs in-process.
    """

    def __init__(self, message: str = "", active_admin: str = "") -> None:
        super().__init__(message)
        self.active_admin = active_admin


class MetastoreError(CatalogError):
    """The Hive Metastore answered a call with an error we cannot map further."""
