"""How the answers of ``catalogd admin ...`` print as short text (without ``--json``).

Pure functions of an answer's ``detail`` (the dict the server sends as JSON):
:func:`format_status`, :func:`format_audit`, :func:`format_pools`. Keys they do not
know are left to ``--json``; missing ones print as ``?``. Numbers print with
thousands separators, catalog versions as users type them, durations short
(:func:`duration`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["duration", "format_audit", "format_pools", "format_status"]

_SHOWN_TYPES = ("DATABASE", "TABLE", "VIEW", "HDFS_PARTITION")


def format_status(detail: Mapping[str, Any]) -> str:
    """A short summary of ``status``'s detail (the dict the server sends as JSON).

    Version, service id, uptime, object counts, loading progress, HMS health,
    change detection, HA (role, epoch, lease expiry, peers) and each subscriber's
    lag. Keys it does not know are left to ``--json``; keys missing from ``detail``
    print as ``?``.
    """
    rows: list[tuple[str, str]] = []
    version = detail.get("version")
    delta_from = (detail.get("delta_log") or {}).get("from")
    rows.append(
        (
            "version",
            _ver(version) + ("" if delta_from is None else f" (delta log from {_ver(delta_from)})"),
        )
    )
    rows.append(("service id", str(detail.get("service_id", "?"))))
    rows.append(("uptime", duration(detail.get("uptime_s"))))

    objects: Mapping[str, int] = detail.get("objects") or {}
    loaded = detail.get("tables_loaded")
    not_loaded = detail.get("tables_not_loaded")
    known = loaded + not_loaded if loaded is not None and not_loaded is not None else None
    rows.append(("databases", _num(objects.get("DATABASE", 0))))
    views = objects.get("VIEW", 0)
    rows.append(
        (
            "tables",
            f"{_num(loaded)} loaded / {_num(known)} known"
            + (f" (incl. {_num(views)} views)" if views else ""),
        )
    )
    rows.append(("partitions", _num(objects.get("HDFS_PARTITION", 0))))
    others = [
        f"{kind} {_num(n)}" for kind, n in sorted(objects.items()) if kind not in _SHOWN_TYPES
    ]
    if others:
        rows.append(("other objects", ", ".join(others)))
    rows.append(("loading", _loading(detail, loaded, not_loaded, known)))

    hms = detail.get("hms")
    if hms:
        health = "healthy" if hms.get("healthy") else "UNHEALTHY"
        if hms.get("error"):
            health += f": {hms['error']}"
        rows.append(("HMS", f"{hms.get('address') or '?'}, {health}"))
    else:
        rows.append(("HMS", "?"))
    rows.append(("change detection", str(detail.get("change_detection", "?"))))
    ha: Mapping[str, Any] | None = detail.get("ha")
    if ha:
        rows.append(("HA", _ha(ha)))
    security: Mapping[str, Any] = detail.get("security") or {}
    if security:
        failures = security.get("auth_failures") or {}
        text = str(security.get("mode", "?"))
        if failures:
            text += ", failed authentications: " + ", ".join(
                f"{domain} {count}" for domain, count in sorted(failures.items())
            )
        if security.get("warning"):
            text += f" -- WARNING: {security['warning']}"
        rows.append(("security", text))

    subscribers: Mapping[str, Mapping[str, Any]] = detail.get("subscribers") or {}
    live = sum(1 for s in subscribers.values() if s.get("live", True))
    if subscribers:
        rows.append(("subscribers", f"{len(subscribers)} ({live} live)"))
    else:
        rows.append(("subscribers", "none"))

    width = max(len(label) for label, _ in rows) + 2
    lines = [f"{label:<{width}}{text}" for label, text in rows]
    name_width = max((len(c) for c in subscribers), default=0)
    for client, report in subscribers.items():
        key = f"  key {report['key']}" if report.get("key") else ""
        lines.append(f"  {client:<{name_width}}  {_subscriber(report, version)}{key}")
    if ha:
        peers = ha.get("peers") or []
        lines.append(f"{'HA peers':<{width}}{len(peers) if peers else 'none seen'}")
        for peer in peers:
            me = ", this node" if peer.get("self") else ""
            lines.append(
                f"  {peer.get('holder', '?')}  {peer.get('role', '?')}{me}, "
                f"{peer.get('endpoint') or '?'} (admin {peer.get('admin') or '?'}), "
                f"seen {duration(peer.get('seen_s_ago'))} ago"
            )
    return "\n".join(lines)


def _ha(ha: Mapping[str, Any]) -> str:
    """``active, epoch 3, lease 3.00s, expires in 2.41s`` or the standby's view of the active."""
    role = str(ha.get("role", "?"))
    active: Mapping[str, Any] = ha.get("active") or {}
    expires = active.get("expires_in_s")
    lease = f"lease expires in {duration(expires)}" if expires is not None else "no lease held"
    if role == "active":
        return f"active, epoch {_ver(ha.get('epoch'))}, {lease} (renewed every " + (
            f"{duration(ha.get('renew_interval_s'))})"
        )
    holder = active.get("holder")
    if not holder:
        return f"{role}, no active node ({lease})"
    return (
        f"{role}; active: {holder} (epoch {_ver(active.get('epoch'))}, "
        f"{active.get('endpoint') or '?'}), {lease}"
    )


