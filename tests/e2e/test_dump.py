"""``catalogd dump`` against a real HMS populated by real PySpark SQL."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import idl
from catalogd import sources as loader
from catalogd.hms.client import MetastoreClient
from subscriber.protocol.hive_types import type_name
from subscriber.protocol.keys import parse_partition_name

pytestmark = [pytest.mark.hms, pytest.mark.spark, pytest.mark.timeout(600)]
co = idl.catalog_objects


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "catalogd.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def expected_keys(warehouse) -> set[str]:  # noqa: ANN001
    keys = {f"DATABASE:{d.name}" for d in warehouse.databases}
    for t in warehouse.tables:
        kind = "VIEW" if t.table_type == "VIRTUAL_VIEW" else "TABLE"
        keys.add(f"{kind}:{t.db}.{t.name}")
        keys.update(f"HDFS_PARTITION:{t.db}.{t.name}:{p}" for p in t.partitions)
    return keys


def test_dump_json_lists_exactly_what_spark_created(warehouse) -> None:  # noqa: ANN001
    result = run_cli("dump", "--hms", warehouse.uri, "--json")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    ours = {d.name for d in warehouse.databases}
    keys = {r["key"] for r in rows if r["key"].split(":", 1)[1].split(".")[0] in ours}
    assert keys == expected_keys(warehouse)
    versions = [r["version"] for r in rows]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert all(r["type"] == r["key"].split(":")[0] for r in rows)


def test_dump_summary_counts(warehouse) -> None:  # noqa: ANN001
    result = run_cli("dump", "--hms", warehouse.uri)
    assert result.returncode == 0, result.stderr
    assert "partitions" in result.stdout and "load time" in result.stdout


def test_loaded_objects_match_the_warehouse_field_by_field(warehouse) -> None:  # noqa: ANN001
    with MetastoreClient(warehouse.uri) as client:
        objects, _ = loader.load_catalog(loader.ThriftSource(client))
    for db in warehouse.databases:
        tdb = objects[f"DATABASE:{db.name}"].db
        assert tdb.db_name == db.name and tdb.metastore_db.locationUri == db.location
    for spec in warehouse.tables:
        if spec.table_type == "VIRTUAL_VIEW":
            obj = objects[f"VIEW:{spec.db}.{spec.name}"]
            assert obj.type == co.TCatalogObjectType.VIEW
            assert obj.table.table_type == co.TTableType.VIEW
            assert obj.table.metastore_table.viewOriginalText
            continue
        table = objects[f"TABLE:{spec.db}.{spec.name}"].table
        assert table.table_type == co.TTableType.HDFS_TABLE
        assert [(c.columnName, type_name(c.columnType)) for c in table.columns] == [
            (n.lower(), t) for n, t in spec.columns
        ]
        assert [(c.columnName, type_name(c.columnType)) for c in table.clustering_columns] == [
            (n.lower(), t) for n, t in spec.partition_keys
        ]
        assert table.metastore_table.tableType == spec.table_type
        assert table.hdfs_table.hdfsBaseDir.rstrip("/") == (spec.location or "").rstrip("/")
        fmt = table.hdfs_table.prototype_partition.hdfs_storage_descriptor.fileFormat
        assert co.THdfsFileFormat._VALUES_TO_NAMES[fmt].lower().startswith(spec.format[:4])
        for name in spec.partitions:
            part = objects[f"HDFS_PARTITION:{spec.db}.{spec.name}:{name}"].hdfs_partition
            assert part.partition_name == name
            assert part.location.suffix.rstrip("/").endswith(name)
            values = [e.nodes[0] for e in part.partitionKeyExprs]
            literal = [
                str(v.string_literal.value if v.string_literal else v.int_literal.value)
                for v in values
            ]
            assert literal == [v for _, v in parse_partition_name(name)]
            assert part.hdfs_storage_descriptor.fileFormat == fmt


def test_unreachable_hms_is_a_clear_error() -> None:
    result = run_cli("dump", "--hms", "thrift://127.0.0.1:1", timeout=60)
    assert result.returncode == 3
    assert "thrift://127.0.0.1:1" in result.stderr


def test_malformed_hms_address_is_a_usage_error() -> None:
    result = run_cli("dump", "--hms", "http://nope")
    assert result.returncode == 2
    assert "thrift://host:9083" in result.stderr
