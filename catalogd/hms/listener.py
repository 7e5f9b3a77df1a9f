"""catalogd's notification listener for Hive Metastore 2.3, built with the machine's javac.

The HMS in the pyspark wheel logs no notification events: the listener that does
(``DbNotificationListener``) is not in the wheel. ``CatalogdNotificationListener.java``
(next to this module; a generated copy is in ``deploy/hms/``) is a small one:
configured as a *transactional* listener, each event commits with the change it
describes, and ``get_current_notificationEventId``/``get_next_notification``
report it. Its nested ``Store`` (the default ``ObjectStore`` plus one override)
adds ALTER_DATABASE, for which HMS 2.3 calls no listener.

:func:`listener_jar` compiles it once per source and HMS jar (``javac --release 8``,
~3-4 s, :func:`catalogd.hms.javac.compiled_jar`) into a jar in a cache directory and
reuses it while the source hash is unchanged; :func:`listener_properties` are the
hive-site.xml settings that load it.
"""

from __future__ import annotations

from pathlib import Path

from catalogd.hms.javac import compiled_jar, java_source

__all__ = [
    "LISTENER_CLASS",
    "SOURCE_NAME",
    "STORE_CLASS",
    "listener_jar",
    "listener_properties",
    "listener_source",
]

SOURCE_NAME = "CatalogdNotificationListener.java"
LISTENER_CLASS = "catalogd.hms.CatalogdNotificationListener"
STORE_CLASS = f"{LISTENER_CLASS}$Store"


def listener_source() -> str:
    """Return the Java source of the listener (package data of ``catalogd.hms.java``)."""
    return java_source(SOURCE_NAME)


def listener_properties() -> dict[str, str]:
    """Return the hive-site.xml properties that make the HMS log notification events."""
    return {
        # Transactional: the event is stored in the transaction of the change itself.
        "hive.metastore.transactional.event.listeners": LISTENER_CLASS,
        "hive.metastore.rawstore.impl": STORE_CLASS,
    }


def listener_jar(
    jars: Path, cache_dir: Path, *, java: str = "java", timeout_s: float = 120.0
) -> Path:
    """Return a jar holding the compiled listener, compiling it unless cached.

    The jar is ``cache_dir/hms-listener-<hash>.jar``, the hash covering the source and
    the HMS jar it is compiled against; concurrent callers each compile and the last
    rename wins (same bytes). Blocks ~3-4 s when compiling.
    Raises MetastoreUnavailableError when javac is missing or fails (with its output).
    """
    return compiled_jar(
        SOURCE_NAME,
        jars,
        cache_dir,
        name="hms-listener",
        depends_on="hive-metastore-*.jar",
        what="the HMS listener",
        java=java,
        timeout_s=timeout_s,
    )
