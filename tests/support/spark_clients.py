"""Where the Spark client tests find what ``.ci/fetch-spark-clients`` fetched.

* Hive metastore clients other than the pyspark wheel's 2.3.10, for
  ``spark.sql.hive.metastore.version``/``jars`` (:func:`hive_client_conf`);
* the Iceberg Spark runtime and the Spark it works with (:func:`iceberg_spark`).

Nothing here downloads: a missing piece raises :class:`SparkClientMissing`, whose
message names the command that fetches it (``make spark-clients``). The tests fail
on it rather than skip: the project's set-up (``make system``) fetches them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# The 3.x/4.x client versions Spark 4.3 accepts (spark-hive's HiveVersion v3_1, v4_0,
# v4_1; IsolatedClientLoader.hiveVersion maps 3.1.x/4.0.x/4.1.x to them).
HIVE_CLIENT_VERSIONS = ("3.1.3", "4.0.1", "4.1.0")
ICEBERG_RUNTIME = "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0"
ICEBERG_PYSPARK = "4.1.4"
FETCH = "make spark-clients (= bash .ci/fetch-spark-clients)"


class SparkClientMissing(RuntimeError):
    """Something ``.ci/fetch-spark-clients`` provides is not there."""


def cache_dir() -> Path:
    """Where ``.ci/fetch-spark-clients`` writes (``CATALOGD_SPARK_CLIENTS`` overrides)."""
    return Path(os.environ.get("CATALOGD_SPARK_CLIENTS", Path.home() / ".cache" / "catalogd"))


def classpath(name: str, what: str) -> str:
    path = cache_dir() / "spark-jars" / f"{name}.classpath"
    try:
        entries = [e for e in path.read_text().strip().split(os.pathsep) if e]
    except FileNotFoundError:
        raise SparkClientMissing(f"{what}: {path} is missing; run {FETCH}") from None
    absent = [e for e in entries if not Path(e).is_file()]
    if not entries or absent:
        raise SparkClientMissing(
            f"{what}: {len(absent)} of the jars {path} lists are not in ~/.m2 "
            f"(first: {absent[:1]}); run {FETCH}"
        )
    return os.pathsep.join(entries)


def hive_client_conf(version: str) -> dict[str, str]:
    """Spark settings that make its metastore client Hive ``version`` (Maven jars)."""
    jars = classpath(f"hive-{version}", f"the Hive {version} metastore client jars")
    return {
        "spark.sql.hive.metastore.version": version,
        "spark.sql.hive.metastore.jars": jars,  # a JVM class path: "classpath" mode
    }


@dataclass(frozen=True)
class IcebergSpark:
    """A Spark that can load Iceberg's runtime: its Python and the runtime jar."""

    python: str
    runtime_jar: str
    pyspark_version: str


def iceberg_spark() -> IcebergSpark:
    """The Iceberg runtime and the pyspark venv it runs in (see the fetch script)."""
    jar = classpath("iceberg", f"the Iceberg Spark runtime ({ICEBERG_RUNTIME})")
    python = cache_dir() / f"venv-pyspark-{ICEBERG_PYSPARK}" / "bin" / "python"
    if not python.is_file():
        raise SparkClientMissing(f"pyspark {ICEBERG_PYSPARK}: {python} is missing; run {FETCH}")
    return IcebergSpark(str(python), jar, ICEBERG_PYSPARK)
