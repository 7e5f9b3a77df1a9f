"""Modules of ``tests/support`` for the benchmarks (``bench`` has a ``support`` package
of its own, so they are loaded by path)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TESTS_SUPPORT = Path(__file__).resolve().parents[2] / "tests" / "support"


def load(name: str) -> ModuleType:
    """``tests/support/<name>.py``, loaded once per process."""
    module_name = f"_tests_{name}"
    loaded = sys.modules.get(module_name)
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(module_name, TESTS_SUPPORT / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
