"""The winning trajectory as a demonstration: the observations and rewards the training env
would have given along it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from koholint.env.encoding import OBSERVATION_SIZE
from koholint.env.zelda import EnvConfig
from koholint.explore.demo import demo_transitions
from koholint.schemas.env import RewardWeights

WIN = Path(__file__).parents[4] / "benchmarks" / "results" / "win" / "explore-seed0.actions"


def test_the_demo_is_what_the_policy_would_see_and_be_paid():
    actions = WIN.read_bytes()
    config = EnvConfig(reward_mode="progress", reward_weights=RewardWeights(new_room=0.0))
    demo = demo_transitions(actions, config)
    assert demo.observations.shape == (len(actions), OBSERVATION_SIZE)
    assert demo.actions.tolist() == list(actions)
    assert demo.rewards[-1] == pytest.approx(10.0)  # the instrument: the win's weight
    assert demo.rewards[:-1].max() < 10.0  # and only the last step wins
    assert np.count_nonzero(demo.rewards == 0.5) >= 1  # the key (weight 0.5)
    sparse = demo_transitions(actions, EnvConfig(reward_mode="sparse"))
    assert sparse.rewards.sum() == pytest.approx(10.0)
    np.testing.assert_array_equal(sparse.observations, demo.observations)


def test_a_trajectory_that_does_not_win_is_refused():
    with pytest.raises(ValueError, match="does not reach the credits"):
        demo_transitions(WIN.read_bytes()[:-40], EnvConfig())
