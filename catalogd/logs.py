"""Log output of the daemon: one line per event on stderr, as text or as JSON.

journald (and any supervisor) collects stderr, so catalogd never writes log files.
``configure`` may be called again (on reload) to change level or format; it only
ever replaces the handler it installed itself, leaving others (pytest's capture,
an embedding application's) alone.

Fields passed with ``extra=`` (``log.info("refreshed", extra={"table": t})``) are
kept apart from the message: JSON lines carry them as keys, text lines append
them as ``key=value``.

Names, requesters and messages come from peers, so no logged text may forge a
line or make the log binary: text lines escape every control character in the
message and the fields (:func:`escape`: ``\n`` -> ``\\n``, NUL -> ``\\x00``);
tracebacks keep their own newlines. JSON escapes them by itself.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone
from typing import IO, Any

__all__ = ["configure", "escape", "JsonFormatter", "TextFormatter", "FORMATS"]

FORMATS = ("text", "json")
# Attributes every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


def _escape_code(code: int) -> str:
    named = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r", 0x5C: "\\\\"}
    if code in named:
        return named[code]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# C0 and C1 controls, DEL, the Unicode line and paragraph separators, and the
# backslash itself (so an escaped line reads back unambiguously).
_ESCAPES = {c: _escape_code(c) for c in [*range(0x20), 0x5C, *range(0x7F, 0xA0), 0x2028, 0x2029]}


def escape(text: object) -> str:
    """``str(text)`` with every control character written as a visible escape."""
    return str(text).translate(_ESCAPES)


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class TextFormatter(logging.Formatter):
    """``TIME LEVEL LOGGER: message key=value ...``; tracebacks follow on their own lines."""

    def __init__(self, *, timestamps: bool = True) -> None:
        head = "%(asctime)s " if timestamps else ""
        super().__init__(head + "%(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        # The message only: the traceback appended after it keeps its lines.
        record.message = escape(record.message)
        return super().formatMessage(record)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = " ".join(f"{key}={escape(value)}" for key, value in _extras(record).items())
        if not fields:
            return line
        first, newline, rest = line.partition("\n")  # keep fields on the event's line
        return f"{first} {fields}{newline}{rest}"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, extras.

    An exception adds ``exc`` (the formatted traceback, newlines escaped by JSON).
    Values JSON cannot encode are written as their ``str()``.
    """

    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in _extras(record).items():
            event.setdefault(key, value)
        if record.exc_info:
            event["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            event["exc"] = record.exc_text
        if record.stack_info:
            event["stack"] = self.formatStack(record.stack_info)
        return json.dumps(event, default=str, ensure_ascii=False)


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks the handler ``configure`` owns, so a later call replaces only it."""


def configure(
    level: str = "INFO",
    fmt: str = "text",
    *,
    stream: IO[str] | None = None,
    timestamps: bool = True,
) -> logging.Handler:
    """Send every log record at ``level`` or above to ``stream`` (default stderr).

    Args:
        level: a logging level name (``DEBUG`` ... ``CRITICAL``, any case).
        fmt: ``"text"`` or ``"json"``.
        stream: where lines go; default ``sys.stderr`` as it is at call time.
        timestamps: text lines start with the time; pass False when the
            collector adds its own (journald does).

    Returns:
        The installed handler (replacing the one a previous call installed).

    Raises:
        ValueError: an unknown level or format.
    """
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; expected one of {', '.join(FORMATS)}")
    handler = _Handler(sys.stderr if stream is None else stream)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter(timestamps=timestamps))
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(numeric)
    return handler
