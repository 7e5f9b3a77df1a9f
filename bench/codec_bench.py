"""Codec benchmark: binary vs compact protocol, our validator, zlib.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/codec_bench.py --n 100000

Builds ``n`` realistic partition ``TCatalogObject``s (two partition keys as
Impala literal exprs, location, stats, HMS parameters, storage descriptor) and
measures, best of ``--repeat`` runs each:

* thriftpy2's Cython binary protocol vs its compact protocol, encoding and
  decoding one object at a time and all of them as one list (a ``THdfsTable``
  whose ``partitions`` map holds them, Impala's whole-table form);
* the cost of ``subscriber.protocol.codec``'s safety walk (``validate``) and of the
  public ``encode_object``/``decode_object``;
* bytes per partition, raw and zlib level 1 (alone and as one list), zlib
  throughput, and how well frames of growing size compress (the basis of
  ``codec.COMPRESS_THRESHOLD``).

All figures come from the same run, so read them as ratios on a noisy machine.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import zlib
from collections.abc import Callable
from functools import partial
from typing import Any

from thriftpy2.protocol import TCompactProtocolFactory, TCyBinaryProtocolFactory
from thriftpy2.transport import TCyMemoryBuffer

import idl
from subscriber.protocol import codec

CO = idl.catalog_objects
CS = idl.catalog_service
TY = sys.modules["idl.Types_thrift"]
EX = sys.modules["idl.Exprs_thrift"]

PROTOCOLS = {
    "binary": TCyBinaryProtocolFactory(strict_decode=True),
    "compact": TCompactProtocolFactory(),
}


def literal(value: str | int) -> Any:
    """One partition key value as Impala carries it: a single-node literal TExpr."""
    is_int = isinstance(value, int)
    scalar = TY.TScalarType(type=TY.TPrimitiveType.INT if is_int else TY.TPrimitiveType.STRING)
    node = EX.TExprNode(
        node_type=EX.TExprNodeType.INT_LITERAL if is_int else EX.TExprNodeType.STRING_LITERAL,
        type=TY.TColumnType(types=[TY.TTypeNode(type=TY.TTypeNodeType.SCALAR, scalar_type=scalar)]),
        num_children=0,
        is_constant=True,
        int_literal=EX.TIntLiteral(value=value) if is_int else None,
        string_literal=None if is_int else EX.TStringLiteral(value=value),
    )
    return EX.TExpr(nodes=[node])


def partition(i: int) -> Any:
    """The i-th partition of sales.events, partitioned by (ds string, hr int)."""
    ds = f"{2020 + i // 8760}-{1 + i // 720 % 12:02d}-{1 + i // 24 % 28:02d}"
    name = f"ds={ds}/hr={i % 24}"
    part = CO.THdfsPartition(
        partitionKeyExprs=[literal(ds), literal(i % 24)],
        location=CO.THdfsPartitionLocation(prefix_index=0, suffix=name),
        id=i,
        access_level=CO.TAccessLevel.READ_WRITE,
        stats=CO.TTableStats(num_rows=10_000 + i * 7 % 5000, total_file_bytes=1_048_576 + i),
        is_marked_cached=i % 10 == 0,
        hms_parameters={
            "transient_lastDdlTime": str(1_700_000_000 + i),
            "numFiles": str(1 + i % 4),
            "totalSize": str(1_048_576 + i),
            "numRows": str(10_000 + i * 7 % 5000),
            "COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}',
        },
        db_name="sales",
        tbl_name="events",
        partition_name=name,
        hdfs_storage_descriptor=CO.THdfsStorageDescriptor(
            lineDelim=10,
            fieldDelim=1,
            collectionDelim=2,
            mapKeyDelim=3,
            escapeChar=0,
            quoteChar=0,
            fileFormat=CO.THdfsFileFormat.PARQUET,
            blockSize=0,
        ),
    )
    return CO.TCatalogObject(
        type=CO.TCatalogObjectType.HDFS_PARTITION, catalog_version=1_000 + i, hdfs_partition=part
    )


def whole_table(parts: list[Any]) -> Any:
    """All partitions in one THdfsTable, the 'one list' case."""
    return CO.THdfsTable(
        hdfsBaseDir="hdfs://nn:8020/warehouse/sales.db/events",
        colNames=["ds", "hr", "user_id", "event"],
        nullPartitionKeyValue="__HIVE_DEFAULT_PARTITION__",
        nullColumnValue="\\N",
        partitions={p.hdfs_partition.id: p.hdfs_partition for p in parts},
        prototype_partition=CO.THdfsPartition(id=-1),
        partition_prefixes=["hdfs://nn:8020/warehouse/sales.db/events/"],
    )


def raw_encode(factory: Any, obj: Any) -> bytes:
    buf = TCyMemoryBuffer()
    factory.get_protocol(buf).write_struct(obj)
    return bytes(buf.getvalue())


def raw_decode(factory: Any, cls: type, data: bytes) -> Any:
    # Trusted input only: this is the unguarded decoder codec.decode protects.
    obj = cls()
    factory.get_protocol(TCyMemoryBuffer(data)).read_struct(obj)
    return obj


def best(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    """Best wall time of ``repeat`` runs, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def encode_all(factory: Any, objs: list[Any]) -> list[bytes]:
    return [raw_encode(factory, o) for o in objs]


