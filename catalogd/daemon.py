"""``catalogd serve``: load the catalog from HMS and publish it until told to stop.

A boring daemon: no self-daemonizing, no pidfile, logs to stderr. Signal
handlers only set a flag; the main thread does the work. With no HMS address
it starts the embedded HMS (Derby, from the pyspark jars) in its data directory.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalogd import loader
from catalogd.metastore import convert
from catalogd.metastore.client import MetastoreClient
from catalogd.server import CatalogServer, ServerConfig

log = logging.getLogger("catalogd")


@dataclass(frozen=True)
class ServeOptions:
    hms_uri: str | None
    data_dir: Path
    server: ServerConfig = field(default_factory=ServerConfig)
    demo: bool = False
    hms_timeout_s: float = 60.0


def open_metastore(stack: ExitStack, hms_uri: str | None, data_dir: Path) -> str:
    """The HMS address to use: the given one, or an embedded HMS started in ``data_dir``."""
    if hms_uri:
        return hms_uri
    from catalogd.metastore.embedded import EmbeddedMetastore

    log.info("no --hms given: starting the embedded Hive Metastore in %s", data_dir / "hms")
    metastore = stack.enter_context(EmbeddedMetastore(data_dir / "hms"))
    log.info("embedded Hive Metastore listening at %s", metastore.uri)
    return metastore.uri


def initial_load(client: MetastoreClient, server: CatalogServer) -> tuple[Any, loader.LoadStats]:
    """Load everything into the not yet started server; returns (delta, stats)."""
    objects, stats = loader.load_catalog(loader.ThriftSource(client))
    return server.preload(convert.encode_all(objects)), stats


def serve(
    options: ServeOptions,
    *,
    stop: threading.Event | None = None,
    on_ready: Callable[[CatalogServer], None] | None = None,
) -> int:
    """Run until SIGTERM/SIGINT (or ``stop`` is set). Returns the exit code."""
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
    options.data_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        uri = open_metastore(stack, options.hms_uri, options.data_dir)
        client = stack.enter_context(MetastoreClient(uri, timeout_s=options.hms_timeout_s))
        if options.demo:
            from catalogd.metastore.demo import create_demo_warehouse

            warehouse = (options.data_dir / "warehouse").resolve().as_uri()
            if create_demo_warehouse(client, warehouse):
                log.info("created the demo warehouse (database 'demo')")
        server = CatalogServer(options.server)
        started = time.monotonic()
        delta, stats = initial_load(client, server)
        server.start()
        stack.callback(server.close)
        log.info(
            "initial catalog published: version %d, %d databases, %d tables, %d views, "
            "%d partitions in %.2fs; serving at %s (publisher %s, service id %s)",
            delta.to_version,
            stats.databases,
            stats.tables,
            stats.views,
            stats.partitions,
            time.monotonic() - started,
            server.endpoint,
            server.pub_endpoint,
            server.service_id,
        )
        if on_ready is not None:
            on_ready(server)
        stop.wait()
        log.info("stopping")
    return 0
