"""What a running catalogd knows about itself, for ``admin status`` and the main loop.

Three parts, by who writes them:

* :class:`Facts`: fixed at start-up (frozen): when the process started, which HMS
  it reads, how long publishing the names took.
* :class:`Reports`: callbacks into the parts that own their own state (security,
  HA, the embedded HMS, load progress); set once at start-up (frozen), called
  from any thread, each must not block.
* :class:`Health`: the few facts that change while running, each field written by
  one thread only (noted per field) and read anywhere.

:class:`RuntimeInfo` holds one of each. It imports nothing of catalogd, so the
change detector, the status report, the admin handlers and the main loop can all
share it without importing each other.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Report = Callable[[], dict[str, Any]]


@dataclass(frozen=True)
class Facts:
    """Fixed at start-up."""

    started_at: float = field(default_factory=time.time)
    hms_address: str = ""
    names_published_s: float | None = None


@dataclass(frozen=True)
class Reports:
    """Callbacks ``admin status`` and the main loop call; None: that part is off."""

    security: Report | None = None
    """What status shows about keys and exposure (catalogd.security.runtime)."""
    ha: Report | None = None
    """HA role, epoch, lease and peers (catalogd.ha.node.describe); None: HA off."""
    embedded_hms: Report | None = None
    """The embedded HMS's supervision report (state, restarts); None: not embedded."""
    loading: Report | None = None
    """Background load progress (catalogd.loading.progress.LoadProgress.report)."""


@dataclass
class Health:
    """What changes while running; each field has one writer."""

    hms_healthy: bool = True
    """Written by the change detector's thread."""
    hms_error: str | None = None
    """Written by the change detector's thread."""
    detector: str = "off"
    """The detection mode of the last cycle; written by the change detector's thread."""
    all_loaded_s: float | None = None
    """Seconds from start to the end of the first background load; written by the main loop."""

    @classmethod
    def at_start(cls, detection_mode: str) -> Health:
        """Before the detector's first cycle: ``detector`` is "starting" (it becomes
        "events" or "poll"), or "off" when detection is off."""
        return cls(detector="off" if detection_mode == "off" else "starting")


@dataclass(frozen=True)
class RuntimeInfo:
    """Facts, reports and health of this process (see the module docstring)."""

    facts: Facts = field(default_factory=Facts)
    reports: Reports = field(default_factory=Reports)
    health: Health = field(default_factory=Health)
