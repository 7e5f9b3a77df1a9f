"""Bytes on the wire for changing ONE partition of a 100,000-partition table.

::

    .venv/bin/python bench/wire_bench.py [--dts 1000] [--regions 100]

An in-process :class:`CatalogServer` serves ``bench.huge`` (``dts * regions``
partitions, built from realistic HMS structs via convert). A raw ZeroMQ SUB
socket on the server's PUB endpoint captures what is actually published; the
figure is the sum of the frames (topic + body) of every delta message of the
change, heartbeats excluded, plus ZMTP's frame headers (2 bytes per frame
under 256 bytes, 9 above) for the on-the-socket total.

Baselines from the same run: republishing the whole table (every partition and
the header changed, captured the same way), and the size of the table as one
Impala-style ``TTable`` object with all partitions inside, packed by our codec.
"""

from __future__ import annotations

import argparse
import time

import zmq
from support import synthetic
from support.measure import Result, add_output_argument, cpu_note, finish

from catalogd.server.thread import CatalogServer, ServerConfig
from subscriber.protocol import codec, wire
from subscriber.sync import Commit

TABLE = "huge"
TARGET_BYTES = 2048


def _zmtp(frame: int) -> int:
    return frame + (2 if frame < 256 else 9)


def capture(sub: zmq.Socket, to_version: int, timeout_s: float = 60) -> tuple[int, int, int]:
    """Read published messages until the commit of ``to_version``.

    Returns (frame bytes, bytes with ZMTP headers, messages) of that delta's messages.
    """
    frames = with_headers = messages = 0
    deadline = time.monotonic() + timeout_s
    while True:
        if not sub.poll(int(max(0.0, deadline - time.monotonic()) * 1000)):
            raise TimeoutError(f"no commit of version {to_version} published")
        parts = sub.recv_multipart()  # one frame: topic, then body
        topic, body = wire.split_publication(parts[0])
        if topic[:1] == wire.TOPIC_HEARTBEAT:
            continue
        commit: Commit | None = None
        if topic == wire.TOPIC_COMMIT:
            parsed = wire.parse_publication(topic, body)
            assert isinstance(parsed, Commit)
            commit = parsed
        if commit is not None and commit.to_version < to_version:
            frames = with_headers = messages = 0  # an older delta: start over
            continue
        messages += 1
        frames += sum(len(p) for p in parts)
        with_headers += sum(_zmtp(len(p)) for p in parts)
        if commit is not None:
            return frames, with_headers, messages


def _changed(payload: bytes, marker: str) -> bytes:
    obj = codec.decode_object(payload)
    target = obj.hdfs_partition if obj.hdfs_partition is not None else obj.table.metastore_table
    params = target.hms_parameters if obj.hdfs_partition is not None else target.parameters
    params["transient_lastDdlTime"] = marker
    return codec.encode_object(obj)


def impala_style_size(catalog: dict[str, bytes], header_key: str) -> int:
    """Packed size of the whole table as ONE TTable holding every partition."""
    table = codec.decode_object(catalog[header_key])
    parts = {}
    for key, payload in catalog.items():
        if key.startswith("HDFS_PARTITION:"):
            part = codec.decode_object(payload).hdfs_partition
            parts[part.id] = part
    table.table.hdfs_table.partitions = parts
    table.table.hdfs_table.has_full_partitions = True
    return len(codec.pack(table))


def run(dts: int, regions: int) -> list[Result]:
    n = dts * regions
    print(f"wire: one partition of a {n}-partition table; {cpu_note()}")
    started = time.monotonic()
    catalog = dict(next(synthetic.catalog_payloads(0, 1, 1)))
    catalog.update(synthetic.table_payloads(TABLE, "file:/warehouse", dts, regions))
    print(f"  built {n} partitions in {time.monotonic() - started:.1f} s")
    header = f"TABLE:{synthetic.DB}.{TABLE}"
    part_keys = [k for k in catalog if k.startswith("HDFS_PARTITION:")]
    server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*", heartbeat_interval_s=0.2))
    server.commit(catalog).result()
    server.start()
    sub: zmq.Socket = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.RCVHWM, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(server.pub_endpoint)
    try:
        if not sub.poll(10_000):  # a heartbeat arrives once the subscription is live
            raise TimeoutError("nothing published within 10 s")
        sub.recv_multipart()
        key = part_keys[len(part_keys) // 2]
        stats_before = server.stats.published_bytes
        delta = server.commit({key: _changed(catalog[key], "1")}).result(30)
        one, one_zmtp, one_msgs = capture(sub, delta.to_version)
        stats_one = server.stats.published_bytes - stats_before
        print(
            f"  one partition: {len(delta.entries)} entry, {one_msgs} messages, "
            f"{one} frame bytes ({one_zmtp} with ZMTP headers; server counted {stats_one}); "
            f"payload {len(catalog[key])} B encoded"
        )
        started = time.monotonic()
        everything = {k: _changed(catalog[k], "2") for k in [header, *part_keys]}
        delta = server.commit(everything).result(120)
        whole, whole_zmtp, whole_msgs = capture(sub, delta.to_version)
        print(
            f"  whole table republished: {len(delta.entries)} entries, {whole_msgs} messages, "
            f"{whole} frame bytes (change built and published in "
            f"{time.monotonic() - started:.1f} s)"
        )
    finally:
        sub.close(linger=0)
        server.close()
    impala = impala_style_size(catalog, header)
    print(f"  Impala-style single TTable with {n} partitions, packed: {impala} bytes")
    return [
        Result(
            f"wire: one partition changed in a {n}-partition table",
            one_zmtp,
            "B",
            TARGET_BYTES,
            note=f"{one} B of frames; whole table {whole_zmtp / one_zmtp:,.0f}x more",
        ),
        Result(
            "wire: whole table republished (same run)",
            whole_zmtp,
            "B",
            note=f"{whole_zmtp / n:.1f} B/partition, zlib-compressed",
        ),
        Result(
            "wire: Impala-style one TTable object, packed",
            impala,
            "B",
            note=f"{impala / one_zmtp:,.0f}x the one-partition delta",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dts", type=int, default=1000)
    parser.add_argument("--regions", type=int, default=100)
    add_output_argument(parser)
    args = parser.parse_args(argv)
    return finish("wire size", run(args.dts, args.regions), args)


if __name__ == "__main__":
    raise SystemExit(main())
