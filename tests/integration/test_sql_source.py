"""The SQL source (``--hms-db``) against real metastores: HMS 2.3 on PostgreSQL and MariaDB.

The Spark-made warehouse (session ``warehouse`` fixture, Derby HMS) is copied
into a PostgreSQL- and a MariaDB-backed HMS over Thrift (``support.hms_copy``), with odd names
and values added; then every catalog object the SQL source yields must equal,
byte for byte, the one the Thrift source yields from that HMS.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pymysql
import pytest
from support.fixtures import POSTGRES_ADMIN
from support.hms_copy import ODD_VALUES, add_odd_objects, copy_catalog
from support.measurements import record_measurement
from support.source_objects import everything
from support.warehouse import WarehouseSpec

import idl
from catalogd.conversion import objects as convert
from catalogd.conversion import storage
from catalogd.core import cache_pools
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore, MariaDbBackend
from catalogd.loading.workers import LoadWorkers
from catalogd.sources import ThriftSource, load_table
from catalogd.sources.sql import SqlSource, fingerprints, schema
from subscriber.protocol import codec
from subscriber.protocol.errors import (
    InvalidRequestError,
    MetastoreError,
    MetastoreUnavailableError,
    NotFoundError,
)
from subscriber.protocol.keys import table_key

pytestmark = pytest.mark.timeout(240)

hms_thrift = idl.hive_metastore


def pg_url(metastore: EmbeddedMetastore, user: str = "postgres") -> str:
    backend = metastore.backend
    return f"postgresql+psycopg://{user}@{backend.host}:{backend.port}/{backend.database}"  # type: ignore[attr-defined]


MARIADB_USER, MARIADB_PASSWORD = "catalogd_hms", "hms"  # HMS cannot log in without a password


@pytest.fixture(scope="module")
def hms_mariadb(
    tmp_path_factory: pytest.TempPathFactory, hms_cache_dir: Path
) -> Iterator[EmbeddedMetastore]:
    database = f"catalogd_hms_{secrets.token_hex(4)}"
    admin = pymysql.connect(host="127.0.0.1", port=3306, user="root", autocommit=True)
    with admin, admin.cursor() as cur:
        cur.execute(
            f"CREATE USER IF NOT EXISTS '{MARIADB_USER}'@'%' IDENTIFIED BY '{MARIADB_PASSWORD}'"
        )
        cur.execute(f"GRANT ALL ON `{database}`.* TO '{MARIADB_USER}'@'%'")
    backend = MariaDbBackend(database=database, user=MARIADB_USER, password=MARIADB_PASSWORD)
    try:
        with EmbeddedMetastore(
            tmp_path_factory.mktemp("hms-mariadb"), backend=backend, cache_dir=hms_cache_dir
        ) as metastore:
            record_measurement("HMS start (MariaDB)", metastore.startup_seconds or 0.0, "s")
            yield metastore
    finally:
        admin = pymysql.connect(host="127.0.0.1", port=3306, user="root", autocommit=True)
        with admin, admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{database}`")


def db_url(metastore: EmbeddedMetastore) -> str:
    backend: Any = metastore.backend
    if isinstance(backend, MariaDbBackend):
        return backend.sqlalchemy_url
    return pg_url(metastore)


def warehouse_databases(warehouse: WarehouseSpec) -> set[str]:
    """The Spark-made databases (the session's HMS holds other tests' too: not copied)."""
    return {"default", *(d.name for d in warehouse.databases)}


@pytest.fixture(scope="module", params=["postgresql", "mariadb"])
def catalog(request: pytest.FixtureRequest, warehouse: WarehouseSpec) -> EmbeddedMetastore:
    """A metastore holding the Spark-made warehouse and the odd objects."""
    metastore: EmbeddedMetastore = request.getfixturevalue(
        "hms_postgres" if request.param == "postgresql" else "hms_mariadb"
    )
    with (
        MetastoreClient(warehouse.uri) as source,
        MetastoreClient(metastore.uri) as target,
    ):
        copy_catalog(source, target, warehouse_databases(warehouse))
        add_odd_objects(target, f"file:{metastore.warehouse_dir}")
    return metastore


@pytest.fixture
def sql_source(catalog: EmbeddedMetastore) -> Iterator[SqlSource]:
    source = SqlSource(db_url(catalog), partition_batch=2)  # several batches per table
    yield source
    source.close()


@pytest.fixture
def sql_source_pg(warehouse: WarehouseSpec, hms_postgres: EmbeddedMetastore) -> Iterator[SqlSource]:
    """A SQL source on the PostgreSQL-backed metastore, populated like ``catalog``."""
    with MetastoreClient(hms_postgres.uri) as client:
        populated = "odd" in client.get_all_databases()
    if not populated:
        with (
            MetastoreClient(warehouse.uri) as source,
            MetastoreClient(hms_postgres.uri) as target,
        ):
            copy_catalog(source, target, warehouse_databases(warehouse))
            add_odd_objects(target, f"file:{hms_postgres.warehouse_dir}")
    source = SqlSource(pg_url(hms_postgres), partition_batch=1)
    yield source
    source.close()


def test_sql_objects_equal_thrift_objects(
    catalog: EmbeddedMetastore, sql_source: SqlSource
) -> None:
    with MetastoreClient(catalog.uri) as client:
        by_thrift = everything(ThriftSource(client))
    by_sql = everything(sql_source)
    assert sorted(by_sql) == sorted(by_thrift)
    different = [k for k in by_thrift if by_sql[k] != by_thrift[k]]
    assert different == []
    # The comparison covered what it should.
    keys = "\n".join(by_sql)
    for needle in ("sales", "orders", "eu_orders", "odd", "PRIVILEGE", "PRINCIPAL"):
        assert needle.lower() in keys.lower()
    assert sum(1 for k in by_sql if k.startswith("HDFS_PARTITION:odd")) == len(ODD_VALUES)


def test_load_workers_give_the_objects_the_daemon_makes(
    catalog: EmbeddedMetastore, sql_source: SqlSource
) -> None:
    """Whole-table loads in worker processes: the same payloads (tables of more than 2
    partitions read in ranges by both workers), marks applied, the source's errors
    raised as they are, and a killed worker costs one load."""
    factory = functools.partial(SqlSource, db_url(catalog), partition_batch=2)
    assert len(sql_source.partition_ranges("odd", "t", 2)) > 1
    with LoadWorkers(factory, 2, split_above=2) as workers:
        for db in ("odd", "sales"):
            for table in sql_source.table_names(db):
                objects, _ = load_table(sql_source, db, table)
                cache_pools.apply_marks(objects, {})
                assert workers.table_payloads(db, table) == convert.encode_all(objects)
                # Ranges planned by the caller's own source (as Operations does).
                planned = workers.table_payloads(db, table, planner=sql_source)
                assert planned == convert.encode_all(objects)
        marked = workers.table_payloads("sales", "orders", {None: "pool1"})
        header = codec.decode_object(marked[table_key("sales", "orders")])
        assert header.table.cache_pool_name == "pool1"
        with pytest.raises(NotFoundError):
            workers.table_payloads("sales", "no_such_table")
        pid = workers._worker_pool().processes()[0].pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(MetastoreError, match="load worker died"):
            for _ in range(20):  # until a call meets the dead worker
                workers.table_payloads("sales", "orders")
        assert workers.table_payloads("sales", "orders")  # a new pool
    # Tables read together give what one by one gives; missing and too large ones
    # (here: more than 2 partitions) are left to single loads.
    together = 0
    with LoadWorkers(factory, 2, batch_partitions=2) as workers:
        for db in ("odd", "sales"):
            names = [*sql_source.table_names(db), "no_such_table"]
            read, alone = workers.tables_payloads(db, names, {"orders": {None: "pool1"}})
            counts = sql_source.partition_counts(db, names)
            assert "no_such_table" not in counts
            assert sorted(alone) == sorted(
                ["no_such_table", *(t for t, n in counts.items() if n > 2)]
            )
            assert len(read) + len(alone) == len(names)
            together += len(read)
            for table, payloads in read.items():
                marks = {None: "pool1"} if table == "orders" else {}
                assert payloads == workers.table_payloads(db, table, marks), table
    assert together > 2


def test_the_write_position_moves_with_a_metastore_write(
    catalog: EmbeddedMetastore, sql_source: SqlSource
) -> None:
    """What SQL detection reads to skip idle cycles (PostgreSQL WAL, InnoDB redo log)."""
    before = sql_source.run(fingerprints.change_marker)
    assert before is not None
    with MetastoreClient(catalog.uri) as client:
        db = client.call("get_database", "odd")
        db.parameters = {**db.parameters, "marker": str(before)[:20]}
        client.call("alter_database", "odd", db)
    assert sql_source.run(fingerprints.change_marker) != before


def test_partition_structs_equal_thrift(catalog: EmbeddedMetastore, sql_source: SqlSource) -> None:
    with MetastoreClient(catalog.uri) as client:
        thrift = ThriftSource(client)
        for db, table in (("odd", "t"), ("sales", "orders")):
            names = thrift.partition_names(db, table)
            assert sorted(sql_source.partition_names(db, table)) == sorted(names)
            want = {tuple(p.values): storage.sorted_maps(p) for p in thrift.partitions(db, table)}
            got = {
                tuple(p.values): storage.sorted_maps(p) for p in sql_source.partitions(db, table)
            }
            assert got == want
            some = names[:2]
            assert {tuple(p.values) for p in sql_source.partitions(db, table, some)} == {
                tuple(p.values) for p in thrift.partitions(db, table, some)
            }
        assert {tuple(v) for v in ODD_VALUES} <= set(
            tuple(p.values) for p in sql_source.partitions("odd", "t")
        )


def test_interleaved_partitions_of_two_tables_equal_thrift(
    catalog: EmbeddedMetastore, sql_source: SqlSource
) -> None:
    """Partitions of two tables added one at a time, alternately: each table's ids
    (partitions, storage descriptors, SerDes) fill half of their range, so a batch reads
    the range and drops the other table's rows, which must not leak into it."""
    with MetastoreClient(catalog.uri) as client:
        if "mixed" not in client.get_all_databases():
            client.call(
                "create_database",
                hms_thrift.Database(name="mixed", locationUri="file:/tmp/mixed", parameters={}),
            )
            tables = [
                thrift_table(
                    "mixed",
                    name,
                    f"file:/tmp/mixed/{name}",
                    columns=[("x", "int")],
                    partition_keys=[("k", "string")],
                    parameters={"t": name},
                    serde_parameters={"serialization.format": "1"},
                )
                for name in ("a", "b")
            ]
            for table in tables:
                client.call("create_table", table)
            for i in range(7):
                for table in tables:
                    (part,) = thrift_partitions(table, [[f"v{i}"]])
                    part.parameters = {"n": f"{table.tableName}{i}"}
                    client.call("add_partition", part)
        thrift = ThriftSource(client)
        for table in ("a", "b"):
            assert len(list(sql_source.partitions("mixed", table))) == 7
            by_sql = load_table(sql_source, "mixed", table)[0]
            by_thrift = load_table(thrift, "mixed", table)[0]
            assert convert.encode_all(by_sql) == convert.encode_all(by_thrift)
        read = sql_source.tables_partitions("mixed", ["a", "b"])
        assert {t: sorted(p.parameters["n"] for p in ps) for t, ps in read.items()} == {
            t: sorted(f"{t}{i}" for i in range(7)) for t in ("a", "b")
        }


