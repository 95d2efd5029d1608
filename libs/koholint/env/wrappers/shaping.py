"""Shaping: the reward model's potential, F = gamma * Phi(s') - Phi(s), added to the reward.

Potential-based shaping (Ng, Harada and Russell, 1999) never changes which policy is optimal:
over an episode the shaping terms telescope to ``gamma^T * Phi(s_T) - Phi(s_0)``. That holds
only if Phi is 0 at terminal states (no value is bootstrapped past them) and is *not* zeroed
at truncation (the value bootstraps there, as if the episode went on), and with PPO's gamma.
"""

from __future__ import annotations

from typing import Any, Protocol, SupportsFloat

import gymnasium as gym
import numpy as np

SHAPING_COMPONENT = "shaping"


class Potential(Protocol):
    """Phi before scaling, for a batch of observations; `version` names it in the ledger
    (the reward model's is ``koholint.reward.model.RewardModelPotential``)."""

    version: str

    def __call__(self, observations: np.ndarray) -> np.ndarray: ...


class ShapingWrapper(gym.Wrapper[np.ndarray, Any, np.ndarray, Any]):
    """Adds F = gamma * Phi(s') - Phi(s) with Phi = scale * potential(observation), Phi = 0 at
    terminal states; off (reward unchanged) until a potential is given.

    ``set_potential`` stages a new potential: it takes effect at the next reset, never within
    an episode (a potential swapped mid-episode would break the telescoping sum).
    ``info['reward_components']['shaping']`` carries F and ``info['reward_model_version']`` the
    version that shaped the step; ``shaped_steps`` counts steps per version, ``shaping_sum``
    and ``shaping_abs_sum`` add up F and |F| (what the trainer reports).
    """

    def __init__(self, env: gym.Env[np.ndarray, Any], *, gamma: float, scale: float = 1.0,
                 potential: Potential | None = None) -> None:  # fmt: skip
        super().__init__(env)
        if not 0.0 < gamma <= 1.0:
            raise ValueError(f"gamma {gamma} must be in (0, 1]: use PPO's gamma")
        if not np.isfinite(scale) or scale < 0:
            raise ValueError(f"scale {scale} must be a finite number >= 0")
        self.gamma = gamma
        self.scale = scale
        self.potential: Potential | None = None
        self._pending: Potential | None = potential
        self._phi = 0.0
        self.shaped_steps: dict[str, int] = {}
        self.shaping_sum = 0.0
        self.shaping_abs_sum = 0.0

    def set_potential(self, potential: Potential | None) -> None:
        """Use `potential` from the next episode on (None turns shaping off then)."""
        self._pending = potential

    @property
    def pending_version(self) -> str | None:
        return None if self._pending is None else self._pending.version

    def _phi_of(self, observation: np.ndarray) -> float:
        assert self.potential is not None
        value = self.scale * float(self.potential(np.asarray(observation)[None, :])[0])
        # A non-finite potential would poison the learner's batch: pay nothing instead.
        return value if np.isfinite(value) else 0.0

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self.potential = self._pending
        self._phi = self._phi_of(observation) if self.potential is not None else 0.0
        return observation, info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        if self.potential is None:
            return observation, reward, terminated, truncated, info
        phi_next = 0.0 if terminated else self._phi_of(observation)
        shaping = self.gamma * phi_next - self._phi
        self._phi = phi_next
        components = dict(info.get("reward_components", {}))
        components[SHAPING_COMPONENT] = shaping
        info["reward_components"] = components
        info["reward_model_version"] = self.potential.version
        version = self.potential.version
        self.shaped_steps[version] = self.shaped_steps.get(version, 0) + 1
        self.shaping_sum += shaping
        self.shaping_abs_sum += abs(shaping)
        return observation, float(reward) + shaping, terminated, truncated, info
