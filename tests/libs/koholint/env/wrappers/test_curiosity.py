"""Curiosity on the real environment: the per-env wrapper pays within its budget and trains;
batched over a vector env, the same rewards as the per-env wrapper with one env, the 30%
budget per env and per episode with several."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from koholint.env.rnd import Rnd, RndConfig
from koholint.env.vector import EpisodeEndVectorEnv, make_vector_env
from koholint.env.wrappers import CuriosityWrapper
from koholint.env.wrappers.curiosity import CuriosityVectorWrapper
from koholint.env.zelda import ZeldaEnv

# Short episodes: budgets must restart at every autoreset.
SETTINGS = {"max_episode_steps": 40, "sticky_action_probability": 0.25, "info_state": False}


def walk(rng: np.random.Generator, count: int) -> np.ndarray:
    """Directions held a few steps: Link leaves the start and finds new cells (extrinsic)."""
    return np.repeat(rng.integers(1, 5, size=count // 4 + 1), 4)[:count]


def test_one_env_gets_exactly_the_rewards_of_the_per_env_wrapper():
    single = CuriosityWrapper(ZeldaEnv(SETTINGS), train_every=16, rnd=RndConfig(seed=4))
    vector = CuriosityVectorWrapper(
        EpisodeEndVectorEnv([lambda: ZeldaEnv(SETTINGS)]), train_every=16, rnd=RndConfig(seed=4)
    )
    single.reset(seed=1)
    vector.reset(seed=1)
    paid = 0.0
    for action in walk(np.random.default_rng(0), 130):  # three episodes, two autoresets
        observations, rewards, *_ = vector.step(np.array([action]))
        if vector.last_step_reset[0]:  # the episode ended on the step before
            single.reset()
            assert rewards[0] == 0.0  # the autoreset step pays nothing
            continue
        observation, reward, *_, info = single.step(int(action))
        np.testing.assert_array_equal(observations[0], observation)
        assert rewards[0] == reward  # bit for bit: the same RND, budget and training
        paid += info["reward_components"]["intrinsic"]
    assert paid > 0  # curiosity paid, so the comparison covered it
    assert vector.rnd.observation_stats.count == single.rnd.observation_stats.count
    single.close()
    vector.close()


def test_each_env_is_paid_within_its_own_budget_per_episode():
    envs = 3
    vector = CuriosityVectorWrapper(
        EpisodeEndVectorEnv([lambda: ZeldaEnv(SETTINGS)] * envs), train_every=8
    )
    plain = EpisodeEndVectorEnv([lambda: ZeldaEnv(SETTINGS)] * envs)  # the same envs, no RND
    vector.reset(seed=3)
    plain.reset(seed=3)
    rng = np.random.default_rng(1)
    extrinsic, paid = np.zeros(envs), np.zeros(envs)
    total_paid = 0.0
    for _ in range(100):  # 40-step episodes: every env restarts twice
        actions = rng.integers(1, 5, size=envs)
        observations, rewards, *_ = vector.step(actions)
        expected = plain.step(actions)
        np.testing.assert_array_equal(observations, expected[0])  # RND only adds reward
        intrinsic = rewards - expected[1]
        reset = vector.last_step_reset
        assert np.all(intrinsic[reset] == 0.0)
        extrinsic[reset], paid[reset] = 0.0, 0.0
        extrinsic += np.abs(expected[1])
        paid += intrinsic
        assert np.all(intrinsic >= 0.0)
        assert np.all(paid <= 0.3 * extrinsic + 1e-9)  # per env, per episode so far
        total_paid += intrinsic.sum()
    assert total_paid > 0
    # One predictor for all envs, trained on every env's observations (not the reset ones).
    assert vector.rnd.observation_stats.count == pytest.approx(96 * envs, abs=1)
    vector.close()
    plain.close()


def test_batched_errors_equal_one_observation_at_a_time():
    rng = np.random.default_rng(2)
    observations = rng.uniform(-1, 1, size=(4, 128)).astype(np.float32)
    rnd = Rnd(RndConfig(seed=1))
    rnd.train(rng.uniform(-1, 1, size=(64, 128)).astype(np.float32))
    one_by_one = np.concatenate([rnd.errors(row[None, :]) for row in observations])
    np.testing.assert_allclose(rnd.errors(observations), one_by_one, rtol=1e-5)


def test_streams_keep_their_own_discounted_return():
    rnd, reference = Rnd(), Rnd()
    rng = np.random.default_rng(3)
    for _ in range(5):
        row = rng.uniform(-1, 1, size=(1, 128)).astype(np.float32)
        assert rnd.stream_intrinsic_rewards(row, [7]) == reference.intrinsic_rewards(row)
    both = rng.uniform(-1, 1, size=(2, 128)).astype(np.float32)
    rnd.stream_intrinsic_rewards(both, [7, 8])
    errors = rnd.errors(both)
    assert rnd._stream_returns[8] == pytest.approx(float(errors[1]))  # a new env starts at 0


def test_the_trainers_vector_env_and_gymnasiums_sync_env_both_work():
    factories = [lambda: ZeldaEnv(SETTINGS)] * 2
    sync = CuriosityVectorWrapper(SyncVectorEnv(factories, autoreset_mode=AutoresetMode.NEXT_STEP))
    ours = make_vector_env(2, wrap_vector=CuriosityVectorWrapper, **SETTINGS)
    assert isinstance(ours, CuriosityVectorWrapper)
    for vector in (sync, ours):
        vector.reset(seed=0)
        for _ in range(45):
            vector.step(np.array([1, 2]))
    np.testing.assert_array_equal(sync.last_step_reset, ours.last_step_reset)
    sync.close()
    ours.close()


def test_bad_settings_are_refused():
    factories = [lambda: ZeldaEnv(SETTINGS)]
    with pytest.raises(ValueError, match="train_every"):
        CuriosityVectorWrapper(EpisodeEndVectorEnv(factories), train_every=0)
    same_step = SyncVectorEnv(factories, autoreset_mode=AutoresetMode.SAME_STEP)
    with pytest.raises(ValueError, match="next-step autoreset"):
        CuriosityVectorWrapper(same_step)
    same_step.close()


def test_curiosity_pays_within_the_budget_and_trains():
    env = CuriosityWrapper(ZeldaEnv(), train_every=16)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    extrinsic = paid = 0.0
    for _ in range(200):
        _, reward, _, _, info = env.step(int(rng.integers(1, 5)))
        components = info["reward_components"]
        extrinsic += abs(float(reward) - components["intrinsic"])
        paid += components["intrinsic"]
        assert components["intrinsic"] <= components["intrinsic_raw"] + 1e-9
        assert paid <= 0.3 * extrinsic + 1e-9
    assert paid > 0  # curiosity did pay
    assert env.rnd.observation_stats.count > 100  # the predictor trained on what it saw
    env.close()


def test_curiosity_arguments_are_checked():
    with pytest.raises(ValueError, match="train_every"):
        CuriosityWrapper(ZeldaEnv(), train_every=0)
