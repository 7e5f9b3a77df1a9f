"""Building a jar from one Java source with the machine's javac, cached by content.

catalogd compiles two small Java sources at run time against the HMS jars of the
pyspark wheel (:mod:`catalogd.hms.java`): the notification listener
(:mod:`catalogd.hms.listener`) and the loopback bind agent
(:mod:`catalogd.hms.embedded.bind`). :func:`compiled_jar` is the one builder both
use: ``javac --release 8`` (the HMS may run on any Java from 8 up) into a jar
named by a hash of the source and of the wheel jars it is compiled against, reused
while that hash is unchanged. Concurrent callers each compile and the last rename
wins (same bytes).

Errors: :class:`MetastoreUnavailableError` when no javac is found (naming the
package to install) or when it fails (with its output).
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

__all__ = ["compiled_jar", "find_javac", "java_source"]


def java_source(name: str) -> str:
    """The Java source ``name`` (package data of ``catalogd.hms.java``)."""
    return (resources.files("catalogd.hms.java") / name).read_text(encoding="utf-8")


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


def compiled_jar(
    source_name: str,
    jars: Path,
    cache_dir: Path,
    *,
    name: str,
    depends_on: str,
    what: str,
    manifest: str = "",
    java: str = "java",
    timeout_s: float = 120.0,
) -> Path:
    """A jar of the compiled ``source_name``: ``cache_dir/<name>-<hash>.jar``, compiled
    unless cached. Blocks a few seconds when compiling.

    Args:
        source_name: the Java source in ``catalogd.hms.java``.
        jars: the wheel's jar directory, the classpath to compile against.
        name: the jar's name before the hash.
        depends_on: a glob of the wheel jars whose names go into the hash (the ones
            the source is compiled against).
        what: how error messages name the source.
        manifest: extra manifest lines (``Key: value\\r\\n`` each).

    Raises:
        MetastoreUnavailableError: no javac, or it failed (with its output).
    """
    source = java_source(source_name)
    dependencies = sorted(p.name for p in jars.glob(depends_on))
    key = hashlib.sha256(repr((source, dependencies)).encode()).hexdigest()[:16]
    target = cache_dir / f"{name}-{key}.jar"
    if target.is_file():
        return target
    javac = find_javac(java)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{name}-", dir=cache_dir) as tmp:
        work = Path(tmp)
        (work / source_name).write_text(source, encoding="utf-8")
        classes = work / "classes"
        _compile(javac, work / source_name, classes, jars, what, timeout_s)
        partial = work / "partial.jar"
        # A jar, not a directory, on the classpath: the JVM's class-data sharing archive
        # refuses non-empty directories.
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", f"Manifest-Version: 1.0\r\n{manifest}\r\n")
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())
        partial.replace(target)
    return target


def _compile(
    javac: str, source: Path, classes: Path, jars: Path, what: str, timeout_s: float
) -> None:
    """Compile ``source`` for Java 8+ against the wheel's ``jars`` into ``classes``."""
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
