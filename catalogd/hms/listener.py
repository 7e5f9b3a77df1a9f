"""catalogd's notification listener for Hive Metastore 2.3, built with the machine's javac.

The HMS in the pyspark wheel logs no notification events: the listener that does
(``DbNotificationListener``) is not in the wheel. ``CatalogdNotificationListener.java``
(next to this module; a generated copy is in ``deploy/hms/``) is a small one:
configured as a *transactional* listener, each event commits with the change it
describes, and ``get_current_notificationEventId``/``get_next_notification``
report it. Its nested ``Store`` (the default ``ObjectStore`` plus one override)
adds ALTER_DATABASE, for which HMS 2.3 calls no listener.

:func:`listener_jar` compiles it once per source and HMS jar (``javac --release 8``,
~3-4 s) into a jar in a cache directory and reuses it while the source hash is
unchanged; :func:`listener_properties` are the hive-site.xml settings that load it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from importlib import resources
from pathlib import Path

from subscriber.protocol.errors import MetastoreUnavailableError

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
    return (resources.files("catalogd.hms.java") / SOURCE_NAME).read_text(encoding="utf-8")


def listener_properties() -> dict[str, str]:
    """Return the hive-site.xml properties that make the HMS log notification events."""
    return {
        # Transactional: the event is stored in the transaction of the change itself.
        "hive.metastore.transactional.event.listeners": LISTENER_CLASS,
        "hive.metastore.rawstore.impl": STORE_CLASS,
    }


def find_javac(java: str) -> str:
    """Return the javac beside ``java`` (when it names a path) or on PATH.

    Raises MetastoreUnavailableError naming the package to install when there is none.
    """
    candidates = []
    if os.sep in java:
        candidates.append(str(Path(java).resolve().with_name("javac")))
    candidates.append("javac")
    for candidate in candidates:
        found = shutil.which(candidate)
        if found:
            return found
    raise MetastoreUnavailableError(
        "the embedded Hive Metastore logs notification events with catalogd's listener, "
        f"compiled on first use, but no javac was found (beside {java!r} or on PATH): "
        "install a JDK, not only a Java runtime (Debian: openjdk-17-jdk-headless)"
    )


def listener_jar(
    jars: Path, cache_dir: Path, *, java: str = "java", timeout_s: float = 120.0
) -> Path:
    """Return a jar holding the compiled listener, compiling it unless cached.

    The jar is ``cache_dir/hms-listener-<hash>.jar``, the hash covering the source and
    the HMS jar it is compiled against; concurrent callers each compile and the last
    rename wins (same bytes). Blocks ~3-4 s when compiling.
    Raises MetastoreUnavailableError when javac is missing or fails (with its output).
    """
    source = listener_source()
    metastore_jars = sorted(p.name for p in jars.glob("hive-metastore-*.jar"))
    key = hashlib.sha256(repr((source, metastore_jars)).encode()).hexdigest()[:16]
    target = cache_dir / f"hms-listener-{key}.jar"
    if target.is_file():
        return target
    javac = find_javac(java)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hms-listener-", dir=cache_dir) as tmp:
        work = Path(tmp)
        (work / SOURCE_NAME).write_text(source, encoding="utf-8")
        classes = work / "classes"
        compile_java(javac, work / SOURCE_NAME, classes, jars, "the HMS listener", timeout_s)
        partial = work / "listener.jar"
        # A jar, not a directory, on the classpath: the JVM's class-data sharing archive
        # refuses non-empty directories.
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())
        partial.replace(target)
    return target


def compile_java(
    javac: str, source: Path, classes: Path, jars: Path, what: str, timeout_s: float
) -> None:
    """Compile ``source`` for Java 8+ against the wheel's ``jars`` into ``classes``.

    The HMS may run on any Java from 8 up, hence ``--release 8``.

    Raises:
        MetastoreUnavailableError: javac could not run, timed out or failed
            (the message names ``what`` and carries javac's output).
    """
    command = [javac, "--release", "8", "-nowarn", "-encoding", "UTF-8"]
    command += ["-d", str(classes), "-cp", f"{jars}/*", str(source)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MetastoreUnavailableError(f"cannot compile {what}: {exc}") from exc
    if done.returncode != 0:
        raise MetastoreUnavailableError(
            f"javac failed to compile {what} (exit {done.returncode}):\n"
            f"{(done.stderr + done.stdout)[-4000:]}"
        )
