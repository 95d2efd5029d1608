"""Phase 1's winning trajectory as a demonstration for phase 2: what the policy would have
seen and been paid, step by step (Go-Explore's robustification imitates it, with SIL)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from koholint.env.factory import make_env
from koholint.env.zelda import EnvConfig


@dataclass(frozen=True)
class DemoTransitions:
    """A winning trajectory as the policy sees it: the observation before each action, the
    action, and the reward the training env paid for it."""

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray


def demo_transitions(actions: bytes, env_config: EnvConfig) -> DemoTransitions:
    """Replay `actions` under the training env's reward settings from ``start_of_play``,
    without sticky actions or latch and with the rules planner's hybrid control (as phase 1
    found them); refuse a trajectory that does not end at the credits."""
    config = env_config.replaced(
        start_state="start_of_play", sticky_action_probability=0.0, latch_steps=1,
        cartridge_seed=0, info_state=False, max_episode_steps=2 * len(actions) + 2,
    )  # fmt: skip
    env = make_env(config, planner="rules")
    observations, rewards = [], []
    terminated = False
    try:
        observation, _ = env.reset(seed=0)
        for index, action in enumerate(actions, start=1):
            if terminated:
                raise ValueError(f"the trajectory reached the credits early, at step {index - 1}")
            observations.append(observation)
            observation, reward, terminated, _, _ = env.step(action)
            rewards.append(float(reward))
    finally:
        env.close()
    if not terminated:
        raise ValueError("the trajectory does not reach the credits: give a winning one")
    return DemoTransitions(
        np.asarray(observations, np.float32),
        np.frombuffer(actions, np.uint8).astype(np.int64),
        np.asarray(rewards, np.float32),
    )
