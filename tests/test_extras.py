"""Each service runs with only its own extra installed, as its image has it: its app is built
in a Python where every installed distribution that the project's core dependencies and that
extra do not pull in (torch, Ray, llama.cpp, the dev tools, another service's packages)
cannot be imported. A missing requirement, or an eager import of another extra's package
through the library, fails here and not in a container. The package data each service
reads (the console's static files) must be declared to be in its wheel."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO_ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
EXTRA_OF = {"llm-local": "local-llm"}
"""a service whose extra has another name"""
IN_EVERY_VENV = {"pip", "setuptools", "wheel", "koholint"}


def services() -> dict[str, str]:
    return dict(PYPROJECT["project"]["entry-points"]["koholint.services"])


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pulled_in(requirements: list[str]) -> set[str]:
    """The distributions `requirements` install, with everything they require in turn."""
    found: set[str] = set()
    pending = [(Requirement(text), "") for text in requirements]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonical(requirement.name)
        key = name + "[" + ",".join(sorted(requirement.extras)) + "]"
        if key in found:
            continue
        found.update({key, name})
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for wanted in [""] + sorted(requirement.extras):
            pending.extend((Requirement(text), wanted) for text in requires)
    return {name for name in found if "[" not in name}


@cache
def top_level_modules() -> dict[str, set[str]]:
    """Each installed distribution -> the top-level modules it puts on sys.path."""
    modules: dict[str, set[str]] = {}
    # site-packages only: Ray puts its vendored packages (psutil, ...) on sys.path once imported
    paths = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    for distribution in metadata.distributions(path=paths):
        names = set()
        for file in distribution.files or []:
            first = file.parts[0]
            if first.endswith((".dist-info", ".data")) or first in ("..", "__pycache__"):
                continue
            if len(file.parts) > 1 or first.endswith((".py", ".so")):
                names.add(first.split(".")[0])
        modules[canonical(distribution.metadata["Name"])] = names
    return modules


def blocked_for(service: str) -> list[str]:
    project = PYPROJECT["project"]
    extra = project["optional-dependencies"][EXTRA_OF.get(service, service)]
    allowed = pulled_in(project["dependencies"] + extra) | IN_EVERY_VENV
    keep = set().union(*(top_level_modules().get(name, set()) for name in allowed))
    keep |= {"koholint", *services_packages()}
    blocked = set().union(
        *(mods for name, mods in top_level_modules().items() if name not in allowed)
    )
    return sorted(blocked - keep)


def services_packages() -> set[str]:
    return {
        path.name for path in (REPO_ROOT / "services").iterdir() if (path / "__init__.py").exists()
    }


def test_every_service_has_an_extra() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {EXTRA_OF.get(name, name) for name in services()} <= set(extras)


def test_the_blocked_set_holds_what_an_image_lacks() -> None:
    """The check can fail: torch and Ray are blocked for env-sim, torch not for the trainer."""
    assert {"torch", "ray", "llama_cpp", "pytest"} <= set(blocked_for("env-sim"))
    assert not {"torch", "ray"} & set(blocked_for("trainer"))


@pytest.mark.parametrize("service", sorted(services()))
def test_the_service_app_builds_with_only_its_extra(service: str) -> None:
    module, _, factory = services()[service].partition(":")
    blocked = blocked_for(service)
    code = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None  # import raises ImportError\n"
        f"from {module} import {factory}\n"
        f"{factory}()\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=120, cwd=REPO_ROOT, check=False)  # fmt: skip
    assert completed.returncode == 0, (
        f"{service} needs a package its extra does not install "
        f"(add it to [project.optional-dependencies] {EXTRA_OF.get(service, service)}):\n"
        f"{completed.stderr[-2500:]}"
    )


@pytest.mark.parametrize("package", sorted(services_packages()))
def test_the_files_a_service_reads_are_package_data(package: str) -> None:
    declared = PYPROJECT["tool"]["setuptools"].get("package-data", {}).get(package, [])
    root = REPO_ROOT / "services" / package
    data = [path.relative_to(root) for path in root.rglob("*")
            if path.is_file() and path.suffix not in (".py", ".pyc", ".so", ".c")
            and "__pycache__" not in path.parts]  # fmt: skip
    undeclared = [str(path) for path in data if not any(path.match(glob) for glob in declared)]
    assert not undeclared, (
        f"services/{package} files missing from its wheel: {undeclared}; "
        f"list them in [tool.setuptools.package-data] {package}"
    )
