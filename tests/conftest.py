"""Shared pytest setup: the real-server fixtures plugin and its options."""

from __future__ import annotations

import pytest

pytest_plugins = ["hms_support"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("catalogd")
    group.addoption(
        "--hms-cache-dir",
        default=None,
        help="where the embedded Hive Metastore keeps start-up artefacts between runs "
        "(class archive, PostgreSQL DDL); default: pytest's cache dir",
    )
