"""The import graph of the project's own packages, read from the source with ``ast``.

:func:`import_graph` maps each module of ``catalogd``, ``subscriber`` and ``idl``
to the modules of those packages it imports. Every ``import`` statement counts,
at module level, inside a function or under ``if TYPE_CHECKING:`` (a lazy or a
type-only import still ties two modules together). ``from pkg import name``
counts as importing ``pkg.name`` when that is a module, else ``pkg``. The
parents a submodule import initialises implicitly are not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGES = ("catalogd", "subscriber", "idl")
REASON = "over 400 lines"  # "Why one module of over 400 lines: ..."


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def import_graph(root: Path) -> dict[str, set[str]]:
    """``{module: modules of ours it imports}`` for every module under ``root``."""
    modules = _modules(root)

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [known(alias.name) for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else known(base)
                    for alias in node.names
                ]
            edges.update(t for t in targets if t and t != module)
        graph[module] = edges
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each set of modules that import each other (strongly connected, size > 1), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        # Iterative Tarjan: (node, iterator over its edges).
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return sorted(cycles)


def module_lines(root: Path) -> dict[str, tuple[int, bool]]:
    """``{module: (lines, whether its docstring says why it is long)}``."""
    result = {}
    for module, path in _modules(root).items():
        text = path.read_text(encoding="utf-8")
        doc = ast.get_docstring(ast.parse(text)) or ""
        result[module] = (len(text.splitlines()), REASON in doc.lower())
    return result
