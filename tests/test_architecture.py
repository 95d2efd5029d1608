"""The import graph: the library never imports a service, services never import each other,
no module is part of an import cycle, the library's folders import each other in one
direction only (docs/architecture.md draws it), and no module leans on pydantic's private
internals. Deferred imports inside functions count too."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

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


def folder(name: str) -> str | None:
    """The library folder a module belongs to: its top-level subpackage or module under
    ``koholint`` (``koholint.env.wrappers.planner`` is in ``env``, ``koholint.store`` in
    ``store``; the package's own ``__init__`` is ``koholint``); None outside the library."""
    parts = name.split(".")
    if parts[0] != "koholint":
        return None
    return parts[1] if len(parts) > 1 else "koholint"


def folder_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """Which library folder imports which, from the module graph (imports within a folder
    left out)."""
    folders: dict[str, set[str]] = {}
    for name, targets in edges.items():
        source = folder(name)
        if source is None:
            continue
        imported = {folder(target) for target in targets} - {None, source}
        folders.setdefault(source, set()).update(f for f in imported if f is not None)
    return folders


def folder_loops(edges: dict[str, set[str]]) -> list[list[str]]:
    """Groups of library folders that import each other, directly or around a loop."""
    return strongly_connected(folder_graph(edges))


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


def test_library_folders_import_each_other_in_one_direction() -> None:
    edges = graph()
    loops = folder_loops(edges)
    witnesses = sorted(
        f"{name} -> {target}"
        for name, targets in edges.items()
        for target in targets
        for loop in loops
        if folder(name) in loop and folder(target) in loop and folder(name) != folder(target)
    )
    assert not loops, f"library folders in a loop: {loops}; the imports that close it: {witnesses}"


ARCHITECTURE_DOC = REPO_ROOT / "docs" / "architecture.md"
TABLE_HEADER = "| folder | may import |"


def documented_imports(text: str) -> dict[str, set[str] | None]:
    """The folder table of docs/architecture.md: folder -> the folders it may import (None:
    any). A cell names folders in backticks; what follows a dash in it (``— never `env```)
    and multi-word names (```koholint explore```) are prose."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == TABLE_HEADER)
    table: dict[str, set[str] | None] = {}
    for line in lines[start + 2 :]:
        if not line.strip().startswith("|"):
            break
        left, right = (cell.strip() for cell in line.strip().strip("|").split("|"))
        allowed = None if "any folder" in right else set(
            re.findall(r"`([a-z][a-z_]*)`", right.split("—")[0])
        )  # fmt: skip
        for name in re.findall(r"`([a-z][a-z_]*)`", left):
            table[name] = allowed
    return table


def allowed_imports(table: dict[str, set[str] | None], folder: str) -> set[str] | None:
    """What `folder` may import: the folders beside it and, in turn, what those may."""
    if table.get(folder) is None:
        return None
    found: set[str] = set()
    pending = list(table[folder] or ())
    while pending:
        name = pending.pop()
        if name not in found:
            found.add(name)
            pending.extend(table.get(name) or ())
    return found


def undocumented_imports(
    table: dict[str, set[str] | None], folders: dict[str, set[str]]
) -> list[str]:
    """Folder imports the table does not allow, folders it lacks and rows for no folder."""
    problems = [f"{name}: not in the table" for name in sorted(set(folders) - set(table))]
    problems += [f"{name}: in the table, not in the code" for name in sorted(set(table) - set(folders))]  # fmt: skip
    for source, targets in sorted(folders.items()):
        allowed = allowed_imports(table, source) if source in table else set()
        if allowed is not None:
            problems += [f"{source} -> {target}" for target in sorted(targets - allowed)]
    return problems


def test_the_documented_import_table_holds() -> None:
    table = documented_imports(ARCHITECTURE_DOC.read_text())
    problems = undocumented_imports(table, folder_graph(graph()))
    assert not problems, (
        f"docs/architecture.md's folder table and the code disagree: {problems}; an import "
        "goes downwards (move what two folders share into the lower one), or the table says "
        "what the code now is"
    )


def test_the_table_reader_reads_rows_and_allows_what_they_allow() -> None:
    text = """
  | folder | may import |
  | --- | --- |
  | `game`, `store` | no other folder |
  | `schemas` | `game` — never `env`: contracts are plain data |
  | `env` | `schemas` (the settings), `store` |
  | `explore` | `env`, `flags` (`koholint explore`'s) |
  | `baselines` | `explore` |
  | `cli` | any folder |

  prose after the table: `loop`
"""
    table = documented_imports(text)
    assert table == {
        "game": set(), "store": set(), "schemas": {"game"}, "env": {"schemas", "store"},
        "explore": {"env", "flags"}, "baselines": {"explore"}, "cli": None,
    }  # fmt: skip
    assert allowed_imports(table, "explore") == {"env", "schemas", "store", "game", "flags"}
    code = {"game": set(), "store": set(), "schemas": {"env"}, "env": {"game"},
            "explore": {"store"}, "cli": {"explore"}, "loop": set()}  # fmt: skip
    assert undocumented_imports(table, code) == [
        "loop: not in the table", "baselines: in the table, not in the code", "schemas -> env",
    ]  # fmt: skip


def test_the_folder_loop_finder_finds_a_loop() -> None:
    # No module is in a cycle, yet the folders a and b import each other.
    edges = {
        "koholint.a.one": {"koholint.b.one"},
        "koholint.b.one": set(),
        "koholint.b.two": {"koholint.a.two"},
        "koholint.a.two": {"koholint.store"},
        "koholint.c": {"koholint.a.one", "koholint"},
        "koholint": set(),
        "service.app": {"koholint.c"},
    }
    assert strongly_connected(edges) == []
    assert folder_graph(edges) == {
        "a": {"b", "store"}, "b": {"a"}, "c": {"a", "koholint"}, "koholint": set(),
    }  # fmt: skip
    assert folder_loops(edges) == [["a", "b"]]
    assert folder_loops({**edges, "koholint.b.two": set()}) == []


PYDANTIC_PACKAGES = ("pydantic", "pydantic_core", "pydantic_settings")


def private_pydantic_imports(source: str) -> list[str]:
    """The private pydantic modules and names `source` imports (``pydantic._internal...``,
    any ``pydantic.*._name``): they change without notice between pydantic releases."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] in PYDANTIC_PACKAGES and any(p.startswith("_") for p in parts[1:]):
                found.append(name)
    return found


def test_no_module_imports_private_pydantic_modules() -> None:
    offenders = {
        name: found
        for name, path in modules().items()
        if (found := private_pydantic_imports(path.read_text()))
    }
    assert not offenders, f"private pydantic imports (use pydantic's public API): {offenders}"


def test_the_private_pydantic_finder_finds_them() -> None:
    source = """
import pydantic
import pydantic._internal._docs_extraction
from pydantic import BaseModel, Field
from pydantic._internal._docs_extraction import extract_docstrings_from_cls
from pydantic.fields import _Unset
from pydantic_settings import BaseSettings
from . import _local
"""
    assert private_pydantic_imports(source) == [
        "pydantic._internal._docs_extraction",
        "pydantic._internal._docs_extraction.extract_docstrings_from_cls",
        "pydantic.fields._Unset",
    ]


HOMONYMS = {
    "seed": "each seeds its own randomness: a run, a session's episodes, R_phi's fit, the judges' samples",
    "hidden_sizes": "the policy's layers (trainer) and R_phi's layers (reward model): two networks",
    "learning_rate": "PPO's step size (trainer) and R_phi's (reward model): two optimisers",
    "max_live_clients": "the console's browser feeds and env-sim's frame streams: two limits",
    "planner_url": "where each client finds the planner: set per client, like any service's address",
    "rom": "a run's or a command's world (train, explore, loop: a ROM or a world folder) and one "
    "env's ROM file (EnvConfig, None: the process's world): the run makes its world every env's",
    "rom_path": "env-sim plays the operator's ROM, the console draws its map from it: one file, each "
    "process's own path to it",
}
"""Fields named alike in two settings models that are different settings, each with why."""


def settings_models() -> list[type[Any]]:
    """Every settings model: each service's Settings, the trainer's run, the env, env-sim's
    session body, and every model they nest or inherit from."""
    import importlib

    from pydantic import BaseModel

    roots = [
        importlib.import_module(f"{path.parent.name}.config").Settings
        for path in sorted(SERVICES.glob("*/config.py"))
    ]
    roots += [
        importlib.import_module("trainer.ppo.config").TrainConfig,
        importlib.import_module("koholint.env.zelda").EnvConfig,
        importlib.import_module("koholint.schemas.env_sim").SessionSettings,
    ]
    found: list[type[Any]] = []

    def visit(model: type[Any]) -> None:
        for cls in model.__mro__:
            if (not isinstance(cls, type) or not issubclass(cls, BaseModel) or cls in found
                    or cls.__module__.split(".")[0] in PYDANTIC_PACKAGES):  # fmt: skip
                continue
            found.append(cls)
            for field in cls.model_fields.values():
                if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
                    visit(field.annotation)

    for root in roots:
        visit(root)
    return found


def declared_twice(models: list[type[Any]]) -> dict[str, list[str]]:
    """Field names declared (not inherited) in more than one of `models`."""
    where: dict[str, list[str]] = {}
    for model in models:
        for name in vars(model).get("__annotations__", {}):
            if name in model.model_fields:
                where.setdefault(name, []).append(f"{model.__module__}.{model.__qualname__}")
    return {name: sorted(owners) for name, owners in where.items() if len(owners) > 1}


def test_every_setting_is_declared_once() -> None:
    models = settings_models()
    assert len(models) > 15  # the walk found the services, the run's groups and the env's
    twice = {
        name: owners for name, owners in declared_twice(models).items() if name not in HOMONYMS
    }
    assert not twice, (
        f"settings declared in two models: {twice}; declare each once (a shared base or mixin in "
        "koholint.settings, service_defaults for another default) or, if they are different "
        "settings, name them apart"
    )


def test_the_declared_twice_finder_finds_them() -> None:
    from pydantic import BaseModel

    class Shared(BaseModel):
        store_url: str = ""

    class One(Shared):
        frame_skip: int = 4

    class Two(Shared):
        frame_skip: int = 8

    assert declared_twice([Shared, One, Two]) == {
        "frame_skip": [f"{__name__}.{name}" for name in (
            "test_the_declared_twice_finder_finds_them.<locals>.One",
            "test_the_declared_twice_finder_finds_them.<locals>.Two",
        )]
    }  # fmt: skip


LAUNCH_CALLS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput",
                   "getstatusoutput"},
    "os": {"system", "popen", "execv", "execve", "execvp", "execvpe", "execl", "execlp",
           "spawnv", "spawnve", "spawnvp", "spawnl", "posix_spawn", "posix_spawnp"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
}  # fmt: skip
"""The calls that start another process, by the module that offers them."""


def _names_koholint(node: ast.AST) -> bool:
    """Whether an expression names a koholint command: the text ``koholint``/``koholint ...``,
    ``-m koholint...``, or a helper whose name says koholint (``koholint_command(...)``)."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            text = inner.value.strip()
            if text == "koholint" or text.startswith(("koholint ", "koholint.", "-m koholint")):
                return True
            if text.endswith(("/koholint", "bin/koholint")):
                return True
        elif (
            isinstance(inner, ast.Name)
            and "koholint" in inner.id.lower()
            or isinstance(inner, ast.Attribute)
            and "koholint" in inner.attr.lower()
        ):
            return True
    return False


def koholint_launches(source: str) -> list[str]:
    """Each place `source` starts a ``koholint`` process, as ``line N``: a process-starting
    call (``subprocess.run``, ``Popen``, ``os.system``, ``asyncio.create_subprocess_exec``,
    ...; imported by name too) whose arguments name a koholint command, and any command line
    built as ``[..., "-m", "koholint..."]`` (what a helper hands such a call)."""
    tree = ast.parse(source)
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module in LAUNCH_CALLS
        for alias in node.names
        if alias.name in LAUNCH_CALLS[node.module]
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            launches = (
                isinstance(function, ast.Attribute)
                and isinstance(function.value, ast.Name)
                and function.attr in LAUNCH_CALLS.get(function.value.id, ())
            ) or (isinstance(function, ast.Name) and function.id in imported)
            arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
            if launches and any(_names_koholint(argument) for argument in arguments):
                found.append(f"line {node.lineno}")
        elif isinstance(node, ast.List | ast.Tuple):
            texts = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            for flag, module in zip(texts, texts[1:], strict=False):
                if flag == "-m" and isinstance(module, str) and module.startswith("koholint"):
                    found.append(f"line {node.lineno}")
    return sorted(set(found), key=lambda line: int(line.split()[1]))


def test_the_library_starts_no_koholint_process() -> None:
    """The library drives no service: the commands that run services one after another live
    in the orchestrator (services/orchestrator), above them."""
    offenders = {
        name: found
        for name, path in modules().items()
        if top(name) == "koholint" and (found := koholint_launches(path.read_text()))
    }
    assert not offenders, (
        f"library modules start koholint processes: {offenders}; run stages from the "
        "orchestrator (services/orchestrator) or call the service through its client"
    )


def test_the_launch_finder_finds_them() -> None:
    source = """
import os, subprocess, sys
from subprocess import Popen as Start

def koholint(*arguments):
    return [sys.executable, "-m", "koholint.cli", *arguments]

subprocess.run(koholint("evaluate"), check=False)
Start(["koholint", "train"])
os.system("koholint train-reward-model --store runs/store")
subprocess.run(command, env={"KOHOLINT_EVALUATOR_STATE_STRIDE": "1"})
subprocess.run([sys.executable, "-c", "print(1)"])
subprocess.Popen(["sdasgb", "-o", "crt0.s"])
"""
    assert koholint_launches(source) == ["line 6", "line 8", "line 9", "line 10"]
