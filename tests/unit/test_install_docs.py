"""The install instructions name only extras that exist, and say what the default needs."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "deploy/README.md", "docs/HMS-ENDPOINT.md"]


def _extras() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(project["optional-dependencies"])


def test_every_extra_the_docs_name_exists() -> None:
    extras = _extras()
    named = {
        (doc, extra.strip())
        for doc in DOCS
        if (ROOT / doc).exists()
        for group in re.findall(r"pip install [^\n`]*?\[([a-z,]+)\]", (ROOT / doc).read_text())
        for extra in group.split(",")
    }
    assert named, "no `pip install ...[extra]` found: the pattern is stale"
    assert {(doc, e) for doc, e in named if e not in extras} == set()


def test_the_readme_says_the_embedded_default_needs_spark() -> None:
    text = (ROOT / "README.md").read_text()
    assert "pip install '.[spark]'" in text
    assert ".venv/bin/catalogd" in text
    # The first screen's Spark snippet makes its own session.
    snippet = text.split("```python", 1)[1].split("```", 1)[0]
    assert "spark = SparkSession.builder" in snippet and "read_table(spark" in snippet
