"""A large HMS 2.3 catalog written straight into a PostgreSQL metastore database.

Adding partitions through HMS costs ~1-30 ms each; these ``INSERT ... SELECT
generate_series`` statements write a million in about a minute, in the shape
HMS itself writes them (one storage descriptor and SerDe per table and per
partition, one shared column descriptor, two ``PARTITION_KEY_VALS`` rows and
four ``PARTITION_PARAMS`` rows per partition). Only for throwaway benchmark
databases: HMS never learns about these writes (an HMS started afterwards on the
database reads them like its own; ``SEQUENCE_TABLE`` is advanced past the ids).

Database ``bench``: tables ``t0000``... with ``per_table`` partitions each
(``dt`` x ``region``, 100 regions per day) and, if ``big`` > 0, table ``big``.
"""

from __future__ import annotations

import time
from pathlib import Path

import psycopg

from catalogd.hms.embedded import PostgresBackend, create_postgres_schema

ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres connect_timeout=10"
INPUT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat"
OUTPUT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"


def built_partitions(database: str) -> int | None:
    """Partitions in ``database`` (None: no such database or no HMS schema)."""
    try:
        with psycopg.connect(f"{ADMIN.replace('dbname=postgres', f'dbname={database}')}") as conn:
            row = conn.execute(b'SELECT count(*) FROM "PARTITIONS"').fetchone()
            return int(row[0]) if row else None
    except psycopg.Error:
        return None


def prewarm(database: str) -> float:
    """Read every table and index of ``database`` into the operating system's page cache
    (``pg_prewarm``, or a scan of each table where that extension is missing); returns
    the seconds it took. A metastore in use has its tables cached; here, minutes idle
    let the kernel reclaim them (measured: the same 1M-partition load took 43.5 s right
    after a run and 54.0 s after a few idle minutes)."""
    started = time.monotonic()
    with psycopg.connect(ADMIN.replace("dbname=postgres", f"dbname={database}")) as conn:
        ours = b"c.relnamespace = 'public'::regnamespace"
        try:
            conn.execute(b"CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            conn.execute(
                b"SELECT pg_prewarm(c.oid::regclass, 'read') FROM pg_class c "
                b"WHERE c.relkind IN ('r', 'i') AND " + ours
            )
        except psycopg.Error:
            conn.rollback()
            query = b"SELECT quote_ident(c.relname) FROM pg_class c WHERE c.relkind = 'r' AND "
            for (table,) in conn.execute(query + ours).fetchall():
                conn.execute(f"SELECT count(*) FROM {table}".encode())
    return time.monotonic() - started


def build(
    database: str,
    *,
    tables: int,
    per_table: int,
    big: int,
    warehouse: str,
    work_dir: Path,
    cache_dir: Path,
) -> float:
    """(Re)create ``database`` holding that catalog; returns the seconds it took."""
    started = time.monotonic()
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'.encode())
        conn.execute(f'CREATE DATABASE "{database}"'.encode())
    backend = PostgresBackend(database=database)
    work_dir.mkdir(parents=True, exist_ok=True)
    create_postgres_schema(backend, work_dir=work_dir, cache_dir=cache_dir)
    sizes = [(f"t{i:04d}", per_table) for i in range(tables)] + ([("big", big)] if big else [])
    with psycopg.connect(backend.conninfo, autocommit=True) as conn:
        conn.execute(
            b"""INSERT INTO "DBS" VALUES (1, 'benchmark', %s, 'bench', 'catalogd', 'USER')""",
            (f"{warehouse}/bench.db",),
        )
        conn.execute(b"""INSERT INTO "CDS" VALUES (1)""")
        conn.execute(
            b"""INSERT INTO "COLUMNS_V2" VALUES (1, NULL, 'id', 'bigint', 0),
            (1, NULL, 'amount', 'double', 1), (1, 'free text', 'note', 'string', 2)"""
        )
        next_id = 1
        for tbl_id, (name, parts) in enumerate(sizes, start=1):
            _table(conn, tbl_id, name, parts, next_id, warehouse)
            next_id += parts + 1
        conn.execute(
            b"""INSERT INTO "SEQUENCE_TABLE" VALUES
            ('org.apache.hadoop.hive.metastore.model.MDatabase', 10),
            ('org.apache.hadoop.hive.metastore.model.MTable', %s),
            ('org.apache.hadoop.hive.metastore.model.MStorageDescriptor', %s),
            ('org.apache.hadoop.hive.metastore.model.MSerDeInfo', %s),
            ('org.apache.hadoop.hive.metastore.model.MPartition', %s),
            ('org.apache.hadoop.hive.metastore.model.MColumnDescriptor', 10)""",
            (len(sizes) + 10, next_id + 10, next_id + 10, next_id + 10),
        )
        conn.execute(b"ANALYZE")
    return time.monotonic() - started


