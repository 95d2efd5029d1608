"""Wrappers of ``koholint/Zelda-v0``, one concern each: curiosity (RND) and Go-Explore restarts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, SupportsFloat

import gymnasium as gym
import numpy as np

from koholint.archive import Archive, CellRecord
from koholint.rnd import INTRINSIC_RATIO, IntrinsicBudget, Rnd, RndConfig


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


class ArchiveSource(Protocol):
    """Where an env sends the cells it found and gets frontier states from (local or shared)."""

    def merge(self, cells: list[tuple[CellRecord, bytes]]) -> None: ...

    def frontier_state(self, seed: int) -> bytes | None: ...


def _constant(state: bytes) -> Callable[[], bytes]:
    return lambda: state


class LocalArchiveSource:
    """An ArchiveSource over an Archive in this process."""

    def __init__(self, archive: Archive) -> None:
        self.archive = archive

    def merge(self, cells: list[tuple[CellRecord, bytes]]) -> None:
        for record, state in cells:
            self.archive.observe(record.cell, record.steps, record.episode_return, _constant(state))

    def frontier_state(self, seed: int) -> bytes | None:
        if not len(self.archive):
            return None
        return self.archive.start_state(np.random.default_rng(seed))


class GoExploreWrapper(gym.Wrapper[np.ndarray, Any, np.ndarray, Any]):
    """Records the best state per (room, tile bin) cell and, every `restart_every` episodes,
    starts the episode from a frontier cell instead of the configured start."""

    def __init__(
        self, env: gym.Env[np.ndarray, Any], source: ArchiveSource, *, restart_every: int = 4
    ) -> None:
        super().__init__(env)
        if restart_every < 1:
            raise ValueError(f"restart_every {restart_every} must be >= 1 (1 = every episode)")
        self.source = source
        self.restart_every = restart_every
        self._episodes = 0
        self._local = Archive()
        self._steps = 0
        self._return = 0.0
        self.restarted = False

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        self._flush()
        self._episodes += 1
        self.restarted = False
        options = dict(kwargs.pop("options", None) or {})
        if self._episodes % self.restart_every == 0 and "start_state" not in options:
            seed = int(self.np_random.integers(0, 2**31 - 1))
            state = self.source.frontier_state(seed)
            if state is not None:
                options["start_state"] = state
                self.restarted = True
        observation, info = self.env.reset(options=options, **kwargs)
        self._steps, self._return = 0, 0.0
        info["go_explore_restart"] = self.restarted
        return observation, info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        self._return += float(reward)
        game = self.env.unwrapped
        if not game.raw_state.transition:  # type: ignore[attr-defined]
            # A state saved mid-transition would restart in the next room, not this cell.
            self._local.observe(info["cell"], self._steps, self._return, game.gameboy.save_state)  # type: ignore[attr-defined]
        if terminated or truncated:
            self._flush()
        return observation, reward, terminated, truncated, info

    def _flush(self) -> None:
        """Send this episode's cells (with their states) to the source."""
        if not len(self._local):
            return
        cells = [(record, self._local.state(record)) for record in self._local.cells.values()]
        self.source.merge(cells)
        self._local = Archive()
