"""Shared pytest setup: the real-server fixtures plugin (``support.fixtures``) and its options."""

from __future__ import annotations

import pytest

pytest_plugins = ["support.fixtures"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("catalogd")
    group.addoption(
        "--hms-cache-dir",
        default=None,
        help="where the embedded Hive Metastore keeps start-up artefacts between runs "
        "(class archive, PostgreSQL DDL); default: pytest's cache dir (a temp dir "
        "for this run only under -p no:cacheprovider)",
    )
