"""The ``sync`` barrier: wait until live subscribers report applying a catalog version.

Subscribers report the version they applied once a second, and at once when the
server's heartbeat asks (``ask``: the barrier asks as it starts waiting); the server
keeps the newest report per client id (``server.stats.subscribers``). A
subscriber that stops reporting for ``dead_after_s`` is dropped from the
barrier, so one dead Spark driver cannot hang an admin command; the caller is
told every subscriber that did not confirm.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class SubscriberBarrier:
    """Waits until live subscribers report a version (read from the server's stats).

    Args:
        reports: client id -> (applied version, time.time() of the last report).
        dead_after_s: a subscriber silent for longer is not live.
        ask: asks every subscriber to report now (``CatalogServer.request_reports``).
        clock, sleep: injectable for tests.
    """

    def __init__(
        self,
        reports: Callable[[], dict[str, tuple[int, float]]],
        *,
        dead_after_s: float,
        ask: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._reports = reports
        self._dead_after = dead_after_s
        self._ask = ask
        self._recent = max(60.0, 10 * dead_after_s)
        self._clock = clock
        self._sleep = sleep

    def live(self) -> dict[str, tuple[int, float]]:
        now = self._clock()
        return {c: r for c, r in self._reports().items() if now - r[1] <= self._dead_after}

    def wait(self, version: int, timeout_s: float) -> tuple[list[str], list[str]]:
        """Block until every live subscriber has applied ``version``.

        Returns ``(confirmed, unconfirmed)`` client ids. Unconfirmed are those
        that had not applied ``version`` by the timeout, went silent during the
        wait, or had gone silent within the last minute (a crashed driver);
        subscribers that said goodbye are forgotten at once.
        """
        self._ask()
        deadline = self._clock() + timeout_s
        now = self._clock()
        recent = {c for c, (_, seen) in self._reports().items() if now - seen <= self._recent}
        waiting = set(self.live())
        confirmed: list[str] = []
        # Went silent shortly before the command: not waited for, but named.
        dropped: list[str] = sorted(recent - waiting)
        while True:
            now = self._clock()
            reports = self._reports()
            for client in sorted(waiting):
                applied, seen = reports.get(client, (0, 0.0))
                if applied >= version:
                    confirmed.append(client)
                    waiting.discard(client)
                elif now - seen > self._dead_after:
                    dropped.append(client)
                    waiting.discard(client)
            if not waiting or now >= deadline:
                break
            self._sleep(0.002)
        return sorted(confirmed), sorted(dropped + list(waiting))
