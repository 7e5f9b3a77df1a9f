"""catalogd's compact THdfsFileDesc encoding and the directory listing behind it."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import idl
from catalogd.files.lister import Lister
from catalogd.files.listing import list_directory, list_locations, local_path, visible
from catalogd.files.metadata import FileMetadata
from catalogd.files.spark_listing import SparkLister, _assign, _rounds
from subscriber.protocol import codec
from subscriber.protocol.errors import ProtocolError, UnavailableError
from subscriber.protocol.files import FileInfo, decode, encode, file_descs, partition_files

pytestmark = pytest.mark.timeout(60)
co = idl.catalog_objects


@given(st.text(min_size=1), st.integers(0, 2**62), st.integers(0, 2**50))
def test_file_info_round_trips(path: str, length: int, mtime: int) -> None:
    info = FileInfo(path, length, mtime)
    assert decode(encode(info)) == FileInfo(path.encode().decode(), length, mtime)


def test_other_formats_are_refused() -> None:
    with pytest.raises(ProtocolError):
        decode(b"\x00abc")
    with pytest.raises(ProtocolError):
        decode(b"\x01\xff")


def test_a_spark_file_costs_well_under_150_bytes_in_the_encoded_partition() -> None:
    name = "part-00000-4c1e5f0b-9a7d-4f4e-8f7e-0c2d1b3a4e5f.c000.snappy.parquet"
    files = [
        FileInfo(name.replace("00000", f"{i:05d}"), 123_456, 1_700_000_000_000) for i in range(100)
    ]
    bare = co.TCatalogObject(
        type=co.TCatalogObjectType.HDFS_PARTITION,
        catalog_version=1,
        hdfs_partition=co.THdfsPartition(partitionKeyExprs=[], partition_name="p=1"),
    )
    with_files = co.TCatalogObject(
        type=co.TCatalogObjectType.HDFS_PARTITION,
        catalog_version=1,
        hdfs_partition=co.THdfsPartition(
            partitionKeyExprs=[], partition_name="p=1", file_desc=file_descs(files)
        ),
    )
    per_file = (len(codec.encode_object(with_files)) - len(codec.encode_object(bare))) / 100
    assert per_file <= 150
    decoded = codec.decode_object(codec.encode_object(with_files))
    assert partition_files(decoded) == sorted(files, key=lambda f: f.relative_path)


def test_listing_skips_hidden_files_and_lists_nested_ones(tmp_path: Path) -> None:
    (tmp_path / "a.parquet").write_bytes(b"x" * 10)
    (tmp_path / "_SUCCESS").write_bytes(b"")
    (tmp_path / ".a.parquet.crc").write_bytes(b"c")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.parquet").write_bytes(b"y" * 3)
    os.utime(tmp_path / "a.parquet", ns=(0, 5_000_000_000))
    files = sorted(list_directory(str(tmp_path)), key=lambda f: f.relative_path)
    assert files == [
        FileInfo("a.parquet", 10, 5000),
        FileInfo("sub/b.parquet", 3, files[1].mtime_ms),
    ]
    listed = list_locations([f"file:{tmp_path}", "hdfs://nn/x", str(tmp_path / "gone")])
    assert listed[1] is None and listed[2] == [] and len(listed[0] or []) == 2
    assert local_path("file:///a/b") == "/a/b" and local_path("s3a://b/k") is None


def test_locations_are_read_literally_as_hadoop_reads_them(tmp_path: Path) -> None:
    # Hive escapes "/" in a partition value as %2F in the directory's name.
    (tmp_path / "k=a%2Fb").mkdir()
    (tmp_path / "k=a%2Fb" / "f").write_bytes(b"1")
    assert local_path(f"file:{tmp_path}/k=a%2Fb") == f"{tmp_path}/k=a%2Fb"
    assert local_path("file:/t/k=x?y#z") == "/t/k=x?y#z"
    assert local_path("file://localhost/a") == "/a" and local_path("file://nn/a") is None
    assert local_path("hdfs:/x") is None and local_path("relative/x") is None
    assert [f.relative_path for f in list_locations([f"file:{tmp_path}/k=a%2Fb"])[0] or []] == ["f"]


def test_what_counts_as_a_data_file() -> None:
    assert visible("part-0.parquet") and visible("sub/part-0.parquet")
    assert not visible("_SUCCESS") and not visible(".part-0.crc") and not visible("_metadata")
    assert not visible("_k=1/part-0") and not visible("a/.staging/b")
    assert not visible("part-0.parquet._COPYING_")


def test_nested_and_repeated_directories_are_listed_in_separate_rounds() -> None:
    roots = ["file:/w/t/k=1", "hdfs://nn/w/t", "/w/t/k=1/", "file:/w/t/k=2", "file:/w/u"]
    rounds = list(_rounds(roots))
    assert rounds == [
        ["hdfs://nn/w/t", "file:/w/u"],
        ["file:/w/t/k=1", "file:/w/t/k=2"],
        ["/w/t/k=1/"],
    ]


def test_a_flattened_listing_is_assigned_to_its_directories_in_order() -> None:
    roots = ["hdfs:/w/t/k=1", "hdfs:/w/t/k=2", "hdfs:/w/t/k=3"]
    paths = [
        "hdfs://nn:8020/w/t/k=1/a",  # qualified by the file system: matched by path
        "hdfs://nn:8020/w/t/k=1/_x=1/b",  # Spark keeps it, catalogd does not
        "hdfs://nn:8020/w/t/k=3/sub/c",
    ]
    files = _assign(roots, paths, ["1", "2", "3"], ["10", "20", "30"])
    assert files == {
        "hdfs:/w/t/k=1": [FileInfo("a", 1, 10)],
        "hdfs:/w/t/k=2": [],
        "hdfs:/w/t/k=3": [FileInfo("sub/c", 3, 30)],
    }
    with pytest.raises(UnavailableError):
        _assign(roots[:1], ["hdfs://nn/elsewhere/x"], ["1"], ["1"])


def test_without_pyspark_local_paths_are_listed_and_others_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # as if it were not installed
    (tmp_path / "f.parquet").write_bytes(b"z" * 7)
    with pytest.raises(UnavailableError, match="needs PySpark"):
        SparkLister()(["hdfs://nn/x"])
    lister = Lister(spark_threshold=0)  # every listing would go to Spark
    with caplog.at_level(logging.ERROR):
        for _ in range(2):
            listed = lister([f"file:{tmp_path}", "hdfs://nn/x"])
            assert [f.relative_path for f in listed[0] or []] == ["f.parquet"]
            assert listed[1] is None
    errors = [r for r in caplog.records if "hdfs: directories with Spark needs" in r.message]
    assert len(errors) == 1  # once, not every cycle
    assert lister.stats.spark_failures == 2 and lister.stats.by_threads == 2
    lister.close()


def test_only_opted_in_tables_are_listed(tmp_path: Path) -> None:
    (tmp_path / "f.parquet").write_bytes(b"z" * 7)
    part = co.THdfsPartition(
        partitionKeyExprs=[],
        db_name="d",
        tbl_name="t",
        partition_name="p=1",
        location=co.THdfsPartitionLocation(prefix_index=-1, suffix=f"file:{tmp_path}"),
        stats=co.TTableStats(num_rows=1, total_file_bytes=0),
    )
    obj = co.TCatalogObject(
        type=co.TCatalogObjectType.HDFS_PARTITION, catalog_version=0, hdfs_partition=part
    )
    policy = FileMetadata()
    assert policy.attach({"k": obj}) == 0 and part.file_desc is None
    policy.opt_in("D", "T")
    assert policy.wants("d", "t") and not policy.wants("d", "u")
    assert policy.attach({"k": obj}) == 1
    assert part.total_file_size_bytes == 7 and part.stats.total_file_bytes == 7
    assert FileMetadata(["d"]).wants("d", "anything")