def _loading(
    detail: Mapping[str, Any], loaded: int | None, not_loaded: int | None, known: int | None
) -> str:
    loader = detail.get("loader") or {}
    names = detail.get("names_published_s")
    all_loaded = detail.get("all_loaded_s")
    failed = loader.get("failed", 0)
    parts: list[str] = []
    if not_loaded == 0:
        parts.append("done")
    elif loaded is not None and known:
        parts.append(f"{_num(loaded)} of {_num(known)} tables loaded ({100 * loaded // known}%)")
        if loader.get("queued"):
            parts.append(f"{_num(loader['queued'])} queued")
    if failed:
        parts.append(f"{_num(failed)} failed")
    if names is not None:
        parts.append(f"names published after {duration(names)}")
    if all_loaded is not None:
        parts.append(f"all tables loaded after {duration(all_loaded)}")
    return ", ".join(parts) or "?"


def _subscriber(report: Mapping[str, Any], version: int | None) -> str:
    applied = report.get("applied_version")
    if applied is None:
        lag = "version ?"
    elif version is None or applied >= version:
        lag = f"up to date (version {_ver(applied)})"
    else:
        behind = version - applied
        lag = f"{_num(behind)} version{'' if behind == 1 else 's'} behind (at {_ver(applied)})"
    text = f"{lag}, last report {duration(report.get('last_report_age_s'))} ago"
    if not report.get("live", True):
        text += ", not live"
    return text


def _ver(value: Any) -> str:
    """A catalog version, as users type it (no thousands separators)."""
    return "?" if value is None else str(value)


def _num(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def duration(seconds: Any) -> str:
    """``0.42s``, ``1.87s``, ``12.3s``, ``4m 05s``, ``2h 03m``, ``3d 04h``; ``?`` when unknown."""
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return "?"
    s = max(0.0, float(seconds))
    if s < 10:
        return f"{s:.2f}s"
    if s < 60:
        return f"{s:.1f}s"
    whole = round(s)
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d {whole % 86400 // 3600:02d}h"


def format_audit(detail: Mapping[str, Any]) -> list[str]:
    """One line per audit record: when, who, what, outcome, version."""
    lines = []
    for r in detail["records"]:
        args_text = json.dumps(r["args"], sort_keys=True)
        lines.append(
            f"{r['at']} {r['requester'] or '-'} {r['command']} {args_text} -> {r['outcome']}"
            f"{'' if r['version'] is None else ' @' + str(r['version'])}"
        )
    return lines


def format_pools(detail: Mapping[str, Any]) -> list[str]:
    """Each cache pool, then what is cached in it."""
    lines = []
    for p in detail["pools"]:
        limit = "unlimited" if p["limit_bytes"] is None else f"{p['limit_bytes']} bytes"
        cached = [m for m in detail["cached"] if m["pool"] == p["name"]]
        lines.append(f"{p['name']}  owner={p['owner'] or '-'}  limit={limit}  cached={len(cached)}")
        for m in cached:
            lines.append(
                f"    {m['db']}.{m['table']}" + (f" {m['partition']}" if m["partition"] else "")
            )
    return lines
