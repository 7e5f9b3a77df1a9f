"""What every benchmark shares: result rows, latency summaries, memory readings.

A benchmark returns :class:`Result` rows; :func:`print_results` prints them as
one table (``bench/run_all.py`` prints every benchmark's rows together). A row with a
target says whether it was met and by how much it was missed, but a missed
target never makes a benchmark fail: they all exit 0.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Result:
    """One measured figure.

    ``goal`` is ``"min"`` when bigger is better (a speed-up), ``"max"`` when
    smaller is better (a latency, a size); ``target`` None means informational.
    """

    measure: str
    value: float
    unit: str
    target: float | None = None
    goal: str = "max"
    note: str = ""

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        return self.value >= self.target if self.goal == "min" else self.value <= self.target

    def verdict(self) -> str:
        """``"yes"``, ``"-"`` (no target) or ``"NO (2.3x off)"``: how far from the target."""
        met = self.met
        if met is None:
            return "-"
        if met:
            return "yes"
        assert self.target is not None
        if self.goal == "min":
            factor = self.target / self.value if self.value > 0 else math.inf
        else:
            factor = self.value / self.target if self.target > 0 else math.inf
        return f"NO ({factor:.1f}x off)"

    def target_text(self) -> str:
        if self.target is None:
            return ""
        return f"{'>=' if self.goal == 'min' else '<='} {_number(self.target)} {self.unit}"


@dataclass(frozen=True)
class Summary:
    """Latency samples in seconds, summarized."""

    n: int
    mean: float
    p50: float
    p99: float
    max: float

    def ms(self) -> str:
        return (
            f"n={self.n} mean={self.mean * 1e3:.3f} p50={self.p50 * 1e3:.3f} "
            f"p99={self.p99 * 1e3:.3f} max={self.max * 1e3:.3f} ms"
        )

    def us(self) -> str:
        return (
            f"n={self.n} mean={self.mean * 1e6:.2f} p50={self.p50 * 1e6:.2f} "
            f"p99={self.p99 * 1e6:.2f} max={self.max * 1e6:.2f} us"
        )


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by the nearest-rank method."""
    if not values:
        raise ValueError("no samples")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summarize(samples: Sequence[float]) -> Summary:
    return Summary(
        len(samples),
        statistics.fmean(samples),
        percentile(samples, 50),
        percentile(samples, 99),
        max(samples),
    )


def rss_bytes() -> int:
    """This process's resident set size now (Linux ``/proc/self/status``)."""
    text = Path("/proc/self/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.MULTILINE)
    if match is None:
        raise RuntimeError("no VmRSS in /proc/self/status")
    return int(match.group(1)) * 1024


def peak_rss_bytes(pid: int | str = "self") -> int:
    """A process's peak resident set size so far (``VmHWM``; 0 if it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"^VmHWM:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else 0


def thread_cpu_ns() -> dict[int, tuple[str, int]]:
    """Every thread of this process: native id -> (name, nanoseconds on a CPU so far),
    from ``/proc/self/task/*/schedstat`` (exact, unlike the 10 ms ticks of ``stat``)."""
    threads = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            runtime = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile, or no schedstat in this kernel
        threads[int(task.name)] = (name, runtime)
    return threads


def print_results(title: str, results: Iterable[Result]) -> None:
    """Print rows as an aligned table: measure, value, target, met?, note."""
    rows = [("measure", "value", "target", "met?", "note")]
    rows += [
        (r.measure, f"{_number(r.value)} {r.unit}", r.target_text(), r.verdict(), r.note)
        for r in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    print(f"\n== {title} ==")
    for i, row in enumerate(rows):
        cells = [cell.ljust(widths[j]) for j, cell in enumerate(row[:4])]
        print("  ".join(cells) + ("  " + row[4] if row[4] else ""))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    sys.stdout.flush()


def add_output_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--results-json",
        type=Path,
        default=None,
        help="also write the result rows to this file (used by run_all.py)",
    )


def finish(title: str, results: Sequence[Result], args: argparse.Namespace) -> int:
    """Print the rows, write them where ``--results-json`` says; the exit code (always 0)."""
    print_results(title, results)
    if args.results_json is not None:
        args.results_json.write_text(json.dumps([asdict(r) for r in results]))
    return 0


def load_results(path: Path) -> list[Result]:
    return [Result(**row) for row in json.loads(path.read_text())]


def _number(value: float) -> str:
    if value == 0 or math.isinf(value) or math.isnan(value):
        return str(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def cpu_note() -> str:
    """A one-line description of the machine, printed with every benchmark."""
    load = os.getloadavg()
    return f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
