"""Several environments stepped in one loop, for trainers that sample many envs per process.

``EpisodeEndVectorEnv`` behaves like Gymnasium's ``SyncVectorEnv`` in next-step autoreset
mode (the step after an episode ends resets that env, ignores its action and returns the
first observation with reward 0), with two differences that make it cheaper per step:

- observations are written into one preallocated buffer and returned as one copy;
- ``infos`` carry only what the trainer reads: the last info of each episode that ended on
  this step (in Gymnasium's vector format: ``infos[key][i]`` and the mask ``infos["_" + key]``).
  Per-step infos (reward components, cells, ...) stay inside the wrappers that use them;
  converting them to arrays every step cost more than the sampling code itself.

>>> from koholint.env.zelda import ZeldaEnv
>>> vector = EpisodeEndVectorEnv([lambda: ZeldaEnv(max_episode_steps=2)] * 2)
>>> observations, infos = vector.reset(seed=0)
>>> observations.shape, infos
((2, 128), {})
>>> _ = vector.step(np.zeros(2, dtype=np.int64))
>>> *_, truncations, infos = vector.step(np.zeros(2, dtype=np.int64))
>>> truncations.tolist(), sorted(infos)[:2]
([True, True], ['_action', '_cell'])
>>> vector.close()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space


class EpisodeEndVectorEnv(VectorEnv[np.ndarray, np.ndarray, np.ndarray]):
    def __init__(self, env_fns: Sequence[Callable[[], gym.Env[np.ndarray, Any]]]) -> None:
        self.envs: list[gym.Env[np.ndarray, Any]] = []  # close() works even if this fails
        if not env_fns:
            raise ValueError("EpisodeEndVectorEnv needs at least one env factory")
        self.envs = [make() for make in env_fns]
        self.num_envs = len(self.envs)
        first = self.envs[0]
        for env in self.envs[1:]:
            if env.observation_space != first.observation_space:
                raise ValueError("every env must have the same observation space")
            if env.action_space != first.action_space:
                raise ValueError("every env must have the same action space")
        if not isinstance(first.observation_space, gym.spaces.Box):
            raise TypeError(
                f"EpisodeEndVectorEnv needs Box observations, not {first.observation_space}"
            )
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(first.observation_space, self.num_envs)
        self.action_space = batch_space(first.action_space, self.num_envs)
        self.metadata = {**first.metadata, "autoreset_mode": AutoresetMode.NEXT_STEP}
        self.render_mode = first.render_mode
        box = first.observation_space
        self._observations: np.ndarray = np.zeros((self.num_envs, *box.shape), dtype=box.dtype)
        self._rewards = np.zeros(self.num_envs, dtype=np.float64)
        self._terminations = np.zeros(self.num_envs, dtype=np.bool_)
        self._truncations = np.zeros(self.num_envs, dtype=np.bool_)
        self._needs_reset = np.zeros(self.num_envs, dtype=np.bool_)

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every env; an int seed gives env i the seed ``seed + i`` (as SyncVectorEnv)."""
        seeds = _seeds(seed, self.num_envs)
        for index, env in enumerate(self.envs):
            self._observations[index], _ = env.reset(seed=seeds[index], options=options)
        self._needs_reset[:] = False
        return self._observations.copy(), {}

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        infos: dict[str, Any] = {}
        for index, env in enumerate(self.envs):
            if self._needs_reset[index]:
                self._observations[index], _ = env.reset()
                self._rewards[index] = 0.0
                self._terminations[index] = self._truncations[index] = False
                continue
            observation, reward, terminated, truncated, info = env.step(actions[index])
            self._observations[index] = observation
            self._rewards[index] = reward
            self._terminations[index], self._truncations[index] = terminated, truncated
            if terminated or truncated:
                infos = self._add_info(infos, info, index)
        self._needs_reset = self._terminations | self._truncations
        return (
            self._observations.copy(),
            self._rewards.copy(),
            self._terminations.copy(),
            self._truncations.copy(),
            infos,
        )

    def render(self) -> tuple[Any, ...] | None:
        return tuple(env.render() for env in self.envs)

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()


Wrap = Callable[[gym.Env[np.ndarray, Any], int], gym.Env[np.ndarray, Any]]
"""Wraps env number `index` of a vector env (a trainer's exploration wrappers, say)."""
WrapVector = Callable[
    [VectorEnv[np.ndarray, np.ndarray, np.ndarray]], VectorEnv[np.ndarray, np.ndarray, np.ndarray]
]
"""Wraps the whole vector env (``koholint.env.wrappers.curiosity.CuriosityVectorWrapper``, say)."""


def make_vector_env(
    num_envs: int = 1,
    *,
    wrap: Wrap | None = None,
    wrap_vector: WrapVector | None = None,
    vector: str = "episode-end",
    **settings: Any,
) -> VectorEnv[np.ndarray, np.ndarray, np.ndarray]:
    """The ``vector_entry_point`` of ``koholint/Zelda-v1``: ``num_envs`` ZeldaEnv(**settings),
    each passed through ``wrap(env, index)`` when given, in an ``EpisodeEndVectorEnv``
    (``vector="sync"``: Gymnasium's SyncVectorEnv, which keeps every step's infos), the
    whole passed through ``wrap_vector(vector_env)`` when given (work done once for all
    envs, such as batched curiosity).

    >>> import gymnasium as gym, koholint
    >>> envs = gym.make_vec(koholint.ENV_ID, 2, vectorization_mode="vector_entry_point")
    >>> type(envs).__name__, envs.num_envs
    ('EpisodeEndVectorEnv', 2)
    >>> envs.close()
    """
    from koholint.env.zelda import ZeldaEnv

    def make(index: int) -> Callable[[], gym.Env[np.ndarray, Any]]:
        def build() -> gym.Env[np.ndarray, Any]:
            env: gym.Env[np.ndarray, Any] = ZeldaEnv(**settings)
            return wrap(env, index) if wrap is not None else env

        return build

    if vector not in ("episode-end", "sync"):
        raise ValueError(f"vector={vector!r}: use 'episode-end' or 'sync'")
    factories = [make(index) for index in range(num_envs)]
    envs: VectorEnv[np.ndarray, np.ndarray, np.ndarray] = (
        gym.vector.SyncVectorEnv(factories) if vector == "sync" else EpisodeEndVectorEnv(factories)
    )
    return wrap_vector(envs) if wrap_vector is not None else envs


def _seeds(seed: int | Sequence[int | None] | None, count: int) -> list[int | None]:
    if seed is None:
        return [None] * count
    if isinstance(seed, int):
        return [seed + index for index in range(count)]
    seeds = list(seed)
    if len(seeds) != count:
        raise ValueError(
            f"got {len(seeds)} seeds for {count} envs: pass one int or one seed per env"
        )
    return seeds
