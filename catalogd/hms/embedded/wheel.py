"""HMS 2.3 from the jars of the pyspark wheel: what a start needs before the JVM runs.

:func:`prepare_wheel` checks the Java version against the wheel's, compiles
catalogd's listener (``notification_events``) and the loopback bind agent
(:mod:`.bind`; without ``javac`` the HMS listens on every interface, with a
warning), and creates a PostgreSQL or MariaDB schema with DataNucleus SchemaTool
(:mod:`.postgres`, :mod:`.mysql`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from catalogd.hms import listener
from catalogd.hms.embedded.bind import agent_jar
from catalogd.hms.embedded.config import Backend, PostgresBackend
from catalogd.hms.embedded.java import find_pyspark_jars, java_version, minimum_java
from catalogd.hms.embedded.mysql import MariaDbBackend
from catalogd.hms.embedded.postgres import create_postgres_schema
from subscriber.protocol.errors import MetastoreUnavailableError

__all__ = ["prepare_wheel"]

log = logging.getLogger(__name__)


def prepare_wheel(
    backend: Backend,
    *,
    java: str,
    data_dir: Path,
    conf_dir: Path,
    cache_dir: Path | None,
    notification_events: bool,
    bind_loopback: bool,
    deadline: float,
) -> tuple[list[str], str, Path | None]:
    """Check Java, build the listener, create the schema, build the bind agent.

    Returns the class path, ``java -version``'s text and the bind agent's jar (None
    without one). Blocking until ``deadline`` (``time.monotonic()``) at most.
    Raises MetastoreUnavailableError (Java too old, pyspark/javac/driver/schema).
    """
    agent: Path | None = None
    jars = find_pyspark_jars()
    major, version_text = java_version(java)
    if major < minimum_java():
        raise MetastoreUnavailableError(
            f"{java!r} is Java {major}; the Hive Metastore in this pyspark needs "
            f"Java {minimum_java()} or newer"
        )
    classpath = [f"{jars}/*"]
    if notification_events:
        built = listener.listener_jar(
            jars, cache_dir or data_dir / "lib", java=java,
            timeout_s=max(1.0, deadline - time.monotonic()),
        )  # fmt: skip
        classpath.append(str(built))
    if isinstance(backend, PostgresBackend):
        if not backend.driver_jar.is_file():
            raise MetastoreUnavailableError(
                f"no PostgreSQL JDBC driver at {backend.driver_jar}; "
                "run .ci/install-system-deps (Debian package libpostgresql-jdbc-java)"
            )
        classpath.append(str(backend.driver_jar))
        create_postgres_schema(
            backend,
            java=java,
            work_dir=conf_dir,
            cache_dir=cache_dir,
            timeout_s=max(1.0, deadline - time.monotonic()),
        )
    elif isinstance(backend, MariaDbBackend):
        classpath.append(str(backend.driver_jar))
        backend.prepare(
            java=java,
            work_dir=conf_dir,
            cache_dir=cache_dir,
            timeout_s=max(1.0, deadline - time.monotonic()),
        )
    if bind_loopback:
        try:
            agent = agent_jar(
                jars,
                cache_dir or data_dir / "lib",
                java=java,
                timeout_s=max(1.0, deadline - time.monotonic()),
            )
        except MetastoreUnavailableError as exc:
            log.warning("%s; the embedded Hive Metastore listens on every interface", exc)
    return classpath, version_text, agent
