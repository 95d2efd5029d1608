"""Curiosity: RND's intrinsic reward, paid within the 30% budget of the extrinsic reward."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from koholint.env.rnd import INTRINSIC_RATIO, IntrinsicBudget, Rnd, RndConfig


class CuriosityWrapper(gym.Wrapper[np.ndarray, Any, np.ndarray, Any]):
    """Adds RND intrinsic reward, paid from a budget of 30% of the episode's extrinsic reward.

    The predictor trains on this env's own observations every `train_every` steps.
    ``info['reward_components']`` gains ``intrinsic`` (paid) and ``intrinsic_raw``.
    """

    def __init__(self, env: gym.Env[np.ndarray, Any], *, weight: float = 1.0, ratio: float = INTRINSIC_RATIO,
                 train_every: int = 128, rnd: RndConfig | None = None) -> None:  # fmt: skip
        super().__init__(env)
        if weight < 0 or train_every < 1:
            raise ValueError(f"weight {weight} must be >= 0 and train_every {train_every} >= 1")
        self.weight = weight
        self.train_every = train_every
        self.rnd = Rnd(rnd)
        self.budget = IntrinsicBudget(ratio)
        self._buffer: list[np.ndarray] = []

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        self.budget.reset()
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        raw = float(self.rnd.intrinsic_rewards(observation[None, :])[0]) * self.weight
        paid = self.budget.grant(float(reward), raw)
        components = dict(info.get("reward_components", {}))
        components["intrinsic_raw"] = raw
        components["intrinsic"] = paid
        info["reward_components"] = components
        self._buffer.append(observation)
        if len(self._buffer) >= self.train_every:
            self.rnd.train(np.stack(self._buffer))
            self._buffer.clear()
        return observation, float(reward) + paid, terminated, truncated, info
