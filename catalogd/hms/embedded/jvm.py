"""One Hive Metastore JVM: its command line, class-data archive, readiness and stop.

:func:`hms_command` is the ``java ... HiveMetaStore`` command line (without its
``-p PORT``); :func:`class_data_flags` picks the AppCDS flags that reuse, or write
as the JVM exits, an archive of the classes the HMS loads; :func:`probe` makes one
real Thrift call to tell whether the HMS is serving; :func:`terminate` stops it.

Facts relied on (HMS 2.3.10 from the pyspark wheel, checked here):
the log4j2 context
selector flag avoids a crash on a missing disruptor class.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["MAIN_CLASS", "class_data_flags", "hms_command", "probe", "terminate"]

MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"


def hms_command(
    java: str, flags: Sequence[str], *, conf_dir: Path, data_dir: Path, classpath: str
) -> list[str]:
    """Return the command that runs the HMS with ``conf_dir``'s log4j2.properties."""
    return [
        java,
        *flags,
        "-Dlog4j2.contextSelector="
        "org.apache.logging.log4j.core.selector.ClassLoaderContextSelector",
        f"-Dlog4j.configurationFile={conf_dir / 'log4j2.properties'}",
        f"-Dderby.stream.error.file={data_dir / 'logs' / 'derby.log'}",
        "-cp",
        classpath,
        MAIN_CLASS,
    ]


def class_data_flags(
    cache_dir: Path, classpath: str, version_text: str, flags: Sequence[str], owner: int
) -> tuple[list[str], tuple[Path, Path] | None]:
    """AppCDS: use the cached archive, or write one when this JVM exits.

    The archive's name hashes the Java version, the other flags and the classpath's
    jars. Returns the flags and, when the JVM is to write the archive, the pair
    (partial file it writes, final name) for the caller to rename after a clean
    exit; ``owner`` keeps concurrent writers' partial files apart.
    """
    entries = []
    for part in classpath.split(os.pathsep):
        files = sorted(Path(part[:-2]).glob("*.jar")) if part.endswith("/*") else [Path(part)]
        entries += [(str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files]
    key = hashlib.sha256(repr((version_text, list(flags), entries)).encode()).hexdigest()
    final = cache_dir / f"hms-classes-{key[:16]}.jsa"
    if final.is_file():
        return [f"-XX:SharedArchiveFile={final}"], None
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = final.with_suffix(f".{os.getpid()}.{owner}.partial")
    return [f"-XX:ArchiveClassesAtExit={partial}"], (partial, final)


def probe(port: int, timeout_s: float) -> str | None:
    """Make one real call (get_all_databases) to 127.0.0.1:port.

    Returns None when the HMS answered, else a short reason (for error messages).
    """
    from thriftpy2.rpc import make_client

    import idl

    try:
        client = make_client(
            idl.hive_metastore.ThriftHiveMetastore, "127.0.0.1", port, timeout=int(timeout_s * 1000)
        )
    except Exception as exc:  # any failure means: not ready yet
        return f"connect: {exc}"
    try:
        client.get_all_databases()
        return None
    except Exception as exc:  # e.g. a reset while it initialises
        return f"get_all_databases: {exc!r}"
    finally:
        client.close()


def terminate(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """SIGTERM, wait, SIGKILL. Returns True if the process exited on SIGTERM in time."""
    if proc.poll() is not None:
        return proc.returncode in (0, 143, -signal.SIGTERM)
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
        return False
    return proc.returncode in (0, 143, -signal.SIGTERM)
