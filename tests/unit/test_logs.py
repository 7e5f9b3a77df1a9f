"""Log lines: one per event, as text or JSON, with ``extra=`` fields kept apart."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from catalogd import logs


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    out = io.StringIO()
    root = logging.getLogger()
    level = root.level
    yield out
    for handler in [h for h in root.handlers if isinstance(h, logs._Handler)]:
        root.removeHandler(handler)
    root.setLevel(level)


def test_json_lines_carry_fields(stream: io.StringIO) -> None:
    logs.configure("info", "json", stream=stream)
    log = logging.getLogger("catalogd.test")
    log.debug("not shown")
    log.info("refreshed %s", "db.t", extra={"requester": "alice", "version": 42})
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        log.exception("admin command failed")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["level"] == "INFO"
    assert first["logger"] == "catalogd.test"
    assert first["message"] == "refreshed db.t"
    assert (first["requester"], first["version"]) == ("alice", 42)
    assert first["time"].endswith("+00:00")
    assert second["level"] == "ERROR"
    assert "ValueError: bad" in second["exc"]


def test_text_lines_append_fields(stream: io.StringIO) -> None:
    logs.configure("DEBUG", "text", stream=stream, timestamps=False)
    logging.getLogger("catalogd").info("hms unreachable", extra={"uri": "thrift://h:9083"})
    assert stream.getvalue() == "INFO catalogd: hms unreachable uri=thrift://h:9083\n"


def test_configure_again_replaces_only_its_own_handler(stream: io.StringIO) -> None:
    other = logging.StreamHandler(io.StringIO())
    root = logging.getLogger()
    root.addHandler(other)
    try:
        first = logs.configure("INFO", "text", stream=stream)
        second = logs.configure("WARNING", "json", stream=stream)
        assert first not in root.handlers
        assert second in root.handlers and other in root.handlers
        assert root.level == logging.WARNING
    finally:
        root.removeHandler(other)


def test_bad_level_or_format() -> None:
    with pytest.raises(ValueError, match="unknown log level"):
        logs.configure("LOUD", "text")
    with pytest.raises(ValueError, match="unknown log format"):
        logs.configure("INFO", "xml")
