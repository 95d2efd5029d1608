"""The repository keeps the layout the design card fixes, and its entry points stay usable."""

import os
import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# The top level the design card fixes (DESIGN.md, "Where things live").
DESIGN_CARD_PATHS = [
    "services",
    "libs",
    "gitops",
    "docker",
    "tests",
    "compose.yaml",
    "pyproject.toml",
    "Makefile",
    "README.md",
]

# A rule line: `name: prerequisites`, not a variable assignment (`:=`, `::=`) or a recipe line.
MAKE_RULE = re.compile(r"^(?P<targets>[A-Za-z0-9_.-][A-Za-z0-9_. -]*):(?![:=])(?P<rest>.*)$")


def make_rules() -> list[tuple[str, str]]:
    """(target, rest of the rule line) for every explicit target in the Makefile."""
    rules = []
    for line in (REPO_ROOT / "Makefile").read_text().splitlines():
        match = MAKE_RULE.match(line)
        if match is None:
            continue
        for target in match["targets"].split():
            if not target.startswith("."):  # special targets such as .PHONY
                rules.append((target, match["rest"]))
    return rules


@pytest.mark.parametrize("relative_path", DESIGN_CARD_PATHS)
def test_design_card_path_exists(relative_path: str) -> None:
    assert (REPO_ROOT / relative_path).exists(), f"{relative_path} is missing from the top level"


def test_library_package_is_under_libs() -> None:
    assert (REPO_ROOT / "libs" / "koholint" / "__init__.py").is_file()


def test_every_make_target_has_a_help_line() -> None:
    rules = make_rules()
    assert {"help", "setup", "test", "test-fast", "lint", "run"} <= {name for name, _ in rules}
    undocumented = [name for name, rest in rules if "## " not in rest]
    assert not undocumented, f"Makefile targets without a '## ' help comment: {undocumented}"


def test_make_help_is_the_default_goal() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert re.search(r"^\.DEFAULT_GOAL\s*:?=\s*help\s*$", makefile, re.MULTILINE)


def test_ci_entry_point_is_executable_and_stops_on_errors() -> None:
    ci_run = REPO_ROOT / ".ci" / "run"
    assert ci_run.is_file(), ".ci/run is missing"
    assert os.access(ci_run, os.X_OK), ".ci/run is not executable (chmod +x .ci/run)"
    script = ci_run.read_text()
    assert re.match(r"#!.*\bbash\b", script), ".ci/run must start with a bash shebang"
    assert re.search(r"^set -[a-z]*e", script, re.MULTILINE), ".ci/run must `set -euo pipefail`"
