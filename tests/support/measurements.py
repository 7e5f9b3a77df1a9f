"""Numbers measured during a test run (start-up times, latencies), printed at its end.

Tests call :func:`record_measurement`; the plugin in :mod:`support.fixtures`
prints everything recorded in a "measured (real HMS / Spark)" section of the
terminal summary.
"""

from __future__ import annotations

# Start-up times and latencies measured in this run; printed in the terminal summary.
MEASUREMENTS: dict[str, str] = {}


def record_measurement(name: str, value: float, unit: str) -> None:
    """Note a number for the end-of-run summary (e.g. ``("get_table", 3.1, "ms")``)."""
    MEASUREMENTS[name] = f"{value:.2f} {unit}"
