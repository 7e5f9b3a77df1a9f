"""ProgressMeter: nothing for quick work, then rate and ETA; a redrawn line on a terminal."""

from __future__ import annotations

import io

from catalogd.loading.meter import ProgressMeter, progress_text


def test_quiet_first_then_plain_lines_with_rate_and_eta() -> None:
    now = [0.0]
    out = io.StringIO()
    meter = ProgressMeter("loading", "tables", out, interval_s=2.0, tty=False, clock=lambda: now[0])
    meter.update(10, 100)
    assert out.getvalue() == ""  # under the first interval: nothing
    now[0] = 2.0
    meter.update(20, 100, "400 partitions")
    now[0] = 3.0
    meter.update(30, 100)  # not due yet
    meter.finish()
    assert out.getvalue() == "loading: 20/100 tables (20%), 10 tables/s, ETA 8s; 400 partitions\n"


def test_a_terminal_gets_one_redrawn_line() -> None:
    now = [5.0]
    out = io.StringIO()
    meter = ProgressMeter("loading", "tables", out, interval_s=0.0, tty=True, clock=lambda: now[0])
    meter.update(1, 4)
    now[0] = 5.5
    meter.update(2, 4)
    meter.finish()
    text = out.getvalue()
    assert text.count("\r\x1b[K") == 2 and text.endswith("\n") and text.count("\n") == 1


def test_text_when_done_or_unknown() -> None:
    assert progress_text("x", "tables", 5, 5, 1.0) == "x: 5/5 tables (100%), 5 tables/s"
    assert progress_text("x", "tables", 0, 0, 1.0) == "x: 0/0 tables, 0 tables/s"
