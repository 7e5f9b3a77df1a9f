"""The HMS schema DDL, written by DataNucleus SchemaTool from the pyspark wheel's jars.

An HMS on PostgreSQL or MySQL/MariaDB must not create its tables lazily (Spark's
first ``CREATE TABLE`` then deadlocks), so the embedded harness creates the
schema up front with the DDL SchemaTool writes from ``package.jdo`` in the
``hive-metastore`` jar. :func:`schema_ddl` runs it once per set of jars and
database flavour and caches the DDL in ``cache_dir`` (a run takes 2-5 s).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from catalogd.hms.embedded.java import FAST_START_FLAGS, find_pyspark_jars, tail_from
from subscriber.protocol.errors import MetastoreUnavailableError


def schema_ddl(
    flavour: str,
    *,
    properties: str,
    driver_jar: str | Path,
    java: str,
    work_dir: Path,
    cache_dir: Path | None,
    timeout_s: float,
    jars: Path | None = None,
) -> str:
    """The HMS DDL for ``flavour`` (``postgresql``, ``mysql``): cached, or made by SchemaTool.

    ``properties`` is the text of the DataNucleus properties file (JDBC URL,
    driver, user, password, store settings); it is written mode 0600.

    Raises:
        MetastoreUnavailableError: SchemaTool failed or timed out (the message
            carries the end of its log).
    """
    jars = jars or find_pyspark_jars()
    model_jars = sorted(
        p for p in jars.glob("*.jar") if p.name.startswith(("hive-metastore-", "datanucleus-"))
    )
    key = hashlib.sha256(repr([(p.name, p.stat().st_size) for p in model_jars]).encode())
    name = f"hms-schema-{flavour}-{key.hexdigest()[:16]}.sql"
    cached = cache_dir / name if cache_dir else None
    if cached is not None and cached.is_file():
        return cached.read_text()
    props = work_dir / f"datanucleus-{flavour}.properties"
    props.touch(mode=0o600)
    props.write_text(properties)
    ddl_file = work_dir / f"schema-{flavour}.sql"
    log_file = work_dir / f"schema-tool-{flavour}.log"
    cmd = [
        java, *FAST_START_FLAGS, "-cp", f"{jars}/*{os.pathsep}{driver_jar}",
        "org.datanucleus.store.schema.SchemaTool", "-create", "-api", "JDO",
        "-props", str(props), "-ddlFile", str(ddl_file), "-completeDdl", "package.jdo",
    ]  # fmt: skip
    with log_file.open("w") as log:
        try:
            done = subprocess.run(
                cmd, cwd=work_dir, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, timeout=timeout_s, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            raise MetastoreUnavailableError(
                f"DataNucleus SchemaTool timed out after {timeout_s:.0f} s"
            ) from exc
    if done.returncode != 0 or not ddl_file.is_file():
        raise MetastoreUnavailableError(
            f"DataNucleus SchemaTool failed (exit {done.returncode}):\n{tail_from(log_file, 0)}"
        )
    ddl = ddl_file.read_text()
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(ddl)
        tmp.replace(cached)
    return ddl
