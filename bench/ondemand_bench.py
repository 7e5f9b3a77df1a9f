"""On-demand vs replica subscribers: time to the first answer and memory, by catalog size.

::

    .venv/bin/python bench/ondemand_bench.py [--sizes 10,100,1000] [--dts 100] [--regions 10]

For each size (tables of ``dts * regions`` partitions, default 1,000 partitions
each: 10k, 100k and 1M partitions), the catalog (realistic payloads, built as
``sync_bench.py`` builds them and cached in ``--data-dir``) is committed into an
in-process :class:`CatalogServer`; then one fresh subscriber process per mode
(``support/subscriber_process.py ready``) measures constructor -> first
``get_table`` answered, its RSS then, and its RSS after reading 10 tables (each
header and every partition, 10,000 partitions). The replica in the same run is the
baseline. Targets (issue 25): on-demand ready <= 50 ms whatever the size; RSS after
reading 10 tables <= 64 MiB above an empty process.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zmq
from support import synthetic
from support.measure import Result, add_output_argument, cpu_note, finish
from sync_bench import cached_catalog

from catalogd.server.thread import CatalogServer, ServerConfig

HERE = Path(__file__).resolve().parent
DEFAULT_DIR = Path(tempfile.gettempdir()) / "catalogd-bench-sync"
WORKER = [sys.executable, "-m", "support.subscriber_process"]
TARGET_READY_S = 0.050
TARGET_RSS = 64 * 2**20
READ_TABLES = 10


def measure(endpoint: str, mode: str, tables: list[str], timeout_s: float) -> dict:
    ctx: zmq.Context = zmq.Context.instance()
    pull = ctx.socket(zmq.PULL)
    pull.bind("tcp://127.0.0.1:*")
    report_ep = pull.getsockopt(zmq.LAST_ENDPOINT).decode()
    try:
        proc = subprocess.Popen(
            [*WORKER, "ready", endpoint, report_ep, mode, ",".join(tables), str(timeout_s)],
            cwd=HERE,
        )
        if not pull.poll(int((timeout_s + 60) * 1000)):
            proc.kill()
            raise TimeoutError(f"the {mode} subscriber process did not report")
        report = pull.recv_json()
        proc.wait(timeout=60)
    finally:
        pull.close(linger=0)
    if "error" in report:
        raise RuntimeError(f"{mode} subscriber failed: {report['error']}")
    return report


def run(data_dir: Path, sizes: list[int], dts: int, regions: int) -> list[Result]:
    print(f"on-demand vs replica; {cpu_note()}")
    results: list[Result] = []
    for tables in sizes:
        partitions = tables * dts * regions
        changes: dict[str, bytes] = {}
        for payloads in cached_catalog(data_dir, tables, dts, regions):
            changes.update(payloads)
        server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*"))
        server.commit(changes).result()
        del changes
        server.start()
        names = [f"{synthetic.DB}.{synthetic.table_name(i)}" for i in range(READ_TABLES)]
        try:
            got = {
                mode: measure(server.endpoint, mode, names, 900)
                for mode in ("replica", "on-demand")
            }
        finally:
            server.close()
        replica, lazy = got["replica"], got["on-demand"]
        size = f"{partitions:,} partitions"
        print(f"  {size}: replica {replica}\n  {size}: on-demand {lazy}")
        results += [
            Result(
                f"on-demand ready (constructor -> first get_table), {size}",
                lazy["ready_s"],
                "s",
                TARGET_READY_S,
                note=f"replica {replica['ready_s']:.3f} s in the same run "
                f"({replica['ready_s'] / lazy['ready_s']:.0f}x)",
            ),
            Result(
                f"on-demand RSS after reading {READ_TABLES} tables, {size}",
                lazy["rss_read"] / 2**20,
                "MiB",
                TARGET_RSS / 2**20,
                note=f"{lazy['partitions_read']:,} partitions read in {lazy['read_s']:.2f} s; "
                f"replica +{replica['rss_read'] / 2**20:.0f} MiB",
            ),
            Result(
                f"on-demand warm filtered list_partitions (1 of {regions} regions), {size}",
                lazy["warm_filtered_s"] * 1e3,
                "ms",
                note=f"replica {replica['warm_filtered_s'] * 1e3:.2f} ms",
            ),
        ]
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument(
        "--sizes", default="10,100,1000", help="tables per catalog, comma-separated"
    )
    parser.add_argument("--dts", type=int, default=100)
    parser.add_argument("--regions", type=int, default=10)
    add_output_argument(parser)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    started = time.monotonic()
    results = run(args.data_dir, sizes, args.dts, args.regions)
    print(f"  took {time.monotonic() - started:.0f} s")
    return finish("ondemand", results, args)


if __name__ == "__main__":
    raise SystemExit(main())
