"""An embedded HMS whose locks and transactions work (PyIceberg, Iceberg, Hive ACID).

:func:`start_locking_metastore` starts an :class:`EmbeddedMetastore` on Derby with
:func:`~catalogd.hms.embedded.config.lock_manager_properties`: a first start with
``hive.in.test=true`` and one ``get_open_txns`` call makes HMS create its
transaction tables, then it runs again without ``hive.in.test`` (which refuses
PyIceberg's lock requests). The fixture ``hms_locks`` (session) is one of these.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path

from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.hms.embedded.config import lock_manager_properties
from subscriber.metastore import framing


def start_locking_metastore(
    data_dir: str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    extra_conf: Mapping[str, str] = {},
) -> EmbeddedMetastore:
    """Start (and return) an HMS with a working lock manager in ``data_dir``."""
    first = EmbeddedMetastore(
        Path(data_dir),
        cache_dir=cache_dir,
        extra_conf={**lock_manager_properties(create_tables=True), **extra_conf},
    )
    with first:
        _get_open_txns(first.port)
    hms = EmbeddedMetastore(
        Path(data_dir),
        cache_dir=cache_dir,
        extra_conf={**lock_manager_properties(), **extra_conf},
    )
    return hms.start()


def _get_open_txns(port: int) -> None:
    """One transaction call (the handler creates its tables on first use)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(framing.header_bytes("get_open_txns", framing.CALL, 1) + b"\x00")
        buf = bytearray()
        while framing.message_end(buf) is None:
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("HMS closed the connection during get_open_txns")
            buf += chunk
        header = framing.read_header(buf)
        if header is None or header.type != framing.REPLY:
            raise RuntimeError(f"get_open_txns failed: {bytes(buf)!r}")