def decode_all(factory: Any, blobs: list[bytes]) -> list[Any]:
    return [raw_decode(factory, CO.TCatalogObject, b) for b in blobs]


Rows = list[tuple[str, str]]


def per_item(n: int, seconds: float) -> str:
    return f"{n / seconds:>12,.0f} /s   ({seconds * 1e6 / n:6.1f} us each)"


def protocol_rows(rows: Rows, objs: list[Any], table: Any, rep: int) -> dict[str, list[float]]:
    """Unguarded encode/decode times per protocol: one at a time, then as one list."""
    n, times = len(objs), {}
    for name, factory in PROTOCOLS.items():
        t_enc, blobs = best(rep, partial(encode_all, factory, objs))
        t_dec, back = best(rep, partial(decode_all, factory, blobs))
        assert back[n // 2] == objs[n // 2]
        t_lenc, big = best(rep, partial(raw_encode, factory, table))
        t_ldec, _ = best(rep, partial(raw_decode, factory, CO.THdfsTable, big))
        times[name] = [t_enc, t_dec, t_lenc, t_ldec]
        rows.append((f"{name}: encode one at a time", per_item(n, t_enc)))
        rows.append((f"{name}: decode one at a time (unguarded)", per_item(n, t_dec)))
        rows.append((f"{name}: encode as one list", per_item(n, t_lenc)))
        rows.append((f"{name}: decode as one list (unguarded)", per_item(n, t_ldec)))
        rows.append((f"{name}: bytes per partition", f"{sum(map(len, blobs)) / n:12.1f}"))
    return times


def decode_blobs(blobs: list[bytes]) -> list[Any]:
    return [codec.decode_object(b) for b in blobs]


def without_gc(fn: Callable[..., Any], *args: Any) -> Any:
    """Run fn with the cyclic collector paused: each decoded partition is ~17
    tracked objects, and with many alive, collections dominate decoding."""
    gc.disable()
    try:
        return fn(*args)
    finally:
        gc.enable()


def codec_rows(rows: Rows, objs: list[Any], table: Any, rep: int) -> None:
    """The public codec: its safety walk, checked and unchecked encoding, guarded decoding."""
    n = len(objs)
    blobs = [codec.encode_object(o) for o in objs]
    # A whole table of many partitions exceeds the codec's default memory
    # bound (MAX_DECODED_SIZE); lift it to measure speed at any --n.
    big, limit = codec.encode(table, check=False), 2**40

    def validate_all() -> None:
        for blob in blobs:
            codec.validate(CO.TCatalogObject, blob)

    figures: list[tuple[str, Callable[[], Any]]] = [
        ("codec.validate (safety walk) one at a time", validate_all),
        (
            "codec.encode_object(check=False)",
            lambda: [codec.encode_object(o, check=False) for o in objs],
        ),
        ("codec.encode_object (checked)", lambda: [codec.encode_object(o) for o in objs]),
        ("codec.decode_object (walk + decode)", lambda: [codec.decode_object(b) for b in blobs]),
        ("codec.decode_object, cyclic GC paused", partial(without_gc, decode_blobs, blobs)),
        (
            "codec.validate as one list",
            partial(codec.validate, CO.THdfsTable, big, max_decoded_size=limit),
        ),
        (
            "codec.decode as one list",
            partial(codec.decode, CO.THdfsTable, big, max_decoded_size=limit),
        ),
    ]
    for label, fn in figures:
        rows.append((label, per_item(n, best(rep, fn)[0])))


def zlib_rows(rows: Rows, objs: list[Any], table: Any, rep: int) -> None:
    """Sizes and speed of zlib level 1, per object, on the list, and on deltas of k entries."""
    n = len(objs)
    blobs = [codec.encode_object(o) for o in objs]
    big = codec.encode(table, check=False)
    z_each = sum(len(zlib.compress(b, 1)) for b in blobs) / n
    t_z, zbig = best(rep, partial(zlib.compress, big, 1))
    t_unz, _ = best(rep, partial(zlib.decompress, zbig))
    mb = len(big) / 1e6
    rows.append(("zlib-1 bytes per partition, each alone", f"{z_each:12.1f}"))
    rows.append(("zlib-1 bytes per partition, as one list", f"{len(zbig) / n:12.1f}"))
    rows.append(("zlib-1 ratio on the list", f"{len(big) / len(zbig):12.1f} x"))
    rows.append(("zlib-1 compress", f"{mb / t_z:12.1f} MB/s ({t_z * 1e3:.1f} ms for {mb:.1f} MB)"))
    rows.append(("zlib decompress", f"{mb / t_unz:12.1f} MB/s ({t_unz * 1e3:.1f} ms)"))
    for k in (1, 2, 4, 8, 32, 128):
        entries = [
            CS.TCatalogEntry(
                key=f"HDFS_PARTITION:sales.events:{o.hdfs_partition.partition_name}",
                version=o.catalog_version,
                object=b,
            )
            for o, b in zip(objs[:k], blobs[:k], strict=True)
        ]
        data = codec.encode(
            CS.TDelta(service_id="bench", from_version=1, to_version=2, entries=entries)
        )
        t_c, packed = best(rep * 50, partial(zlib.compress, data, 1))
        t_u, _ = best(rep * 50, partial(zlib.decompress, packed))
        ratio = len(data) / len(packed)
        rows.append(
            (
                f"delta of {k:>3} partitions: raw -> zlib-1",
                f"{len(data):8d} -> {len(packed):6d} B ({ratio:4.1f} x, "
                f"+{(t_c + t_u) * 1e6:5.1f} us to compress and expand)",
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="partitions (default 100000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure, best taken")
    args = parser.parse_args()
    objs = [partition(i) for i in range(args.n)]
    table = whole_table(objs)
    rows: Rows = []
    times = protocol_rows(rows, objs, table, args.repeat)
    codec_rows(rows, objs, table, args.repeat)
    zlib_rows(rows, objs, table, args.repeat)
    width = max(len(label) for label, _ in rows)
    python = sys.version.split()[0]
    print(f"codec bench: {args.n:,} partitions, best of {args.repeat}, Python {python}")
    for label, value in rows:
        print(f"  {label:<{width}}  {value}")
    ratios = [c / b for b, c in zip(times["binary"], times["compact"], strict=True)]
    print(
        "  compact / binary time: encode {:.1f}x, decode {:.1f}x, "
        "list encode {:.1f}x, list decode {:.1f}x".format(*ratios)
    )


if __name__ == "__main__":
    main()
