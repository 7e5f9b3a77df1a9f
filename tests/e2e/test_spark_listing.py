"""Listing a real partitioned table's directories through Spark (Hadoop's FileSystem).

A table written by Spark SQL into the real HMS's warehouse, plus what a thread
pool and Spark's file index treat differently (hidden files, Parquet's
``_metadata``, a ``_k=v`` directory, a copy in progress, a nested directory, a
partition value Hive escapes in the directory name, a partition whose directory
is gone). Its partition directories, forced through the Spark backend
(``spark_threshold=0``: a Spark job even for ``file:`` URIs), must give exactly
the file metadata the thread pool gives.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from catalogd.conversion import objects as convert
from catalogd.files.lister import Lister
from catalogd.files.listing import list_locations, local_path
from catalogd.files.metadata import FileMetadata
from catalogd.files.spark_listing import SparkLister
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.protocol.files import partition_files

pytestmark = [pytest.mark.hms, pytest.mark.spark, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def table(spark: Any, hms: EmbeddedMetastore) -> Iterator[tuple[str, str, list[str]]]:
    """``(db, table, partition locations)`` of a Spark-written partitioned table."""
    db = f"ls_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE DATABASE {db}")
    spark.sql(
        f"CREATE TABLE {db}.t (id BIGINT, s STRING) PARTITIONED BY (p STRING) STORED AS PARQUET"
    )
    values = (
        "CASE WHEN id % 4 = 0 THEN 'a/b' WHEN id % 4 = 1 THEN 'x y' ELSE CAST(id % 4 AS STRING) END"
    )
    for _ in range(2):  # two inserts: several files per partition
        spark.sql(
            f"INSERT INTO {db}.t PARTITION (p) "
            f"SELECT id, CAST(id AS STRING), {values} FROM range(40)"
        )
    with MetastoreClient(hms.uri) as client:
        parts = list(client.iter_partitions(db, "t"))
    locations = [p.sd.location for p in parts]
    assert len(locations) == 4 and any("%2F" in loc for loc in locations)
    first = Path(local_path(locations[0]) or "")
    (first / "_SUCCESS").write_bytes(b"")
    (first / ".hidden.crc").write_bytes(b"c")
    (first / "_metadata").write_bytes(b"m")  # Spark's index keeps it; we skip it
    (first / "part-x.parquet._COPYING_").write_bytes(b"half")
    (first / "_k=1").mkdir()
    (first / "_k=1" / "inside-hidden-dir").write_bytes(b"h")
    (first / "nested").mkdir()
    (first / "nested" / "part-nested.parquet").write_bytes(b"n" * 11)
    gone = Path(local_path(locations[1]) or "")
    shutil.rmtree(gone)
    yield db, "t", locations
    spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


def _by_path(files: list[Any] | None) -> list[Any]:
    return sorted(files or [], key=lambda f: f.relative_path)


def test_the_spark_job_lists_exactly_what_the_thread_pool_lists(
    spark: Any, table: tuple[str, str, list[str]]
) -> None:
    _, _, locations = table
    lister = Lister(spark_threshold=0, spark=SparkLister(spark))
    group = f"listing-{uuid.uuid4().hex[:6]}"
    spark.sparkContext.setJobGroup(group, "the Spark listing under test")
    try:
        by_spark = lister(locations)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert spark.sparkContext.statusTracker().getJobIdsForGroup(group), "no Spark job ran"
    assert lister.stats.by_spark == len(locations) and lister.stats.by_threads == 0
    by_threads = list_locations(locations)
    assert [_by_path(f) for f in by_spark] == [_by_path(f) for f in by_threads]
    first = {f.relative_path for f in by_spark[0] or []}
    assert "nested/part-nested.parquet" in first and len(first) >= 3
    assert not any(p.startswith(("_", ".")) or p.endswith("._COPYING_") for p in first)
    assert by_spark[1] == []  # the partition whose directory is gone
    # In the driver's JVM (no job), the same files.
    serial = SparkLister(spark)(locations, distributed=False)
    assert [_by_path(f) for f in serial] == [_by_path(f) for f in by_threads]


def test_attached_file_metadata_is_the_same_through_either_backend(
    spark: Any, hms: EmbeddedMetastore, table: tuple[str, str, list[str]]
) -> None:
    db, name, _ = table
    with MetastoreClient(hms.uri) as client:
        hms_table = client.get_table(db, name)
        parts = list(client.iter_partitions(db, name))
    attached = []
    for lister in (Lister(spark_threshold=0, spark=SparkLister(spark)), Lister()):
        objects = convert.table_objects(hms_table, parts)
        FileMetadata([db], lister=lister).attach(objects)
        attached.append(
            {
                key: (_by_path(partition_files(o.hdfs_partition)), o.hdfs_partition.stats)
                for key, o in objects.items()
                if getattr(o, "hdfs_partition", None) is not None
            }
        )
    by_spark, by_threads = attached
    assert by_spark == by_threads and len(by_spark) == 4
    assert (
        sum(len(files) for files, _ in by_spark.values()) >= 5
    )  # 4 partitions x 2 inserts, one gone, one nested
