"""The teachers by name behind one protocol, and Go-Explore without them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from koholint.teachers import TEACHERS, teacher
from koholint.teachers.base import Labeller, Teacher

EXPLORE = Path(__file__).parents[4] / "libs" / "koholint" / "explore"


@pytest.mark.parametrize("name", sorted(TEACHERS))
def test_every_registered_teacher_follows_the_protocol(name: str):
    found = teacher(name)
    assert callable(found.teach)
    assert not isinstance(found, Labeller) or callable(found.correct)
    typed: Teacher = found  # mypy checks the protocol here
    assert typed is found


def test_the_fighter_the_walker_and_the_openers_label_a_policys_states():
    labellers = {name for name in TEACHERS if isinstance(teacher(name), Labeller)}
    assert labellers == {"fights", "walks", "chests", "doors"}


def test_an_unknown_teacher_is_refused_with_the_names():
    with pytest.raises(ValueError, match="use one of fights, walks"):
        teacher("boxer")


def test_go_explore_imports_no_teacher():
    """explore/ is Go-Explore alone: no module of it imports koholint.teachers, deferred
    imports inside functions included."""
    offenders = []
    for path in sorted(EXPLORE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {name}" for name in names
                          if name.startswith("koholint.teachers")]  # fmt: skip
    assert not offenders
