"""What a DAgger round labels: each labeller's starts, and the curriculum's start."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from koholint.env.zelda import EnvConfig
from koholint.imitation import ImitationSettings, labeller, lesson
from koholint.schemas.env import Action
from koholint.teachers import walks
from koholint.teachers.base import TaughtReport, teach

ERRANDS_SEED0 = (Path(__file__).parents[3] / "benchmarks" / "results" / "win"
                 / "errands-2026-11-28" / "seed0-369.actions")  # fmt: skip


@pytest.fixture
def given():
    config = EnvConfig.parse({"sticky_action_probability": 0.25})
    return lesson(ImitationSettings(), ERRANDS_SEED0.read_bytes(), config)


def up(observation: np.ndarray, rng: np.random.Generator) -> int:
    return int(Action.UP)


def test_a_round_during_ppo_labels_from_the_curriculums_start_too(given, monkeypatch):
    """Real PyBoy for the route; the walker's own starts stood in for (their labels are
    tested with the walker)."""

    def own_starts(lesson, act) -> TaughtReport:
        return teach([], 1, given.demo.observations.shape[1], lambda *_: None)

    monkeypatch.setattr(walks.TEACHER, "correct", own_starts)
    settings = ImitationSettings(clone_epochs=1, teachers=["walks"], labellers=["walks"],
                                 correct_every_env_steps=1000, route_episodes=2)  # fmt: skip
    correct = labeller(settings, given)
    assert correct is not None
    reports = correct(up, route=112)  # seed 0's errands: room 0x11, its exit up
    assert set(reports) == {"walks", "route"}
    assert (reports["route"].starts, reports["route"].episodes) == (1, 2)
    assert len(reports["route"].transitions.actions) > 0
    # before PPO there is no curriculum's start, and without route_episodes no route
    assert set(correct(up)) == {"walks"}
    unrouted = labeller(settings.model_copy(update={"route_episodes": 0}), given)
    assert set(unrouted(up, route=112)) == {"walks"}
