"""Architecture rules, checked over whole packages and their transitive imports.

* The pure parts -- ``catalogd.core``, ``subscriber.protocol``, ``subscriber.sync``,
  ``subscriber.cache``, ``subscriber.partitions`` and ``subscriber.object_set`` -- load
  no zmq, sockets, threads, SQLAlchemy or clock.
  Each is imported in a fresh interpreter; every module of ours that the import
  loaded is read, and none may import an I/O or clock module. Third-party
  modules are judged by what they load beyond ``idl`` (thriftpy2's parser
  itself imports ``socket`` and ``threading`` through ``urllib``; that is its
  business, not ours): beyond that baseline, no I/O module may appear.
* ``subscriber.protocol`` imports nothing else of ``subscriber``.
* ``subscriber`` as a whole loads nothing of ``catalogd`` and installs with pyzmq
  and thriftpy2 only.

Layering, read from the source (every ``import`` statement, wherever it stands,
type-only ones too; :mod:`support.imports`):

* ``catalogd.core`` imports nothing outside the core, ``subscriber.protocol`` and
  ``idl``;
* ``catalogd.config_schema`` (pure) imports no package that owns a thread or
  talks to the outside (server, admin, hms, sources, writes, loading, ...);
* no two modules import each other, directly or through others (no cycles);
* no module is over 400 lines unless its docstring says why ("Why one module
  of over 400 lines: ..."), and none is over 450.
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.imports import import_cycles, import_graph, module_lines

ROOT = Path(__file__).resolve().parents[2]

PURE = [
    "catalogd.core",
    "catalogd.ha.lease",
    "subscriber.protocol",
    "subscriber.sync",
    "subscriber.reports",
    "subscriber.cache",
    "subscriber.partitions",
    "subscriber.object_set",
]
IO_MODULES = {
    "zmq",
    "socket",
    "threading",
    "_thread",
    "time",
    "datetime",
    "sqlalchemy",
    "select",
    "selectors",
    "asyncio",
    "subprocess",
    "concurrent",
}
OURS = ("catalogd", "subscriber", "idl")


def _load(code: str) -> dict[str, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        cwd=ROOT,
        timeout=60,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.splitlines()[-1])


def _modules_loaded_by(package: str) -> dict[str, list[str]]:
    """Import ``idl`` (the baseline), then every module of ``package``; report what loaded."""
    return _load(
        "import importlib, json, pkgutil, sys\n"
        "import idl\n"
        "base = set(sys.modules)\n"
        f"pkg = importlib.import_module({package!r})\n"
        "if hasattr(pkg, '__path__'):\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "new = sorted(set(sys.modules) - base)\n"
        "ours = sorted(m for m in sys.modules if m.split('.')[0] in ('catalogd', 'subscriber'))\n"
        "print(json.dumps({'new': new, 'ours': ours}))\n"
    )


def _imported_roots(module: str) -> set[str]:
    path = ROOT / module.replace(".", "/")
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("package", PURE)
def test_pure_packages_load_no_io_or_clock(package: str) -> None:
    loaded = _modules_loaded_by(package)
    third_party_io = {m for m in loaded["new"] if m.split(".")[0] in IO_MODULES}
    assert third_party_io == set(), f"{package} loads {sorted(third_party_io)}"
    for module in loaded["ours"]:
        bad = _imported_roots(module) & IO_MODULES
        assert not bad, f"{module} (loaded by {package}) imports {sorted(bad)}"


def test_protocol_imports_nothing_else_of_subscriber() -> None:
    loaded = _modules_loaded_by("subscriber.protocol")
    others = [
        m for m in loaded["ours"] if not m.startswith("subscriber.protocol") and m != "subscriber"
    ]
    assert others == []


def test_subscriber_loads_nothing_of_catalogd() -> None:
    modules = [m.name for m in pkgutil.walk_packages([str(ROOT / "subscriber")], "subscriber.")]
    loaded = _load(
        "import importlib, json, sys\n"
        "for name in ('sqlalchemy', 'pyspark', 'prometheus_client', 'sdnotify', 'catalogd'):\n"
        "    sys.modules[name] = None\n"
        "import subscriber\n"
        + "".join(
            f"importlib.import_module({m!r})\n" for m in modules if not m.endswith("__main__")
        )
        + "ours = [m for m, mod in sys.modules.items() if m.startswith('catalogd') and mod]\n"
        + "print(json.dumps({'ours': sorted(ours)}))\n"
    )
    assert loaded["ours"] == []


def test_core_imports_only_core_protocol_and_idl() -> None:
    graph = import_graph(ROOT)
    allowed = ("catalogd.core", "subscriber.protocol", "idl")
    for module, imported in graph.items():
        if module == "catalogd.core" or module.startswith("catalogd.core."):
            outside = sorted(m for m in imported if not m.startswith(allowed))
            assert outside == [], f"{module} imports {outside}"


# Packages of catalogd that own a thread or talk to the outside world.
ADAPTERS = (
    "catalogd.server",
    "catalogd.admin",
    "catalogd.hms",
    "catalogd.sources",
    "catalogd.writes",
    "catalogd.loading",
    "catalogd.freshness",
    "catalogd.ha",
    "catalogd.state",
    "catalogd.security.runtime",
    "catalogd.security.authenticator",
    "catalogd.stats",
    "catalogd.files",
    "catalogd.daemon",
    "catalogd.supervision",
)


def test_config_schema_imports_no_thread_or_adapter() -> None:
    imported = import_graph(ROOT)["catalogd.config_schema"]
    bad = sorted(m for m in imported if m.startswith(ADAPTERS))
    assert bad == [], f"catalogd.config_schema imports {bad}"


def test_no_import_cycles() -> None:
    cycles = import_cycles(import_graph(ROOT))
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_modules_stay_small_or_say_why() -> None:
    too_long = []
    for module, (lines, says_why) in module_lines(ROOT).items():
        if lines > 450 or (lines > 400 and not says_why):
            too_long.append(f"{module}: {lines} lines")
    assert too_long == [], "modules over 400 lines without a reason, or over 450: " + ", ".join(
        too_long
    )


def test_cycle_finder_on_a_made_up_graph() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}, "f": {"g"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    graph["d"] = {"b"}
    assert import_cycles(graph) == [["a", "b", "c", "d"]]


def test_graph_reads_lazy_type_only_and_relative_imports(tmp_path: Path) -> None:
    package = tmp_path / "catalogd"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "inner" / "__init__.py").write_text("")
    (package / "inner" / "one.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from catalogd.two import X\n"
        "def f():\n    from . import three\n"
    )
    (package / "inner" / "three.py").write_text("import catalogd.inner\n")
    (package / "two.py").write_text("from catalogd.inner.one import f\n")
    graph = import_graph(tmp_path)
    assert graph["catalogd.inner.one"] == {"catalogd.two", "catalogd.inner.three"}
    assert graph["catalogd.inner.three"] == {"catalogd.inner"}
    assert import_cycles(graph) == [["catalogd.inner.one", "catalogd.two"]]
