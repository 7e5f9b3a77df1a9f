"""Shared pytest setup: the real-server fixtures plugin (``support.fixtures``) and its options."""

from __future__ import annotations

import logging

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
