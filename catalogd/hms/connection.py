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
    version: str = "2.3",
) -> str:
    """The HMS address to use: the first configured one, or an embedded HMS in ``data_dir``.

    With ``supervised``, an embedded HMS is restarted when its JVM dies, and
    ``supervised`` is given the supervisor's ``report`` (for status and metrics).
    ``port``: the embedded HMS's (0: a free one; taken: a free one, warned about).
    ``version``: which HMS it runs (:mod:`catalogd.hms.embedded.releases`); 2.3 keeps
    its state in ``data_dir/hms``, the others in ``data_dir/hms-VERSION`` (a schema
    made by one version is not another's).
    """
    if uris:
        return uris[0]
    from catalogd.hms.embedded import EmbeddedMetastore
    from catalogd.hms.javac import find_javac
    from subscriber.protocol.errors import MetastoreUnavailableError

    events = True  # 2.3: catalogd's listener (javac), 3.1: the stock DbNotificationListener
    if version == "2.3":
        try:
            find_javac("java")
        except MetastoreUnavailableError as exc:
            log.warning("%s; change detection falls back to polling", exc)
            events = False
    home = data_dir / ("hms" if version == "2.3" else f"hms-{version}")
    log.info("no HMS configured: starting the embedded Hive Metastore %s in %s", version, home)
    if port and not _free(port):
        log.warning(
            "port %d (hms.embedded_port, --embedded-hms-port) is taken: the embedded Hive "
            "Metastore takes a free port this time (see its address below)",
            port,
        )
        port = 0
    metastore = stack.enter_context(
        EmbeddedMetastore(
            home,
            port=port or None,
            cache_dir=data_dir / "cache",
            notification_events=events,
            version=version,
        )
    )
    log.info("embedded Hive Metastore listening at %s (HMS %s)", metastore.uri, version)
    if not metastore.notification_events:
        log.info("the embedded Hive Metastore %s logs no notification events: polling", version)
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
