"""Architecture rules: the core stays pure; subscriber needs only pyzmq and thriftpy2."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PURE_MODULES = [
    "catalogd/core/catalog.py",
    "subscriber/cache.py",
    "subscriber/protocol/delta.py",
    "subscriber/protocol/keys.py",
    "subscriber/protocol/errors.py",
    "subscriber/protocol/codec.py",
    "subscriber/sync.py",
]
IO_MODULES = {"zmq", "socket", "threading", "time", "sqlalchemy", "select", "asyncio", "subprocess"}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("module", PURE_MODULES)
def test_core_modules_do_no_io(module: str) -> None:
    path = ROOT / module
    if not path.exists():
        pytest.skip(f"{module} not written yet")
    assert imported_roots(path) & IO_MODULES == set()


def test_subscriber_never_imports_catalogd() -> None:
    for path in (ROOT / "subscriber").glob("*.py"):
        assert "catalogd" not in imported_roots(path), path.name


def test_subscriber_imports_without_daemon_or_spark_packages() -> None:
    modules = [m.name for m in pkgutil.iter_modules([str(ROOT / "subscriber")])]
    blocker = (
        "import sys\n"
        "for name in ('sqlalchemy', 'pyspark', 'prometheus_client', 'sdnotify', 'catalogd'):\n"
        "    sys.modules[name] = None\n"
        + "".join(f"import subscriber.{m}\n" for m in modules if m != "__main__")
    )
    subprocess.run([sys.executable, "-c", blocker], check=True, cwd=ROOT, timeout=60)
