"""EpisodeEndVectorEnv against Gymnasium's SyncVectorEnv on the real environment."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from koholint.env.vector import EpisodeEndVectorEnv
from koholint.env.zelda import ZeldaEnv

SETTINGS = {"max_episode_steps": 7, "sticky_action_probability": 0.25, "info_state": False}


def factories(count: int) -> list:
    return [lambda: ZeldaEnv(SETTINGS) for _ in range(count)]


def test_steps_equal_sync_vector_env_across_episode_ends():
    ours = EpisodeEndVectorEnv(factories(3))
    reference = SyncVectorEnv(factories(3), autoreset_mode=AutoresetMode.NEXT_STEP)
    observations, _ = ours.reset(seed=5)
    expected, _ = reference.reset(seed=5)
    np.testing.assert_array_equal(observations, expected)
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(20):  # 7-step episodes: every env ends and resets twice
        actions = rng.integers(0, 9, size=3)
        got = ours.step(actions)
        want = reference.step(actions)
        for ours_part, reference_part in zip(got[:4], want[:4], strict=True):
            np.testing.assert_array_equal(ours_part, reference_part)
        ended += int(np.sum(got[2] | got[3]))
    assert ended == 6
    ours.close()
    reference.close()


def test_infos_carry_only_the_last_info_of_ended_episodes():
    vector = EpisodeEndVectorEnv(factories(2))
    vector.reset(seed=0)
    noop = np.zeros(2, dtype=np.int64)
    for _ in range(6):
        *_, infos = vector.step(noop)
        assert infos == {}
    *_, truncations, infos = vector.step(noop)
    assert truncations.tolist() == [True, True]
    assert infos["_rooms"].tolist() == [True, True]
    assert infos["rooms"].tolist() == [1, 1]
    assert infos["milestones"]["sword"].tolist() == [False, False]
    observations, rewards, _, truncations, infos = vector.step(noop)  # the autoreset step
    assert rewards.tolist() == [0.0, 0.0]
    assert truncations.tolist() == [False, False]
    assert infos == {}


def test_returned_arrays_are_copies():
    vector = EpisodeEndVectorEnv(factories(1))
    first, _ = vector.reset(seed=0)
    kept = first.copy()
    for _ in range(3):
        vector.step(np.array([1]))  # walk up: the observation changes
    np.testing.assert_array_equal(first, kept)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least one"):
        EpisodeEndVectorEnv([])
    vector = EpisodeEndVectorEnv(factories(2))
    with pytest.raises(ValueError, match="2 envs"):
        vector.reset(seed=[1, 2, 3])
    vector.reset(seed=0)
    with pytest.raises(ValueError, match="outside Discrete"):
        vector.step(np.array([0, 99]))
