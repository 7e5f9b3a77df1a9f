"""A replica's cost of one published change, by catalog size: it must not grow with the catalog.

::

    .venv/bin/python bench/change_bench.py [--sizes 10,1000,10000,100000] [--changes 2000]

Every subscriber pays this on its one transport thread for every change catalogd
publishes: the PUB message of one changed table header read
(:func:`subscriber.protocol.wire.parse_publication`) and applied by the sync machine
(:meth:`subscriber.sync.SyncMachine.on_part`: the inline commit, the cache's
copy-on-write, the change event). Catalogs of ``--sizes`` tables (1,000 a database,
each holding the same benchmark header; partitions do not enter the path), synced
in this process; then ``--changes`` changes of one table, each a real message as
catalogd publishes it. Figures are the best of ``--repeat`` timed loops (warm: a
subscriber that receives one change every few milliseconds runs this path cold, a few
times slower, see ``bench/propagation.py``).

Printed: microseconds per change at each size, and each size's cost over the
smallest catalog's in the same run (target <= 2x: copy-on-write proportional to the
change, not the catalog); and the message read by the scan catalogd's layout gets
(:mod:`subscriber.protocol.delta_scan`) against the general decoder, same bytes.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from support import synthetic
from support.measure import Result, add_output_argument, cpu_note, finish

import idl
from subscriber.protocol import codec, wire
from subscriber.protocol.delta import Delta, Entry
from subscriber.sync import SyncMachine

TARGET_RATIO = 2.0
SERVICE = "4af8456e" * 4  # as long as catalogd's service ids


def _header() -> bytes:
    payloads = synthetic.table_payloads("t0000", "file:/warehouse", 1, 1)
    return next(p for k, p in payloads.items() if k.startswith("TABLE:"))


def per_change_us(tables: int, changes: int, repeat: int, header: bytes) -> float:
    """Best microseconds per change (read + apply) over ``repeat`` loops."""
    keys = [f"TABLE:db{i // 1000:03d}.t{i:06d}" for i in range(tables)]
    machine = SyncMachine()
    now = time.monotonic()
    machine.on_connected(now)
    machine.on_snapshot(SERVICE, tables, [Entry(k, i + 1, header) for i, k in enumerate(keys)], now)
    machine.cache.emit_events = True  # as with a listener (Spark's integration has one)
    version, best = tables, float("inf")
    for _ in range(repeat):
        messages = []
        for i in range(changes):
            entry = Entry(keys[i % tables], version + i + 1, header)
            delta = Delta(version + i, version + i + 1, (entry,))
            messages.append(wire.delta_messages(SERVICE, delta, invalidations=False)[0])
        started = time.perf_counter()
        for topic, body in messages:
            machine.on_part(wire.parse_publication(topic, body), now)
        best = min(best, (time.perf_counter() - started) / changes)
        version += changes
    assert machine.cache.view.version == version
    return best * 1e6


def read_us(header: bytes, n: int, repeat: int) -> tuple[float, float]:
    """(scanned, general) best microseconds to read one change's message."""
    topic, body = wire.delta_messages(SERVICE, Delta(1, 2, (Entry("TABLE:db.t", 2, header),)))[0]
    tdelta = idl.catalog_service.TDelta

    def best(read: object) -> float:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            for _ in range(n):
                read()  # type: ignore[operator]
            times.append((time.perf_counter() - started) / n)
        return min(times) * 1e6

    def general() -> object:
        t = codec.unpack(tdelta, body)
        return wire.entries_from_thrift(t.entries), dict(t.counts)

    return best(lambda: wire.parse_publication(topic, body)), best(general)


def run(sizes: Sequence[int], changes: int, repeat: int) -> list[Result]:
    print(f"change_bench: catalogs of {list(sizes)} tables, {changes} changes; {cpu_note()}")
    header = _header()
    costs = {n: per_change_us(n, changes, repeat, header) for n in sizes}
    base = min(sizes)
    results = [
        Result(
            f"one change read and applied, {n:,} tables: cost / {base:,} tables'",
            costs[n] / costs[base],
            "x",
            TARGET_RATIO,
            goal="max",
            note=f"{costs[n]:.1f} us vs {costs[base]:.1f} us per change (warm)",
        )
        for n in sizes
        if n != base
    ]
    scanned, general = read_us(header, 20 * changes, repeat)
    results.append(
        Result(
            "one change's message: general decode / scan",
            general / scanned,
            "x",
            None,
            note=f"scan {scanned:.2f} us, general {general:.2f} us ({len(header)} B header)",
        )
    )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="10,1000,10000,100000", help="tables, comma-separated")
    parser.add_argument("--changes", type=int, default=2000, help="changes per timed loop")
    parser.add_argument("--repeat", type=int, default=5, help="timed loops per size (best kept)")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    return finish("change", run(sizes, args.changes, args.repeat), args)


if __name__ == "__main__":
    raise SystemExit(main())