def test_column_statistics_equal_thrift(catalog: EmbeddedMetastore, sql_source: SqlSource) -> None:
    with MetastoreClient(catalog.uri) as client:
        want = ThriftSource(client).table_column_statistics("odd", "t", ["id", "note", "x"])
    got = sql_source.table_column_statistics("odd", "t", ["id", "note", "x"])
    assert sorted(got, key=lambda o: o.colName) == sorted(want, key=lambda o: o.colName)
    assert len(got) == 2


def test_functions_equal_thrift(catalog: EmbeddedMetastore, sql_source: SqlSource) -> None:
    with MetastoreClient(catalog.uri) as client:
        want = sorted(client.get_all_functions(), key=lambda f: (f.dbName, f.functionName))
    assert sql_source.all_functions() == want and want


def test_unknown_objects_raise_not_found(sql_source: SqlSource) -> None:
    with pytest.raises(NotFoundError):
        sql_source.get_database("nope")
    with pytest.raises(NotFoundError):
        sql_source.table_names("nope")
    with pytest.raises(NotFoundError):
        list(sql_source.partitions("sales", "nope"))
    assert sql_source.get_tables("sales", ["nope"]) == []


# -- errors ----------------------------------------------------------------------------


def test_bad_url_is_a_usage_error() -> None:
    with pytest.raises(InvalidRequestError, match="SQLAlchemy URL"):
        SqlSource("not a url")