def _table(conn: psycopg.Connection, tbl_id: int, name: str, parts: int, sd: int, wh: str) -> None:
    """Table ``tbl_id`` with SD/SerDe id ``sd`` and partitions ``sd+1 .. sd+parts``."""
    loc = f"{wh}/bench.db/{name}"
    first, last = sd, sd + parts  # SD/SerDe ids: the table's, then its partitions'
    conn.execute(
        b"""INSERT INTO "SERDES" SELECT g, NULL, %s FROM generate_series(%s::bigint, %s) g""",
        (SERDE, first, last),
    )
    conn.execute(
        b"""INSERT INTO "SERDE_PARAMS" SELECT g, 'serialization.format', '1'
        FROM generate_series(%s::bigint, %s) g""",
        (first, last),
    )
    conn.execute(
        b"""INSERT INTO "SDS" SELECT g, 1, %s, false, false,
            CASE WHEN g = %s THEN %s ELSE %s || '/dt=' || to_char(date '2024-01-01' +
                 ((g - %s - 1) / 100)::int, 'YYYY-MM-DD') || '/region=r' || ((g - %s - 1) %% 100)
            END, -1, %s, g
        FROM generate_series(%s::bigint, %s) g""",
        (INPUT, first, loc, loc, first, first, OUTPUT, first, last),
    )
    conn.execute(
        b"""INSERT INTO "TBLS" VALUES (%s, 1700000000, 1, 0, 'catalogd', 0, false, %s, %s,
            'MANAGED_TABLE', NULL, NULL)""",
        (tbl_id, first, name),
    )
    conn.execute(
        b"""INSERT INTO "TABLE_PARAMS" VALUES (%s, 'transient_lastDdlTime', '1700000000'),
            (%s, 'spark.sql.statistics.numRows', '1000')""",
        (tbl_id, tbl_id),
    )
    conn.execute(
        b"""INSERT INTO "PARTITION_KEYS" VALUES (%s, NULL, 'dt', 'string', 0),
            (%s, NULL, 'region', 'string', 1)""",
        (tbl_id, tbl_id),
    )
    if not parts:
        return
    conn.execute(
        b"""INSERT INTO "PARTITIONS" SELECT g, 1700000000, 0,
            'dt=' || to_char(date '2024-01-01' + ((g - %s - 1) / 100)::int, 'YYYY-MM-DD')
            || '/region=r' || ((g - %s - 1) %% 100), g, %s
        FROM generate_series(%s::bigint, %s) g""",
        (first, first, tbl_id, first + 1, last),
    )
    conn.execute(
        b"""INSERT INTO "PARTITION_KEY_VALS"
        SELECT g, to_char(date '2024-01-01' + ((g - %s - 1) / 100)::int, 'YYYY-MM-DD'), 0
        FROM generate_series(%s::bigint, %s) g
        UNION ALL SELECT g, 'r' || ((g - %s - 1) %% 100), 1
        FROM generate_series(%s::bigint, %s) g""",
        (first, first + 1, last, first, first + 1, last),
    )
    conn.execute(
        b"""INSERT INTO "PARTITION_PARAMS"
        SELECT g, k, CASE k WHEN 'transient_lastDdlTime' THEN '1700000000'
                            WHEN 'numFiles' THEN '1' ELSE (g %% 100000)::text END
        FROM generate_series(%s::bigint, %s) g,
             unnest(ARRAY['numFiles', 'totalSize', 'numRows', 'transient_lastDdlTime']) k""",
        (first + 1, last),
    )
