"""The trainer's shaping glue: a version reaches every env's wrapper (from the next episode on),
and the counts of what it shaped come back."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from koholint.env.vector import make_vector_env
from koholint.env.wrappers import ShapingWrapper
from trainer.ppo.shaping import ShapingReport, give_potential, shaping_counts, shaping_wrappers

sys.path.insert(0, str(Path(__file__).parents[3] / "libs/koholint/reward"))
from reward_versions import random_reward_model


def test_a_version_reaches_every_env_from_its_next_episode():
    envs = make_vector_env(3, wrap=lambda env, index: ShapingWrapper(env, gamma=0.99),
                           max_episode_steps=5)  # fmt: skip
    assert len(shaping_wrappers(envs)) == 3
    envs.reset(seed=0)
    model = random_reward_model(seed=1)
    assert give_potential(envs, model) == 3
    actions = np.zeros(3, np.int64)
    envs.step(actions)
    assert shaping_counts(envs)[0] == {}  # mid-episode: not yet
    for _ in range(4 + 1 + 3):  # finish the episode, reset, three shaped steps each
        envs.step(actions)
    steps, total, absolute = shaping_counts(envs)
    assert steps == {model.version: 9}
    assert absolute > 0
    assert abs(total) <= absolute
    envs.close()


def test_an_env_without_shaping_has_no_wrappers():
    envs = make_vector_env(2, max_episode_steps=5)
    assert shaping_wrappers(envs) == []
    assert give_potential(envs, random_reward_model()) == 0
    assert ShapingReport().steps_by_version == {}
    envs.close()
