"""Progress a person waits on, on a terminal or in a log: :class:`ProgressMeter`.

``catalogd dump`` of a big catalog (and anything else that counts work done of work
known) feeds it ``update(done, total, detail)``. On a terminal it redraws one line
(``\\r``) at most five times a second; otherwise (a pipe, a file, journald) it
writes a plain line every ``interval_s`` seconds. Both show the rate and an ETA,
and nothing at all for work done within the first interval. No dependency: one
line of text needs neither ``rich`` nor ``tqdm``, and this also runs where neither
is installed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO


class ProgressMeter:
    """One progress display on ``out``. Not thread-safe: one caller updates it.

    Args:
        label: what is counted, e.g. ``"loading"``.
        unit: the counted thing, e.g. ``"tables"``.
        out: where to write (usually ``sys.stderr``, so stdout stays the result).
        interval_s: seconds before the first display and between plain lines.
        tty: whether ``out`` is a terminal (default: ``out.isatty()``).
    """

    def __init__(
        self,
        label: str,
        unit: str,
        out: TextIO,
        *,
        interval_s: float = 2.0,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label, self.unit, self._out = label, unit, out
        self._interval = interval_s
        self._tty = out.isatty() if tty is None else tty
        self._clock = clock
        self._started = clock()
        self._next = self._started + interval_s
        self._shown = False

    def update(self, done: int, total: int, detail: str = "") -> None:
        """Show ``done`` of ``total`` if a display is due."""
        now = self._clock()
        if now < self._next:
            return
        self._next = now + (0.2 if self._tty else self._interval)
        line = progress_text(self.label, self.unit, done, total, now - self._started, detail)
        if self._tty:
            self._out.write(f"\r\x1b[K{line}")
        else:
            self._out.write(line + "\n")
        self._out.flush()
        self._shown = True

    def finish(self) -> None:
        """End the display (a terminal's line is kept and ended)."""
        if self._shown and self._tty:
            self._out.write("\n")
            self._out.flush()


def progress_text(
    label: str, unit: str, done: int, total: int, elapsed_s: float, detail: str = ""
) -> str:
    """``loading: 1,200/5,000 tables (24%), 310 tables/s, ETA 12s; 40,000 partitions``."""
    rate = done / max(elapsed_s, 1e-6)
    pct = f" ({100 * done // total}%)" if total else ""
    eta = f", ETA {max(0, total - done) / rate:.0f}s" if rate > 0 and total > done else ""
    tail = f"; {detail}" if detail else ""
    return f"{label}: {done:,}/{total:,} {unit}{pct}, {rate:,.0f} {unit}/s{eta}{tail}"
