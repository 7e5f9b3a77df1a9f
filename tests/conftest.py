"""Shared pytest setup: the real-server fixtures plugin (``support.fixtures``) and its options."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

pytest_plugins = ["support.fixtures"]

# py4j logs "Closing down clientserver connection" from a finalizer at interpreter
# exit, after pytest closed its capture streams: a traceback after the summary line.
logging.getLogger("py4j").setLevel(logging.WARNING)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("catalogd")
    group.addoption(
        "--hms-cache-dir",
        default=None,
        help="where the embedded Hive Metastore keeps start-up artefacts between runs "
        "(class archive, PostgreSQL DDL); default: pytest's cache dir (a temp dir "
        "for this run only under -p no:cacheprovider)",
    )


class _TransportFailures(logging.Handler):
    """Records of a subscriber transport thread that caught an exception it did not
    expect: it survives by reconnecting, which hides a bug behind a resync."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.failures: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.getMessage().startswith("subscriber transport failed"):
            self.failures.append(self.format(record))


@pytest.fixture(autouse=True)
def _no_transport_failure() -> Iterator[None]:
    """Every test fails when a subscriber's transport thread failed during it (a
    programming error on the per-change path once went unseen this way)."""
    handler = _TransportFailures()
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("subscriber.transport")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    if handler.failures:
        pytest.fail("a subscriber transport thread failed:\n" + handler.failures[0], False)
