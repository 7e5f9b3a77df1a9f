"""subscriber: keeps a versioned local copy of the catalogd catalog inside a Spark driver.

A :class:`CatalogSubscriber` joins catalogd over ZeroMQ, takes a snapshot, then
applies every published delta in order, detecting and repairing any loss; reads
answer from the local copy without calling the Hive Metastore. It installs with
pyzmq and thriftpy2 only: ``import subscriber`` loads neither ZeroMQ nor
PySpark (the names below are imported on first use), and every error it raises
derives from :class:`CatalogError`.

Package map::

    subscriber/
    ├── api.py          CatalogSubscriber, the public class (reads, waits, listeners)
    ├── reads.py        lookups over one cache view; partition specs; object decoding
    ├── memo.py         BoundedMemo: the clear-when-full memo of decoded and encoded objects
    ├── sync.py         the pure join / gap / resync / report state machine
    ├── phases.py       its phases and the one table of transitions between them
    ├── cache.py        the versioned cache: immutable views, lock-free reads
    ├── transport.py    the background thread owning the DEALER and SUB sockets
    ├── privileges.py   HMS/Impala privilege checks over the cached grants
    ├── spark.py        read_table: Spark DataFrames from the cached metadata
    ├── stats.py        typed table, partition and column statistics of cached tables
    ├── __main__.py     ``python -m subscriber watch``: print changes as they apply
    └── protocol/       what catalogd and subscribers both speak (pure; no sockets)
        ├── errors.py       the one exception tree
        ├── keys.py         catalog object keys
        ├── delta.py        versioned entries and deltas
        ├── messages.py     protocol messages as values (delta parts, commits, ...)
        ├── codec.py        Thrift structs to framed bytes and back
        ├── validator.py    checks Thrift bytes before thriftpy2 decodes them
        ├── binary.py       Thrift binary type codes; the one walker (validator, HMS framing)
        ├── wire.py         topics, frames and Thrift conversions
        ├── files.py        catalogd's compact THdfsFileDesc encoding (file metadata)
        └── hive_types.py   Hive type strings to Impala TColumnType trees
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from subscriber.protocol.errors import (
    BusyError,
    CatalogError,
    CatalogTimeoutError,
    ConflictError,
    ForkedProcessError,
    InvalidRequestError,
    MetastoreError,
    MetastoreUnavailableError,
    NotFoundError,
    ProtocolError,
    UnavailableError,
)

if TYPE_CHECKING:
    from subscriber.api import CatalogSubscriber
    from subscriber.cache import ChangeEvent
    from subscriber.spark import read_table

__all__ = [
    "BusyError",
    "CatalogError",
    "CatalogSubscriber",
    "CatalogTimeoutError",
    "ChangeEvent",
    "ConflictError",
    "ForkedProcessError",
    "InvalidRequestError",
    "MetastoreError",
    "MetastoreUnavailableError",
    "NotFoundError",
    "ProtocolError",
    "UnavailableError",
    "read_table",
]

# Imported on first use: api pulls in pyzmq and threads, which the pure
# protocol modules (and catalogd, which imports them) must not pay for.
_LAZY = {
    "CatalogSubscriber": "subscriber.api",
    "ChangeEvent": "subscriber.cache",
    "read_table": "subscriber.spark",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
