"""The trainer's curriculum: the winning trajectory file, and the shared curriculum built from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from koholint.env.zelda import Action
from trainer.ppo.curriculum import CurriculumSettings, build_curriculum, read_trajectory


def test_a_trajectory_file_builds_the_curriculum_at_its_end(tmp_path: Path):
    path = tmp_path / "win.actions"
    path.write_bytes(bytes([Action.UP] * 16 + [Action.NOOP]))
    curriculum = build_curriculum(CurriculumSettings(str(path), every=8, window=2, move_by=8))
    assert [state.step for state in curriculum.demo] == [0, 8, 16]
    assert curriculum.start_step == 16
    curriculum.report(16, True)
    curriculum.report(16, True)
    assert curriculum.start_step == 8


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file"), (b"", "0 actions"), (bytes([1, 9]), "action 9")],
)
def test_bad_trajectory_files_name_the_problem(tmp_path: Path, content, message):
    path = tmp_path / "win.actions"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        read_trajectory(str(path))
