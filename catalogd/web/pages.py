"""View functions of the pages about the daemon (not the catalog's objects): the
overview, subscribers, operations and the probes. Pure: the daemon's status (the
dict ``admin status`` answers), HA report, census and audit records in, template
contexts out; the clock is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from catalogd.web.census import Counted

__all__ = ["health", "operations_view", "overview_view", "readiness", "subscribers_view"]


def _progress(loading: dict[str, Any] | None) -> dict[str, Any] | None:
    """The load's progress bar: percent done by partitions when known, else by tables."""
    if not loading or "tables_known" not in loading:
        return None
    known, loaded = loading.get("partitions_known"), loading.get("partitions_loaded", 0)
    if known:
        percent = 100.0 * min(loaded, known) / known
    elif loading["tables_known"]:
        percent = 100.0 * loading["tables_loaded"] / loading["tables_known"]
    else:
        percent = 100.0
    if loading.get("done"):
        percent = 100.0
    return {**loading, "percent": round(percent, 1)}


def overview_view(
    status: dict[str, Any],
    ha: dict[str, Any] | None,
    census: Counted,
    memory: dict[str, int | None],
) -> dict[str, Any]:
    """``/``: role, versions, uptime, HMS, change detection, load progress, counts, memory."""
    objects = status.get("objects", {})
    return {
        "role": ha["role"] if ha else "active (no HA)",
        "epoch": ha.get("epoch") if ha else None,
        "lease": (ha.get("active") or {}) if ha else None,
        "version": status["version"],
        "delta_log": status.get("delta_log", {}),
        "service_id": status["service_id"],
        "uptime_s": status.get("uptime_s", 0.0),
        "hms": status.get("hms", {}),
        "detection": status.get("change_detection", "off"),
        "last_event_id": status.get("last_event_id"),
        "hms_checked_s_ago": status.get("hms_checked_s_ago"),
        "progress": _progress(status.get("loading")),
        "loader": status.get("loader", {}),
        "objects": sorted(objects.items()),
        "tables_loaded": status.get("tables_loaded", 0),
        "tables_not_loaded": status.get("tables_not_loaded", 0),
        "subscribers": len(status.get("subscribers", {})),
        "memory": memory,
        "census": census,
        "security": status.get("security", {}),
    }


def subscribers_view(status: dict[str, Any]) -> dict[str, Any]:
    """``/subscribers``: id, key name, applied version and lag, last report."""
    version = status["version"]
    rows = [
        {
            "id": client,
            "key": info.get("key") or "",
            "applied": info["applied_version"],
            "lag": max(0, version - info["applied_version"]),
            "last_report_age_s": info["last_report_age_s"],
            "live": info.get("live", False),
            "databases": info.get("databases") or "–",
        }
        for client, info in sorted(status.get("subscribers", {}).items())
    ]
    return {"version": version, "subscribers": rows}


def operations_view(records: Iterable[Any], status: dict[str, Any]) -> dict[str, Any]:
    """``/operations``: the admin audit log, newest first, and the running load."""
    rows = [
        {
            "at": record.at.isoformat(timespec="seconds"),
            "who": record.requester or "",
            "command": record.command,
            "args": ", ".join(f"{k}={v}" for k, v in sorted(record.args.items())),
            "outcome": record.outcome,
            "version": record.version,
        }
        for record in records
    ]
    return {
        "records": rows,
        "progress": _progress(status.get("loading")),
        "loader": status.get("loader", {}),
    }


def health(ha: dict[str, Any] | None, hms_healthy: bool) -> dict[str, Any]:
    """``/healthz``: the process answers (a standby is healthy); HMS trouble is reported,
    not failed on (catalogd keeps serving its last catalog)."""
    return {"status": "ok", "role": ha["role"] if ha else "active", "hms_healthy": hms_healthy}


def readiness(started: bool, ha: dict[str, Any] | None, version: int) -> tuple[bool, dict]:
    """``/readyz``: ready once the initial catalog is published and this node is active."""
    role = ha["role"] if ha else "active"
    ready = started and role == "active"
    return ready, {"ready": ready, "role": role, "version": version if started else None}
