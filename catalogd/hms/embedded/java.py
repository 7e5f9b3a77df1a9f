"""Finding what an embedded Hive Metastore runs on: the pyspark jars and a Java.

:func:`find_pyspark_jars` locates the ``jars`` directory of the installed pyspark
(it holds HMS 2.3 and DataNucleus), :func:`java_version` reads the version of a
``java`` and :func:`minimum_java` is the oldest Java those jars accept.
:data:`FAST_START_FLAGS` are the JVM flags of a quick start (C1 only, serial
GC); :func:`tail_from` reads the end of a JVM's log for error messages.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
from pathlib import Path

from subscriber.protocol.errors import MetastoreUnavailableError

__all__ = ["FAST_START_FLAGS", "find_pyspark_jars", "java_version", "minimum_java", "tail_from"]

FAST_START_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def find_pyspark_jars() -> Path:
    """Return the ``jars`` directory of the installed pyspark (holds HMS 2.3).

    Raises MetastoreUnavailableError if pyspark is not installed.
    """
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise MetastoreUnavailableError(
            "cannot start an embedded Hive Metastore: pyspark is not installed "
            "(its jars hold the metastore); pip install 'catalogd[spark]'"
        )
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    if not any(jars.glob("hive-metastore-*.jar")):
        raise MetastoreUnavailableError(f"no hive-metastore jar in {jars}")
    return jars


def java_version(java: str) -> tuple[int, str]:
    """Return the major version of ``java`` (8 for 1.8) and its full ``-version`` text.

    Blocks ~0.1 s. Raises MetastoreUnavailableError if it cannot run or be read.
    """
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MetastoreUnavailableError(
            f"cannot start an embedded Hive Metastore: cannot run {java!r} ({exc}); "
            "install a Java runtime (Debian: openjdk-17-jre-headless)"
        ) from exc
    text = out.stderr + out.stdout
    match = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not match:
        raise MetastoreUnavailableError(f"cannot read the version of {java!r}: {text!r}")
    major = int(match.group(1))
    return (int(match.group(2) or 0) if major == 1 else major), text


def minimum_java() -> int:
    """Return the oldest Java major version the installed pyspark's jars run on."""
    # Spark 4 (and so the jars of its wheel) needs Java 17; Spark 3.5 runs on 8+.
    try:
        spark_major = int(importlib.metadata.version("pyspark").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return 17
    return 17 if spark_major >= 4 else 8


def tail_from(path: Path, offset: int, lines: int = 40) -> str:
    """Return the last ``lines`` lines of ``path`` after byte ``offset`` (for errors)."""
    try:
        with path.open("rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
    except OSError:
        return f"(no {path.name})"
    return "\n".join(text.splitlines()[-lines:])
