"""The Spark statements of docs/HMS-ENDPOINT.md ("What an unmodified PySpark 4.3
driver asks HMS"), for tests that run them through the HMS endpoint.

``SETUP`` makes database ``hx`` (with :data:`FUNCTION` made over Thrift); ``READS``
only read; ``WRITES`` pairs each write with the reads that must show it at once.
``T`` in ``WRITES`` stands for a table name of each session's own.
"""

from __future__ import annotations

SETUP = [
    "CREATE DATABASE hx",
    "CREATE TABLE hx.events (id INT, v STRING, dt STRING) USING parquet PARTITIONED BY (dt)",
    "INSERT INTO hx.events PARTITION (dt='2024-01-01') VALUES (1, 'a'), (2, 'b')",
    "INSERT INTO hx.events PARTITION (dt='2024-01-02') VALUES (3, 'c')",
    "CREATE TABLE hx.clicks (id INT, n INT) PARTITIONED BY (h INT) STORED AS PARQUET",
    "INSERT INTO hx.clicks PARTITION (h=1) VALUES (1, 10), (3, 30)",
    "INSERT INTO hx.clicks PARTITION (h=2) VALUES (2, 20)",
]

# (database, name, class) of a function made over Thrift (Spark 4.3 cannot make a
# permanent function without a jar it can load).
FUNCTION = ("hx", "shout", "org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper")

READS = [
    "SHOW DATABASES",
    "SHOW TABLES IN hx",
    "DESCRIBE TABLE hx.events",
    "DESCRIBE EXTENDED hx.clicks",
    "@getTable hx.events",
    "@listTables hx",
    "@listColumns hx.clicks",
    "SHOW PARTITIONS hx.events",
    "SHOW PARTITIONS hx.clicks PARTITION (h=1)",
    "SELECT count(*) FROM hx.events WHERE dt = '2024-01-02'",
    "SELECT count(*) FROM hx.events",
    "SELECT sum(c.n) FROM hx.events e JOIN hx.clicks c ON e.id = c.id"
    " WHERE e.dt >= '2024-01-01' AND c.h = 1",
    "SELECT * FROM hx.clicks WHERE h IN (1, 2) ORDER BY id",
    "SHOW USER FUNCTIONS IN hx",
    "DESCRIBE FUNCTION hx.shout",
]

WRITES = [
    ("CREATE TABLE hx.T (a INT, p STRING) USING parquet PARTITIONED BY (p)", ["SHOW TABLES IN hx"]),
    ("INSERT INTO hx.T PARTITION (p='x') VALUES (1)", ["SHOW PARTITIONS hx.T"]),
    ("ALTER TABLE hx.T ADD PARTITION (p='y')", ["SHOW PARTITIONS hx.T"]),
    ("ALTER TABLE hx.T SET TBLPROPERTIES ('k'='v')", ["SHOW TBLPROPERTIES hx.T ('k')"]),
    (
        "CREATE FUNCTION hx.T_fn AS 'org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper'",
        ["SHOW USER FUNCTIONS IN hx"],
    ),
    ("DROP FUNCTION hx.T_fn", ["SHOW USER FUNCTIONS IN hx"]),
    ("DROP TABLE hx.T", ["SHOW TABLES IN hx"]),
]


def writes_for(table: str) -> list[str]:
    """``WRITES`` flattened (each write, then its reads) with ``T`` as ``table``."""
    out = []
    for write, reads in WRITES:
        out += [s.replace("hx.T", f"hx.{table}") for s in (write, *reads)]
    return out
