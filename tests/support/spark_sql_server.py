"""Spark SQL in a child process, for tests that need Spark on a metastore of their own.

One process holds one SparkContext, and the session ``spark`` fixture's context is bound
to the session HMS; a test that needs Spark against another HMS runs this program:

    python spark_sql_server.py THRIFT_URI WAREHOUSE_DIR WORK_DIR [KEY=VALUE ...]

It prints ``{"ready": seconds}`` once the session is up, then for each line on stdin
(a JSON string holding one statement, or ``@getTable NAME``-style catalog calls) runs
it and prints ``{"ok": seconds, "rows": [...]}`` or ``{"error": message}``. Extra
``KEY=VALUE`` arguments are Spark settings. It exits at end of input. :class:`SparkSql`
drives it from a test.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any


class SparkSql:
    """A running ``spark_sql_server.py``; ``sql()`` blocks until Spark committed."""

    def __init__(
        self,
        uri: str,
        warehouse: Path,
        work: Path,
        conf: dict[str, str],
        *,
        python: str = sys.executable,
    ) -> None:
        """Start the session (``python``: the interpreter whose pyspark runs it)."""
        work.mkdir(parents=True, exist_ok=True)
        self.log_path = work / "spark.log"
        with self.log_path.open("wb") as log:
            self._proc = subprocess.Popen(
                [python, __file__, uri, str(warehouse), str(work)]
                + [f"{k}={v}" for k, v in conf.items()],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        self._lines: queue.Queue[str] = queue.Queue()
        assert self._proc.stdout is not None
        self._pump = threading.Thread(
            target=_pump, args=(self._proc.stdout, self._lines), name="spark-sql-out", daemon=True
        )
        self._pump.start()
        self.startup_s = float(self._answer(180)["ready"])

    def sql(self, statement: str, timeout: float = 120.0) -> float:
        """Run one statement; returns Spark's seconds. Raises AssertionError on failure."""
        return self.query(statement, timeout)[0]

    def query(self, statement: str, timeout: float = 120.0) -> tuple[float, list[list[str]]]:
        """Run one statement; returns Spark's seconds and its first 1,000 rows (as
        strings). Raises AssertionError on failure."""
        answer = self.attempt(statement, timeout)
        if "error" in answer:
            raise AssertionError(f"Spark failed on {statement!r}: {answer['error']}")
        return float(answer["ok"]), answer.get("rows", [])

    def attempt(self, statement: str, timeout: float = 120.0) -> dict[str, Any]:
        """Run one statement; returns ``{"ok": s, "rows": [...]}`` or ``{"error": message}``."""
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(statement) + "\n")
        self._proc.stdin.flush()
        return self._answer(timeout)

    def close(self) -> None:
        """End the session (end of input), killing it after 60 s. Idempotent."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        if not self._proc.stdin.closed:
            self._proc.stdin.close()
        try:
            self._proc.wait(60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(10)
        self._pump.join(10)  # it stops at end of output
        self._proc.stdout.close()

    def _answer(self, timeout: float) -> dict[str, Any]:
        try:
            return dict(json.loads(self._lines.get(timeout=timeout)))
        except queue.Empty:
            tail = self.log_path.read_text(errors="replace")[-3000:]
            raise AssertionError(f"no answer from Spark in {timeout}s:\n{tail}") from None


def _pump(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(json.dumps({"error": "the Spark process exited"}))


def main(argv: list[str]) -> None:
    from pyspark.sql import SparkSession

    uri, warehouse, work = argv[0], argv[1], Path(argv[2])
    log_conf = work / "log4j2.properties"
    log_conf.write_text(
        "rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\n"
        "appender.console.type = Console\nappender.console.name = console\n"
        "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
        "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n\n"
    )
    started = time.monotonic()
    builder = (
        SparkSession.builder.master("local[1]")
        .appName("catalogd-spark-sql-server")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config(
            "spark.driver.extraJavaOptions",
            f"-XX:TieredStopAtLevel=1 -Dlog4j.configurationFile=file:{log_conf}",
        )
        .config("spark.local.dir", str(work / "local"))
        .config("spark.hadoop.hive.metastore.uris", uri)
        .config("spark.sql.warehouse.dir", f"file:{warehouse}")
    )
    for setting in argv[3:]:
        key, _, value = setting.partition("=")
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    print(json.dumps({"ready": time.monotonic() - started}), flush=True)
    try:
        for line in sys.stdin:
            started = time.monotonic()
            try:
                rows = _run(spark, json.loads(line))
            except Exception as exc:  # noqa: BLE001 - reported to the test
                print(json.dumps({"error": str(exc)[:2000]}), flush=True)
            else:
                shown = [[str(v) for v in row] for row in rows[:1000]]
                print(json.dumps({"ok": time.monotonic() - started, "rows": shown}), flush=True)
    finally:
        spark.stop()


def _run(spark: Any, statement: str) -> list[Any]:
    """A SQL statement, or ``@getTable NAME`` / ``@listTables DB`` / ``@listColumns NAME``
    (the ``spark.catalog`` calls of the same names)."""
    if not statement.startswith("@"):
        return list(spark.sql(statement).collect())
    call, _, arg = statement[1:].partition(" ")
    found = getattr(spark.catalog, call)(arg)
    return [found] if call == "getTable" else list(found)


if __name__ == "__main__":
    main(sys.argv[1:])
