"""Run every benchmark and print one summary table (measure, value, target, met?).

::

    .venv/bin/python bench/run_all.py            # full sizes (tens of minutes on a first run)
    .venv/bin/python bench/run_all.py --quick    # small sizes, a few minutes
    .venv/bin/python bench/run_all.py --only propagation,wire
    .venv/bin/python bench/run_all.py --work-dir DIR   # where built HMS and payloads are kept

Each benchmark runs in its own process (so one's memory and threads cannot skew
the next) and hands its rows back through a JSON file. The codec benchmark
(``codec_bench.py``) prints its own tables and adds no rows. A benchmark that
fails is reported in the summary; the run goes on and exits 0. The benchmark HMS
and the sync benchmark's payloads, slow to build, are kept under ``--work-dir``
(default: the system's temporary directory) and reused by later runs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from support.measure import Result, cpu_note, load_results, print_results

HERE = Path(__file__).resolve().parent
QUICK_HMS = [
    "--tables", "10", "--table-dts", "5", "--table-regions", "4",
    "--big-dts", "20", "--big-regions", "50",
]  # fmt: skip
# Benchmarks that keep a slow-to-build cache in --data-dir: its directory name under
# --work-dir, at full and at quick sizes (the shapes differ, so the caches do too).
DATA_DIRS = {
    "load": ("catalogd-bench-hms", "catalogd-bench-hms-quick"),
    "cache": ("catalogd-bench-hms", "catalogd-bench-hms-quick"),
    "freshness": ("catalogd-bench-hms", "catalogd-bench-hms-quick"),
    "sync": ("catalogd-bench-sync", "catalogd-bench-sync"),
    "hms_endpoint": ("catalogd-bench-hms", "catalogd-bench-hms-quick"),
    "sql_load": ("catalogd-bench-sql", "catalogd-bench-sql-quick"),
    "ondemand": ("catalogd-bench-sync", "catalogd-bench-sync"),
    "capture": ("catalogd-bench-sync", "catalogd-bench-sync"),
    "fetch_storm": ("catalogd-bench-sync", "catalogd-bench-sync"),
    "join_storm": ("catalogd-bench-sync", "catalogd-bench-sync"),
}

# name -> (script, full-size arguments, quick arguments)
BENCHMARKS: dict[str, tuple[str, list[str], list[str]]] = {
    "load": ("load_bench.py", [], [*QUICK_HMS, "--loads", "1", "--calls", "200"]),
    "cache": ("cache_vs_hms.py", [], [
        *QUICK_HMS, "--hms-calls", "100", "--cache-calls", "20000", "--warm-rounds", "5"]),
    "propagation": ("propagation.py", [], [
        "--subscribers", "1,5,10", "--changes", "50", "--rate", "20"]),
    "sync": ("sync_bench.py", [], ["--tables", "100", "--dts", "10", "--regions", "10"]),
    "wire": ("wire_bench.py", [], ["--dts", "100", "--regions", "100"]),
    "codec": ("codec_bench.py", [], ["--n", "20000", "--repeat", "1"]),
    "change": ("change_bench.py", [], ["--sizes", "10,10000,100000"]),
    "freshness": ("freshness_bench.py", [], [*QUICK_HMS, "--poll-tables", "100", "--rounds", "3"]),
    "state": ("state_bench.py", [], []),
    "hms_endpoint": ("hms_endpoint_bench.py", [], [
        *QUICK_HMS, "--repeats", "2", "--seconds", "3"]),
    "faults": ("faults.py", [], ["--quick"]),
    "hms_versions": ("hms_versions_bench.py", [], [
        "--tables", "4", "--partitions", "200", "--loads", "1", "--calls", "100",
        "--changes", "2", "--spark-repeats", "2"]),
    "sql_load": ("sql_load_bench.py", [], [
        "--tables", "20", "--per-table", "50", "--big", "5000",
        "--large-tables", "20", "--large-per-table", "5000", "--quick-names"]),
    "stats": ("stats_bench.py", [], [
        "--partitions", "100", "--files", "10", "--rows", "1000000", "--repeat", "2"]),
    "listing": ("listing_bench.py", [], ["--dirs", "10,100,1000", "--repeat", "2"]),
    "failover": ("failover_bench.py", [], ["--quick"]),
    "ondemand": ("ondemand_bench.py", [], ["--sizes", "10"]),
    "capture": ("capture_bench.py", [], ["--tables", "10"]),
    "fetch_storm": ("fetch_storm.py", [], ["--tables", "10", "--clients", "10", "--seconds", "3"]),
    "web": ("web_bench.py", [], ["--partitions", "10000", "--tables", "100", "--seconds", "3"]),
    "join": ("join_bench.py", [], ["--rounds", "50"]),
    "join_storm": ("join_bench.py", ["--storm", "--tables", "1000"], ["--storm", "--tables", "10"]),
    "curve": ("curve_bench.py", [], [
        "--subscribers", "1,10", "--changes", "50", "--rate", "20",
        "--tables", "100", "--partitions", "100"]),
}  # fmt: skip


def run_one(
    name: str, quick: bool, results_dir: Path, work_dir: Path
) -> tuple[list[Result], float, str | None]:
    """Run one benchmark script; returns (rows, seconds, error or None)."""
    script, full, small = BENCHMARKS[name]
    out = results_dir / f"{name}.json"
    command = [sys.executable, str(HERE / script), *(small if quick else full)]
    if name in DATA_DIRS:
        command += ["--data-dir", str(work_dir / DATA_DIRS[name][quick])]
    if name not in ("codec", "state"):
        command += ["--results-json", str(out)]
    print(f"\n#### {name}: {' '.join(command[1:])}", flush=True)
    started = time.monotonic()
    code = subprocess.call(command)
    seconds = time.monotonic() - started
    if code != 0:
        return [], seconds, f"exited with code {code}"
    return (load_results(out) if out.exists() else []), seconds, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument(
        "--only",
        default=",".join(BENCHMARKS),
        help=f"comma-separated subset of {', '.join(BENCHMARKS)}",
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=Path(tempfile.gettempdir()),
        help="where the benchmark HMS and the sync payloads are built and kept between runs "
        "(default: %(default)s)",
    )
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    print(f"catalogd benchmarks ({'quick' if args.quick else 'full'}); {cpu_note()}")
    rows: list[Result] = []
    timings = []
    with tempfile.TemporaryDirectory(prefix="catalogd-bench-") as tmp:
        for name in names:
            results, seconds, error = run_one(name, args.quick, Path(tmp), args.work_dir)
            timings.append(f"{name} {seconds:.0f} s" + (f" ({error})" if error else ""))
            if error:
                rows.append(Result(f"{name}: FAILED", 0.0, "", note=error))
            rows += results
    print_results(f"summary ({'quick' if args.quick else 'full'} sizes)", rows)
    missed = [r for r in rows if r.met is False]
    print(
        f"\n{len(rows)} measures, {sum(r.met is True for r in rows)} targets met, "
        f"{len(missed)} missed; times: {', '.join(timings)}; {cpu_note()}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
