"""A budget of HMS calls per second for the change detector.

:class:`CallBudget` keeps the detector under ``rate`` calls per second by
sleeping before a call when it is ahead. The clock and the sleep are passed in
(the detector gives ``time.monotonic`` and ``time.sleep``; tests a fake clock).
"""

from __future__ import annotations

from collections.abc import Callable


class CallBudget:
    """At most ``rate`` calls per second, by sleeping before a call when ahead.

    ``rate <= 0`` means no limit. Not thread-safe (one detector thread uses it).
    """

    def __init__(
        self, rate: float, clock: Callable[[], float], sleep: Callable[[float], None]
    ) -> None:
        self._interval = 1.0 / rate if rate > 0 else 0.0
        self._next = 0.0
        self._clock, self._sleep = clock, sleep

    def spend(self, calls: int = 1) -> None:
        """Wait until ``calls`` more calls fit in the rate, then count them."""
        now = self._clock()
        if self._next > now:
            self._sleep(self._next - now)
        self._next = max(self._next, now) + calls * self._interval
