"""The import graph: the library never imports a service, services never import each other,
and no module is part of an import cycle (deferred imports inside functions count too)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
LIBRARY = REPO_ROOT / "libs"
SERVICES = REPO_ROOT / "services"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for root in (LIBRARY, SERVICES):
        for path in root.rglob("*.py"):
            found[module_name(path, root)] = path
    return found


def imports_of(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """Project modules `path` imports (resolved to the longest known module name)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            candidates = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in known:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                targets.add(candidate)
    return targets


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(path, name, known) for name, path in known.items()}


def top(name: str) -> str:
    return name.split(".")[0]


def test_the_library_imports_no_service() -> None:
    offenders = {
        (name, target)
        for name, targets in graph().items()
        if top(name) == "koholint"
        for target in targets
        if top(target) != "koholint"
    }
    assert not offenders, f"library modules import services: {sorted(offenders)}"


def test_services_do_not_import_each_other() -> None:
    offenders = {
        (name, target)
        for name, targets in graph().items()
        if top(name) != "koholint"
        for target in targets
        if top(target) not in ("koholint", top(name))
    }
    assert not offenders, f"services import other services: {sorted(offenders)}"


def test_no_import_cycles() -> None:
    edges = graph()
    # A package's __init__ re-exporting its own modules is not a cycle of behaviour.
    edges = {
        name: {t for t in targets if not name or not t.startswith(name + ".")}
        for name, targets in edges.items()
    }
    cycles = strongly_connected(edges)
    assert not cycles, f"import cycles: {cycles}"


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm; components of more than one module are cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
