"""koholint/Zelda-v1 passes the environment checkers of Stable-Baselines3 and Gymnasium, and a
closed env is reopened by reset() or refused by step(), never half-alive."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import koholint


@pytest.mark.parametrize("skip_render_check", [False, True])
def test_stable_baselines3_check_env_passes(skip_render_check: bool) -> None:
    env = gym.make(koholint.ENV_ID, render_mode="rgb_array").unwrapped
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a checker warning is a failure too
            sb3_check_env(env, warn=True, skip_render_check=skip_render_check)
        # The render stage closes the env; it must still run an episode afterwards.
        env.reset(seed=0)
        assert env.step(1)[0].shape == env.observation_space.shape
    finally:
        env.close()


def test_gymnasium_check_env_passes_with_rendering() -> None:
    env = gym.make(koholint.ENV_ID, render_mode="rgb_array")
    try:
        gymnasium_check_env(env.unwrapped, skip_render_check=False)
    finally:
        env.close()


def test_closed_env_reopens_on_reset_and_refuses_step() -> None:
    env = gym.make(koholint.ENV_ID).unwrapped
    first, _ = env.reset(seed=3)
    env.close()
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        env.step(1)
    again, _ = env.reset(seed=3)
    assert (again == first).all()  # a fresh emulator, the same start
    env.step(1)
    env.close()
    env.close()  # closing twice is harmless
