"""An Apache Hive Metastore 3.1.3 for tests, from the Maven Central jars of Spark's
Hive 3.1.3 client (``.ci/fetch-spark-clients``; ``hive-standalone-metastore-3.1.3``
is among them), on Derby in a directory of its own.

A stopgap for the Spark client tests until catalogd's embedded HMS runs 3.1/4.x
(branch ``h-hms-matrix``): Hadoop comes from the pyspark wheel (the client set's
Hadoop 2.7 jars are left out), log4j too. ``datanucleus.schema.autoCreateAll``
makes the schema on first use; the HMS listens on a free port (every interface:
HMS 3.1 has ``metastore.thrift.bind.host``, set to loopback here).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from types import TracebackType

from catalogd.addresses import free_port
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded.java import find_pyspark_jars
from support.spark_clients import SparkClientMissing, classpath

# The client set's own Hadoop (2.7/3.1) and log4j (2.10 api with a 2.17 core) do not
# run HMS 3.1.3 together; the pyspark wheel's do.
_LEFT_OUT = re.compile(r"/(hadoop-(common|auth|yarn|annotations|hdfs|mapreduce)[^/]*|log4j[^/]*)$")
_LOG4J = (
    "rootLogger.level = warn\nrootLogger.appenderRef.stderr.ref = console\n"
    "appender.console.type = Console\nappender.console.name = console\n"
    "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
    "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n\n"
)


class MavenMetastore:
    """HMS ``version`` (3.1.3) serving ``thrift://127.0.0.1:PORT`` from ``data_dir``."""

    def __init__(self, data_dir: Path, version: str = "3.1.3") -> None:
        self.version = version
        self.data_dir = data_dir
        self.warehouse_dir = data_dir / "warehouse"
        self.port = free_port()
        self.uri = f"thrift://127.0.0.1:{self.port}"
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120.0) -> MavenMetastore:
        """Start the JVM and wait until ``get_all_databases`` answers.

        Raises:
            SparkClientMissing: the jars are not fetched.
            RuntimeError: HMS exited or did not answer within ``timeout``.
        """
        jars = classpath(f"hive-{self.version}", f"the Hive {self.version} jars")
        if not self.version.startswith("3."):
            raise SparkClientMissing(f"no HMS server classes among the Hive {self.version} jars")
        conf = self.data_dir / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        self.warehouse_dir.mkdir(exist_ok=True)
        site = {
            "javax.jdo.option.ConnectionURL": (
                f"jdbc:derby:;databaseName={self.data_dir / 'metastore_db'};create=true"
            ),
            "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
            "datanucleus.schema.autoCreateAll": "true",
            "metastore.schema.verification": "false",
            "metastore.warehouse.dir": f"file:{self.warehouse_dir}",
            "metastore.thrift.port": str(self.port),
            "metastore.thrift.bind.host": "127.0.0.1",
        }
        body = "".join(
            f"<property><name>{k}</name><value>{v}</value></property>\n" for k, v in site.items()
        )
        (conf / "metastore-site.xml").write_text(f"<configuration>\n{body}</configuration>\n")
        (conf / "log4j2.properties").write_text(_LOG4J)
        spark_jars = find_pyspark_jars()
        ours = sorted(str(p) for p in spark_jars.glob("*.jar") if _wanted_from_spark(p.name))
        theirs = [j for j in jars.split(os.pathsep) if not _LEFT_OUT.search(j)]
        full = os.pathsep.join([str(conf), *ours, *theirs])
        log = self.data_dir / "hms.log"
        started = time.monotonic()
        with log.open("wb") as out:
            self._proc = subprocess.Popen(
                [
                    "java",
                    "-Xmx512m",
                    "-XX:TieredStopAtLevel=1",
                    "-Dlog4j2.contextSelector="
                    "org.apache.logging.log4j.core.selector.ClassLoaderContextSelector",
                    f"-Dlog4j.configurationFile=file:{conf / 'log4j2.properties'}",
                    "-cp",
                    full,
                    "org.apache.hadoop.hive.metastore.HiveMetaStore",
                    "-p",
                    str(self.port),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.data_dir,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                tail = log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"HMS {self.version} exited ({self._proc.returncode}):\n{tail}")
            try:
                with MetastoreClient(self.uri, retries=0) as client:
                    client.get_all_databases()
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.5)
                continue
            self.startup_seconds = time.monotonic() - started
            return self
        self.stop()
        raise RuntimeError(f"HMS {self.version} did not answer in {timeout}s (log: {log})")

    def stop(self) -> None:
        """Stop the JVM (idempotent)."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def __enter__(self) -> MavenMetastore:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _wanted_from_spark(name: str) -> bool:
    return name.startswith(("hadoop-client-api", "hadoop-client-runtime", "log4j-"))
