"""The embedded Hive Metastore harness: lifecycle, failures, PostgreSQL.

Its deploy templates are checked in ``tests/unit/test_hms_templates.py`` (no Java needed).
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import psycopg
import pytest
from support.fixtures import POSTGRES_ADMIN
from support.measurements import record_measurement

import idl
from catalogd.hms import embedded
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore, process
from subscriber.protocol.errors import InvalidRequestError, MetastoreUnavailableError

pytestmark = pytest.mark.timeout(180)

hms_thrift = idl.hive_metastore


def test_running_metastore_paths_and_logs(hms: EmbeddedMetastore) -> None:
    assert hms.running and hms.uri == f"thrift://127.0.0.1:{hms.port}"
    assert hms.warehouse_dir.is_dir() and (hms.conf_dir / "hive-site.xml").is_file()
    assert (hms.data_dir / "metastore_db").is_dir()
    assert "Started the new metaserver" in hms.log_path.read_text()
    with socket.create_connection(("127.0.0.1", hms.port), timeout=5):
        pass


def test_restart_keeps_the_catalog_and_stop_is_idempotent(
    tmp_path: Path, hms_cache_dir: Path
) -> None:
    metastore = EmbeddedMetastore(tmp_path / "hms", cache_dir=hms_cache_dir)
    with pytest.raises(InvalidRequestError, match="not been started"):
        _ = metastore.uri
    with metastore, MetastoreClient(metastore.uri) as client:
        client.call(
            "create_database",
            hms_thrift.Database(
                name="survives",
                description="",
                parameters={},
                locationUri=f"file:{metastore.warehouse_dir}/survives.db",
            ),
        )
    first_uri = metastore.uri
    metastore.stop()  # a second stop is a no-op
    assert not metastore.running and metastore.uri == first_uri  # still names the last run
    with metastore, MetastoreClient(metastore.uri) as client:
        assert "survives" in client.get_all_databases()
        with pytest.raises(InvalidRequestError, match="already running"):
            metastore.start()
    record_measurement("HMS restart (Derby, existing catalog)", metastore.startup_seconds or 0, "s")


def test_a_taken_free_port_is_retried(
    tmp_path: Path, hms_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.create_server(("0.0.0.0", 0)) as squatter:
        taken = squatter.getsockname()[1]
        real_free_port = process.free_port
        ports = iter([taken])
        # The first "free" port loses the race to another process.
        monkeypatch.setattr(process, "free_port", lambda: next(ports, None) or real_free_port())
        with EmbeddedMetastore(tmp_path / "hms", cache_dir=hms_cache_dir) as metastore:
            assert next(ports, None) is None  # the taken port was tried
            assert metastore.port != taken
            with MetastoreClient(metastore.uri) as client:
                assert client.get_all_databases() == ["default"]


def test_a_fixed_port_in_use_is_a_clear_error(tmp_path: Path, hms_cache_dir: Path) -> None:
    with socket.create_server(("0.0.0.0", 0)) as squatter:
        taken = squatter.getsockname()[1]
        metastore = EmbeddedMetastore(tmp_path / "hms", port=taken, cache_dir=hms_cache_dir)
        with pytest.raises(MetastoreUnavailableError, match=f"port {taken} is in use"):
            metastore.start()
        assert not metastore.running


def test_a_jvm_that_dies_is_reported_with_its_output(tmp_path: Path) -> None:
    metastore = EmbeddedMetastore(tmp_path / "hms", jvm_args=["-XX:+NoSuchOptionAnywhere"])
    started = time.monotonic()
    with pytest.raises(MetastoreUnavailableError, match="exited with code 1") as caught:
        metastore.start()
    assert "NoSuchOptionAnywhere" in str(caught.value)
    assert time.monotonic() - started < 30 and not metastore.running


def test_a_metastore_that_does_not_answer_in_time_is_killed(tmp_path: Path) -> None:
    metastore = EmbeddedMetastore(tmp_path / "hms", startup_timeout_s=1.0, stop_timeout_s=5)
    with pytest.raises(MetastoreUnavailableError, match="did not answer .* within 1 s"):
        metastore.start()
    assert not metastore.running


def test_missing_or_old_java_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(MetastoreUnavailableError, match="cannot run '/nonexistent/java'"):
        EmbeddedMetastore(tmp_path / "a", java="/nonexistent/java").start()
    old_java = tmp_path / "java"
    old_java.write_text("#!/bin/sh\necho 'java version \"1.8.0_402\"' >&2\n")
    old_java.chmod(0o755)
    with pytest.raises(MetastoreUnavailableError, match="is Java 8; .* needs Java 17"):
        EmbeddedMetastore(tmp_path / "b", java=str(old_java)).start()


def test_postgres_backed_metastore_serves_a_round_trip(hms_postgres: EmbeddedMetastore) -> None:
    db = "pg_roundtrip"
    location = f"file:{hms_postgres.warehouse_dir}/{db}.db"
    with MetastoreClient(hms_postgres.uri) as client:
        client.call(
            "create_database",
            hms_thrift.Database(
                name=db, description="on postgres", locationUri=location, parameters={}
            ),
        )
        try:
            table = thrift_table(
                db, "t", f"{location}/t", columns=[("x", "int")], partition_keys=[("p", "string")]
            )
            client.call("create_table", table)
            assert client.call("add_partitions", thrift_partitions(table, [["a"], ["b"]])) == 2
            read = client.get_table(db, "t")
            assert [(c.name, c.type) for c in read.sd.cols] == [("x", "int")]
            assert read.sd.location == f"{location}/t"
            assert client.get_partition_names(db, "t") == ["p=a", "p=b"]
            # The rows really are in PostgreSQL (what the direct-SQL source reads).
            backend = hms_postgres.backend
            assert isinstance(backend, embedded.PostgresBackend)
            with psycopg.connect(backend.conninfo) as conn:
                rows = conn.execute(
                    'SELECT p."PART_NAME" FROM "PARTITIONS" p JOIN "TBLS" t '
                    'ON p."TBL_ID" = t."TBL_ID" JOIN "DBS" d ON t."DB_ID" = d."DB_ID" '
                    'WHERE t."TBL_NAME" = %s AND d."NAME" = %s ORDER BY 1',
                    ("t", db),
                ).fetchall()
            assert [r[0] for r in rows] == ["p=a", "p=b"]
        finally:
            client.call("drop_database", db, True, True)


def test_postgres_schema_creation_is_skipped_when_present(
    hms_postgres: EmbeddedMetastore, tmp_path: Path
) -> None:
    backend = hms_postgres.backend
    assert isinstance(backend, embedded.PostgresBackend)
    assert not embedded.create_postgres_schema(backend, work_dir=tmp_path)
    with psycopg.connect(POSTGRES_ADMIN) as conn:
        assert conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (backend.database,)
        ).fetchone()
