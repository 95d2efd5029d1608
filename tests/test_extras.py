"""Each service runs with only its own extra installed, as its image has it: its app is built
in a Python where the heavy packages its extra does not list (torch, Ray, llama.cpp) cannot
be imported. An eager import of one of them through the library fails here, not in a
container."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
HEAVY = {"torch": "torch", "ray": "ray", "llama-cpp-python": "llama_cpp"}
"""distribution -> module, for the packages only some extras list"""
EXTRA_OF = {"llm-local": "local-llm"}
"""a service whose extra has another name"""


def services() -> dict[str, str]:
    return dict(PYPROJECT["project"]["entry-points"]["koholint.services"])


def blocked_for(service: str) -> list[str]:
    extras = PYPROJECT["project"]["optional-dependencies"]
    listed = {re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower()
              for requirement in extras[EXTRA_OF.get(service, service)]}  # fmt: skip
    return sorted(module for distribution, module in HEAVY.items() if distribution not in listed)


def test_every_service_has_an_extra() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {EXTRA_OF.get(name, name) for name in services()} <= set(extras)


@pytest.mark.parametrize("service", sorted(services()))
def test_the_service_app_builds_without_what_its_extra_does_not_install(service: str) -> None:
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
        f"{service} imports one of {blocked} (its image does not have them):\n"
        f"{completed.stderr[-2500:]}"
    )
