"""The judges' reward model R_phi in the reward, two ways: a potential or an intrinsic bonus.

``ShapingWrapper`` (mode ``potential``) adds F = gamma * Phi(s') - Phi(s). Potential-based
shaping (Ng, Harada and Russell, 1999) never changes which policy is optimal: over an episode
the shaping terms telescope to ``gamma^T * Phi(s_T) - Phi(s_0)``. That holds only if Phi is 0
at terminal states (no value is bootstrapped past them) and is *not* zeroed at truncation (the
value bootstraps there, as if the episode went on), and with PPO's gamma. It adds no drive
toward states the agent has not seen: what it pays over an episode depends on where the
episode ends, not on the way.

``BonusWrapper`` (mode ``bonus``) pays R_phi as an intrinsic reward, as Motif (Klissarov et
al. 2023) and ONI (Zheng et al. 2024) do: on arriving in s',

    bonus = coefficient * r(s') * 1[r(s') > threshold] / N_ep(event(s'))^3

with r = R_phi standardised over the reward model's data set, the threshold its median there
(in the same units), and N_ep the times the state's event was seen in this episode, this
step included (the counts start again at each episode). The event (``event_key``) is the
room plus what Link holds (sword, small keys, instrument): the first arrival in a room with
a new item is paid in full, the second an eighth, the third a 27th. A bonus is never
negative (r in (threshold, 0] pays nothing).

Both take a new model at the next reset, never within an episode, and count the steps each
version touched and the sums of what they added (what the trainer reports).

``ProgressLevel`` is the potential a person writes with what the rules judges know: the
progress level read from RAM. With it, ``ShapingWrapper`` is the baseline the loop's R_phi
is compared with on the same knowledge.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Protocol, SupportsFloat

import gymnasium as gym
import numpy as np

from koholint.env.encoding import SLOT_INDEX
from koholint.env.zelda import ZeldaEnv, progress_level

SHAPING_COMPONENT = "shaping"
BONUS_COMPONENT = "bonus"
BONUS_COUNT_EXPONENT = 3
"""N_ep(event) is cubed, as in Motif's count-based decay"""
_HELD_SLOTS = (SLOT_INDEX["has_sword"], SLOT_INDEX["keys"], SLOT_INDEX["has_instrument"])


class Potential(Protocol):
    """R_phi standardised (mean 0, std 1 over its training data), for a batch of observations;
    `version` names it in the ledger, `threshold` is its data set's median in the same units
    (the reward model's is ``koholint.reward.model.RewardModelPotential``)."""

    version: str
    threshold: float

    def __call__(self, observations: np.ndarray) -> np.ndarray: ...


class ProgressLevel:
    """The hand-written potential: ``progress_level`` of the env's state now (items held,
    puzzles solved, keys, doors opened, the instrument), what the rules judges answer from.
    ``ShapingWrapper`` calls a potential with the observation the env just returned, which is
    of that state, so the level is read from the game's RAM rather than from the vector."""

    version = "progress-level"
    threshold = 0.0

    def __init__(self, env: gym.Env[np.ndarray, Any]) -> None:
        game = env.unwrapped
        if not isinstance(game, ZeldaEnv):
            raise TypeError(f"{type(game).__name__} has no game RAM to read the progress "
                            "level from: wrap a koholint/Zelda-v1 env")  # fmt: skip
        self.game: ZeldaEnv = game

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        level = progress_level(self.game.raw_state, self.game.gameboy.memory)
        return np.full(len(observations), float(level))


EventKey = Callable[[np.ndarray, dict[str, Any]], Hashable]


def event_key(observation: np.ndarray, info: dict[str, Any]) -> Hashable:
    """The bonus's event: the room (``info['room_key']``: indoor, map, room) and what Link
    holds, read from the observation (sword, small keys, instrument)."""
    held = tuple(round(float(observation[slot]), 3) for slot in _HELD_SLOTS)
    return (info.get("room_key"), held)


def bonus_rewards(standardised: np.ndarray, threshold: float, counts: np.ndarray,
                  coefficient: float) -> np.ndarray:  # fmt: skip
    """coefficient * r * 1[r > threshold] / counts^3, never negative, 0 where r is not finite."""
    values = np.asarray(standardised, np.float64)
    paid = (values > threshold) & (values > 0) & np.isfinite(values)
    counts = np.maximum(np.asarray(counts, np.float64), 1.0)
    return np.where(paid, coefficient * values / counts**BONUS_COUNT_EXPONENT, 0.0)


