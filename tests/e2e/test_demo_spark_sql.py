"""Every demo object through unmodified Spark SQL, straight at the embedded HMS and
through the subscriber's HMS endpoint (issue 23, item 1).

``catalogd serve --demo`` on the embedded default; a subscriber with its HMS endpoint
forwarding to that HMS. Two Spark sessions in child processes, one per metastore
(one SparkContext per process can only use one metastore), started side by side and
kept for the whole test, run the same statements on the database, both tables and
the view; the answers must agree and none may fail (the view once had
``sd.location = ""``, and Spark refused it: "Can not create a Path from an empty
string"). ``read_table`` on the view names the statement to run instead: it runs.
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path
from typing import Any

import pytest
from support.catalogd_process import CatalogdProcess
from support.spark_sql_server import SparkSql

from catalogd.hms.demo import DAYS, DEMO_DB, REGIONS
from subscriber import CatalogSubscriber, read_table
from subscriber.protocol.errors import InvalidRequestError

pytestmark = [pytest.mark.hms, pytest.mark.spark, pytest.mark.timeout(420)]

OBJECTS = ("events", "users", "recent_events")


def _statements() -> list[str]:
    out = [f"SHOW TABLES IN {DEMO_DB}", f"@listTables {DEMO_DB}"]
    for name in OBJECTS:
        table = f"{DEMO_DB}.{name}"
        out += [
            f"SELECT count(*) FROM {table}",
            f"SELECT * FROM {table} ORDER BY id",
            f"DESCRIBE {table}",
            f"DESCRIBE EXTENDED {table}",
            f"SHOW CREATE TABLE {table} AS SERDE",
            f"@getTable {table}",
            f"@listColumns {table}",
        ]
    out.append(f"SHOW CREATE TABLE {DEMO_DB}.recent_events")
    out.append(f"SHOW PARTITIONS {DEMO_DB}.events")
    return out


def test_every_demo_object_works_in_spark_sql(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    catalogd = CatalogdProcess("", data_dir, extra=["--demo"]).start(timeout=180)
    sessions: list[SparkSql] = []
    try:
        code, status, out = catalogd.admin("status")
        assert code == 0, out
        hms_uri = status["detail"]["hms"]["address"]
        warehouse = data_dir / "warehouse"
        with CatalogSubscriber(catalogd.endpoint) as sub:
            sub.wait_synced(30)
            endpoint = sub.metastore_endpoint(upstream=hms_uri).start()
            try:
                with concurrent.futures.ThreadPoolExecutor(2) as pool:
                    starting = [
                        pool.submit(SparkSql, uri, warehouse, tmp_path / name, {})
                        for name, uri in (("direct", hms_uri), ("via", endpoint.uri))
                    ]
                    sessions = [f.result() for f in starting]
                direct, via = sessions
                for statement in _statements():
                    got_direct = direct.attempt(statement)
                    got_via = via.attempt(statement)
                    assert "error" not in got_direct, (statement, got_direct)
                    assert "error" not in got_via, (statement, got_via)
                    assert got_via["rows"] == got_direct["rows"], statement
                listed = via.query(f"@listTables {DEMO_DB}")[1]
                assert len(listed) == len(OBJECTS)
                count = via.query(f"SELECT count(*) FROM {DEMO_DB}.recent_events")[1]
                assert count == [[str(4 * len(REGIONS) * (len(DAYS) - 1))]]
                _view_message_is_true(sub, via)
            finally:
                endpoint.close()
    finally:
        for session in sessions:
            session.close()
        assert catalogd.stop() == 0


def _view_message_is_true(sub: Any, via: SparkSql) -> None:
    """``read_table`` on the view refuses and names a statement; that statement runs."""
    view = f"{DEMO_DB}.recent_events"
    with pytest.raises(InvalidRequestError) as refused:
        read_table(None, sub, view)
    message = str(refused.value)
    assert "is a view" in message and "metastore_endpoint" in message
    statement = message.split('spark.sql("', 1)[1].split('")', 1)[0]
    assert statement == f"SELECT * FROM {view}"
    rows = via.query(statement)[1]
    assert len(rows) == 4 * len(REGIONS) * (len(DAYS) - 1)
