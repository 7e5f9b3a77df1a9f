"""catalogd's compact THdfsFileDesc encoding and the directory listing behind it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import idl
from catalogd.files.listing import list_directory, list_locations, local_path
from catalogd.files.metadata import FileMetadata
from subscriber.protocol import codec
from subscriber.protocol.errors import ProtocolError
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
