"""ZeldaEnv's fast path (compiled taps) against its pure-Python reference path: the same
observations, rewards, ends and infos, value for value."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from koholint.baselines.policies import WALKTHROUGH_ENV, WalkthroughPolicy
from koholint.env.zelda import Action, ZeldaEnv
from koholint.game import fastpath
from koholint.game.state import RawState

pytestmark = pytest.mark.skipif(
    not fastpath.COMPILED,
    reason="koholint.game._fastpath is not built: make setup (python -m koholint.game.build_fastpath)",
)


def make_env(fast: bool, **settings: Any) -> ZeldaEnv:
    env = ZeldaEnv(**settings)
    env.fast_path = fast
    return env


def raw_values(env: ZeldaEnv) -> dict[str, Any]:
    raw = env.raw_state
    return {name: getattr(raw, name) for name in RawState.__slots__ if name != "_memory"}


def assert_same_step(fast: tuple, reference: tuple) -> None:
    np.testing.assert_array_equal(fast[0], reference[0])
    assert fast[0].dtype == reference[0].dtype == np.float32
    assert fast[1:4] == reference[1:4]
    assert type(fast[1]) is type(reference[1])
    assert fast[4] == reference[4]


def walkthrough(fast: bool) -> list[tuple]:
    env = make_env(fast, **{**WALKTHROUGH_ENV, "max_episode_steps": 10_000})
    policy = WalkthroughPolicy()
    observation, info = env.reset(seed=0)
    policy.reset(env, 0)
    steps: list[tuple] = [(observation, 0.0, False, False, info, raw_values(env))]
    terminated = truncated = False
    while not (terminated or truncated):
        observation, reward, terminated, truncated, info = env.step(policy.act(observation, info))
        steps.append((observation, reward, terminated, truncated, info, raw_values(env)))
    assert (env._taps is not None) is fast
    env.close()
    return steps


def test_walkthrough_gives_identical_observations_rewards_and_infos():
    fast, reference = walkthrough(True), walkthrough(False)
    assert len(fast) == len(reference) > 3000
    assert fast[-1][2] is True  # the walkthrough wins through both paths
    for fast_step, reference_step in zip(fast, reference, strict=True):
        assert_same_step(fast_step[:5], reference_step[:5])
        assert fast_step[5] == reference_step[5]
    rewarded = {
        name for step in fast for name, value in step[4]["reward_components"].items() if value
    }
    assert {"new_room", "item", "key", "win", "coverage"} <= rewarded


def rollout(fast: bool, steps: int, **settings: Any) -> list[tuple]:
    """Random actions with sticky actions, latches, episode ends, absorb() and sync()."""
    env = make_env(fast, **settings)
    rng = np.random.default_rng(5)
    results = [env.reset(seed=3)]
    for step in range(steps):
        if step % 97 == 96:
            env.gameboy.tick(6)  # frames run outside step, as the planner's macros do
            result = env.absorb()
        elif step % 131 == 130:
            env.gameboy.tick(3)
            results.append((env.sync(),))
            result = env.step(int(rng.integers(9)))
        else:
            result = env.step(np.int64(rng.integers(9)))
        results.append((*result, raw_values(env)))
        if result[2] or result[3]:
            results.append(env.reset())
    env.close()
    return results


@pytest.mark.parametrize(
    "settings",
    [
        {"sticky_action_probability": 0.25, "max_episode_steps": 300, "info_state": False},
        {"latch_steps": 4, "coverage_bin": 32, "reward_mode": "progress", "frame_skip": 3},
        {"reward_mode": "sparse", "start_state": "dungeon_entrance", "max_episode_steps": 500},
        {"observation": "memory", "max_episode_steps": 400},
        {"observation": "flags", "max_episode_steps": 400},
        {"observation": "local", "max_episode_steps": 400},
    ],
)
def test_random_rollouts_are_identical_on_both_paths(settings):
    fast, reference = rollout(True, 1200, **settings), rollout(False, 1200, **settings)
    assert len(fast) == len(reference)
    for fast_step, reference_step in zip(fast, reference, strict=True):
        if len(fast_step) >= 5:
            assert_same_step(fast_step[:5], reference_step[:5])
            assert fast_step[5:] == reference_step[5:]
        else:
            assert str(fast_step) == str(reference_step)


def test_reference_path_is_used_when_fast_path_is_off():
    env = make_env(False)
    env.reset(seed=0)
    env.step(Action.RIGHT)
    assert env._taps is None
    env.fast_path = True
    env.reset(seed=0)  # the switch takes effect at reset
    assert env._taps is not None
    env.close()


def test_raw_state_is_built_on_demand_from_the_step_snapshot():
    env = make_env(True)
    env.reset(seed=0)
    for _ in range(12):
        env.step(Action.RIGHT)
    snapshot = raw_values(env)
    env.gameboy.tick(30)  # the emulator moves on; the step's state must not
    assert raw_values(env) == snapshot
    env.close()
