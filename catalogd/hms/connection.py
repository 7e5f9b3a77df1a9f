"""Which Hive Metastore catalogd talks to, and how.

:func:`open_metastore` returns the configured HMS address, or starts an embedded
HMS in the data directory (supervised: restarted when its JVM dies);
:class:`InstrumentedClient` times every HMS call into the metrics;
:func:`create_demo` fills the demo warehouse of ``serve --demo``.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from catalogd.hms.client import MetastoreClient
from catalogd.metrics import Metrics
from subscriber.protocol.errors import CatalogError

log = logging.getLogger("catalogd")


def open_metastore(
    stack: ExitStack,
    uris: tuple[str, ...],
    data_dir: Path,
    *,
    supervised: Callable[[Callable[[], dict[str, Any]]], None] | None = None,
    port: int = 0,
) -> str:
    """The HMS address to use: the first configured one, or an embedded HMS in ``data_dir``.

    With ``supervised``, an embedded HMS is restarted when its JVM dies, and
    ``supervised`` is given the supervisor's ``report`` (for status and metrics).
    ``port``: the embedded HMS's (0: a free one; taken: a free one, warned about).
    """
    if uris:
        return uris[0]
    from catalogd.hms.embedded import EmbeddedMetastore
    from catalogd.hms.javac import find_javac
    from subscriber.protocol.errors import MetastoreUnavailableError

    try:
        find_javac("java")
        events = True  # our listener makes the embedded HMS log notification events
    except MetastoreUnavailableError as exc:
        log.warning("%s; change detection falls back to polling", exc)
        events = False
    log.info("no HMS configured: starting the embedded Hive Metastore in %s", data_dir / "hms")
    if port and not _free(port):
        log.warning(
            "port %d (hms.embedded_port, --embedded-hms-port) is taken: the embedded Hive "
            "Metastore takes a free port this time (see its address below)",
            port,
        )
        port = 0
    metastore = stack.enter_context(
        EmbeddedMetastore(
            data_dir / "hms",
            port=port or None,
            cache_dir=data_dir / "cache",
            notification_events=events,
        )
    )
    log.info("embedded Hive Metastore listening at %s", metastore.uri)
    if supervised is not None:
        from catalogd.hms.embedded.supervisor import MetastoreSupervisor

        supervised(stack.enter_context(MetastoreSupervisor(metastore)).report)
    return metastore.uri


def _free(port: int) -> bool:
    """Whether loopback ``port`` can be bound now (as the HMS will, address reuse on)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class InstrumentedClient(MetastoreClient):
    """A MetastoreClient that times every HMS call into the metrics."""

    def __init__(self, uri: str, metrics: Metrics, **kwargs: Any) -> None:
        super().__init__(uri, **kwargs)
        self._metrics = metrics

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            result = super().call(method, *args, **kwargs)
        except CatalogError as exc:
            self._metrics.observe_hms_call(method, time.monotonic() - started, type(exc).__name__)
            raise
        self._metrics.observe_hms_call(method, time.monotonic() - started)
        return result


def create_demo(uri: str, data_dir: Path, timeout_s: float) -> None:
    """Create the demo warehouse (database ``demo``) in the HMS at ``uri``, once."""
    from catalogd.hms.demo import create_demo_warehouse

    with MetastoreClient(uri, timeout_s=timeout_s) as client:
        warehouse = (data_dir / "warehouse").resolve().as_uri()
        if create_demo_warehouse(client, warehouse):
            log.info("created the demo warehouse (database 'demo')")