def test_unreachable_database_is_unavailable() -> None:
    from catalogd.addresses import free_port

    source = SqlSource(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/x")
    with pytest.raises(MetastoreUnavailableError, match="cannot read the metastore database"):
        source.database_names()


def test_wrong_password_is_unavailable(hms_postgres: EmbeddedMetastore) -> None:
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
        conn.execute(b"DROP ROLE IF EXISTS catalogd_pw_test")
        conn.execute(b"CREATE ROLE catalogd_pw_test LOGIN PASSWORD 'right'")
    backend: Any = hms_postgres.backend
    url = (
        f"postgresql+psycopg://catalogd_pw_test:wrong@{backend.host}:{backend.port}/"
        f"{backend.database}"
    )
    source = SqlSource(url)
    try:
        # Local trust auth may accept any password; then the role just cannot read.
        with pytest.raises((MetastoreUnavailableError, MetastoreError)) as err:
            source.database_names()
        assert "wrong" not in str(err.value)  # the password is never shown
    finally:
        source.close()
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(b"DROP OWNED BY catalogd_pw_test")
            conn.execute(b"DROP ROLE catalogd_pw_test")


def test_not_a_metastore_and_unsupported_version(hms_postgres: EmbeddedMetastore) -> None:
    source = SqlSource("postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    with pytest.raises(MetastoreError, match="not a Hive Metastore database"):
        source.database_names()
    source.close()
    backend: Any = hms_postgres.backend
    with psycopg.connect(backend.conninfo, autocommit=True) as conn:
        conn.execute(b"""UPDATE "VERSION" SET "SCHEMA_VERSION" = '9.9.9'""")
    try:
        source = SqlSource(pg_url(hms_postgres))
        with pytest.raises(MetastoreError, match=r"version 9\.9\.9.*supported: 2\.3\.0"):
            source.database_names()
        source.close()
    finally:
        with psycopg.connect(backend.conninfo, autocommit=True) as conn:
            conn.execute(b"""UPDATE "VERSION" SET "SCHEMA_VERSION" = '2.3.0'""")


def test_sessions_are_read_only(sql_source: SqlSource) -> None:
    import sqlalchemy as sa

    with (
        sql_source._engine.connect() as conn,
        pytest.raises(sa.exc.DBAPIError, match="(?i)read.only"),
    ):
        conn.execute(sa.delete(schema.FUNCS))  # in a read-only session, whatever the user may do


def test_mariadb_wrong_password_is_unavailable(hms_mariadb: EmbeddedMetastore) -> None:
    backend: Any = hms_mariadb.backend
    url = f"mysql+pymysql://{MARIADB_USER}:wrong@127.0.0.1:3306/{backend.database}"
    source = SqlSource(url)
    with pytest.raises(MetastoreUnavailableError, match="Access denied") as err:
        source.database_names()
    assert ":wrong@" not in str(err.value)  # the password is never shown
    source.close()


@contextlib.contextmanager
def database_offline(name: str) -> Iterator[None]:
    """PostgreSQL database ``name`` refuses connections and drops its sessions, until exit."""
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'.encode())
        admin.execute(
            b"SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            b"WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
    try:
        yield
    finally:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'.encode())


def test_database_gone_mid_load_then_back(
    hms_postgres: EmbeddedMetastore, sql_source_pg: SqlSource
) -> None:
    backend: Any = hms_postgres.backend
    name = backend.database
    parts = sql_source_pg.partitions("odd", "t")
    next(parts)  # the first batch is read
    with (
        database_offline(name),
        pytest.raises(MetastoreUnavailableError, match="cannot read the metastore database"),
    ):
        list(parts)
    # The same source recovers: its pool re-checks connections.
    assert len(list(sql_source_pg.partitions("odd", "t"))) == len(ODD_VALUES)


def test_load_workers_raise_unavailable_then_recover(
    hms_postgres: EmbeddedMetastore, sql_source_pg: SqlSource
) -> None:
    """The database going away under the load workers: the load fails with the
    source's own error (the loader retries it), and the same workers load again once
    it is back."""
    name = hms_postgres.backend.database  # type: ignore[attr-defined]
    with LoadWorkers(functools.partial(SqlSource, pg_url(hms_postgres)), 1) as workers:
        assert workers.table_payloads("odd", "t")
        with (
            database_offline(name),
            pytest.raises(MetastoreUnavailableError, match="cannot read the metastore"),
        ):
            workers.table_payloads("odd", "t")
        assert len(workers.table_payloads("odd", "t")) == len(ODD_VALUES) + 1


def test_dump_by_sql_equals_dump_by_thrift(
    catalog: EmbeddedMetastore, capsys: pytest.CaptureFixture[str]
) -> None:
    from catalogd import cli

    assert cli.main(["dump", "--hms-db", db_url(catalog), "--json"]) == 0
    by_sql = capsys.readouterr().out
    assert cli.main(["dump", "--hms", catalog.uri, "--json"]) == 0
    by_thrift = capsys.readouterr().out

    def keys(out: str) -> list[tuple[str, str]]:  # versions follow the (free) load order
        return sorted((o["key"], o["type"]) for o in map(json.loads, out.splitlines()))

    assert keys(by_sql) == keys(by_thrift) and "odd.t" in by_sql
    # Not a metastore: an error (exit 1) naming the database, the password hidden.
    not_hms = "postgresql+psycopg://postgres:secret@127.0.0.1:5432/postgres"
    assert cli.main(["dump", "--hms-db", not_hms]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert "not a Hive Metastore database" in err and "secret" not in err


def test_fingerprints_see_a_partition_parameter_change(
    catalog: EmbeddedMetastore, sql_source: SqlSource
) -> None:
    from catalogd.sources.sql import fingerprints as fp

    def read() -> tuple[Any, ...]:
        return (
            sql_source.run(fp.partition_buckets),
            sql_source.run(fp.tables)[("odd", "t")],
            sql_source.run(lambda c: fp.partition_names(c, "odd", "t")),
            sql_source.run(fp.databases)["odd"],
            sql_source.run(fp.grants),
            sql_source.run(fp.functions),
        )

    buckets, table, names, *rest = read()
    assert len(names) == len(ODD_VALUES) and read() == (buckets, table, names, *rest)
    with MetastoreClient(catalog.uri) as client:
        part = client.call("get_partition", "odd", "t", list(ODD_VALUES[0]))
        part.parameters = {**part.parameters, "numRows": "7"}
        client.call("alter_partition", "odd", "t", part)
    buckets2, table2, names2, *rest2 = read()
    changed = [b for b in buckets2.keys() | buckets.keys() if buckets2.get(b) != buckets.get(b)]
    assert changed and {kind for kind, _ in changed} == {"p"}
    assert (table2, names2, rest2) == (table, names, rest)
    found = sql_source.run(lambda c: fp.partitions_in(c, changed))
    assert ("odd", "t", "k=a%3Db%2Fc/r=x y") in found
    assert len(found) <= fp.BUCKET


def test_notification_reads_equal_thrift(catalog: EmbeddedMetastore, sql_source: SqlSource) -> None:
    with MetastoreClient(catalog.uri) as client:
        current = client.get_current_notification_event_id()
        events = client.get_next_notification(0, 50)
    assert sql_source.current_notification_id() == current
    assert sql_source.next_notifications(0, 50) == events