class RewardModelWrapper(gym.Wrapper[np.ndarray, Any, np.ndarray, Any]):
    """What both uses of R_phi share: a model staged for the next episode, and the counts the
    trainer reports (``shaped_steps`` per version, ``shaping_sum`` and ``shaping_abs_sum`` of
    the reward added). Off (reward unchanged) until a model is given."""

    component = SHAPING_COMPONENT

    def __init__(self, env: gym.Env[np.ndarray, Any], potential: Potential | None = None) -> None:
        super().__init__(env)
        self.potential: Potential | None = None
        self._pending: Potential | None = potential
        self.shaped_steps: dict[str, int] = {}
        self.shaping_sum = 0.0
        self.shaping_abs_sum = 0.0

    def set_potential(self, potential: Potential | None) -> None:
        """Use `potential` from the next episode on (None turns it off then)."""
        self._pending = potential

    @property
    def pending_version(self) -> str | None:
        return None if self._pending is None else self._pending.version

    def _start_episode(self) -> None:
        self.potential = self._pending

    def _record(self, added: float, info: dict[str, Any]) -> None:
        assert self.potential is not None
        components = dict(info.get("reward_components", {}))
        components[self.component] = added
        info["reward_components"] = components
        version = info["reward_model_version"] = self.potential.version
        self.shaped_steps[version] = self.shaped_steps.get(version, 0) + 1
        self.shaping_sum += added
        self.shaping_abs_sum += abs(added)


class ShapingWrapper(RewardModelWrapper):
    """Adds F = gamma * Phi(s') - Phi(s) with Phi = scale * potential(observation), Phi = 0 at
    terminal states. ``info['reward_components']['shaping']`` carries F and
    ``info['reward_model_version']`` the version that shaped the step."""

    def __init__(self, env: gym.Env[np.ndarray, Any], *, gamma: float, scale: float = 1.0,
                 potential: Potential | None = None) -> None:  # fmt: skip
        super().__init__(env, potential)
        if not 0.0 < gamma <= 1.0:
            raise ValueError(f"gamma {gamma} must be in (0, 1]: use PPO's gamma")
        if not np.isfinite(scale) or scale < 0:
            raise ValueError(f"scale {scale} must be a finite number >= 0")
        self.gamma = gamma
        self.scale = scale
        self._phi = 0.0

    def _phi_of(self, observation: np.ndarray) -> float:
        assert self.potential is not None
        value = self.scale * float(self.potential(np.asarray(observation)[None, :])[0])
        # A non-finite potential would poison the learner's batch: pay nothing instead.
        return value if np.isfinite(value) else 0.0

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self._start_episode()
        self._phi = self._phi_of(observation) if self.potential is not None else 0.0
        return observation, info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        if self.potential is None:
            return observation, reward, terminated, truncated, info
        phi_next = 0.0 if terminated else self._phi_of(observation)
        shaping = self.gamma * phi_next - self._phi
        self._phi = phi_next
        self._record(shaping, info)
        return observation, float(reward) + shaping, terminated, truncated, info


class BonusWrapper(RewardModelWrapper):
    """Adds the Motif/ONI bonus (module docstring) on arriving in each state;
    ``info['reward_components']['bonus']`` carries it. The reset state's event counts as
    seen once (coming back to the start is not new)."""

    component = BONUS_COMPONENT

    def __init__(self, env: gym.Env[np.ndarray, Any], *, coefficient: float,
                 potential: Potential | None = None, event: EventKey = event_key) -> None:  # fmt: skip
        super().__init__(env, potential)
        if not np.isfinite(coefficient) or coefficient < 0:
            raise ValueError(f"coefficient {coefficient} must be a finite number >= 0")
        self.coefficient = coefficient
        self.event = event
        self.counts: dict[Hashable, int] = {}
        """how often each event was seen in this episode"""

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self._start_episode()
        self.counts = {self.event(observation, info): 1}
        return observation, info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        if self.potential is None:
            return observation, reward, terminated, truncated, info
        key = self.event(observation, info)
        count = self.counts[key] = self.counts.get(key, 0) + 1
        value = self.potential(np.asarray(observation)[None, :])
        bonus = float(bonus_rewards(value, self.potential.threshold, np.array([count]),
                                    self.coefficient)[0])  # fmt: skip
        self._record(bonus, info)
        return observation, float(reward) + bonus, terminated, truncated, info
