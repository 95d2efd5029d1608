"""Export: every N-th episode recorded as segments and handed to the export queue.

Each step's line carries the observation vector after the step (what the policy sees: the
env's ``observation`` encoding, which the segment names) next to the structured state
(export schema version 2)."""

from __future__ import annotations

import uuid
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from koholint.env.export import ExportQueue, Segment


class SegmentRecorder(gym.Wrapper[np.ndarray, Any, np.ndarray, Any]):
    """Records every `every`-th episode as segments of `segment_steps` steps (frames rendered
    only for those episodes) and hands them to the export queue."""

    def __init__(self, env: gym.Env[np.ndarray, Any], exporter: ExportQueue, *, run: str, every: int = 10,
                 segment_steps: int = 256, frames: bool = True) -> None:  # fmt: skip
        super().__init__(env)
        if every < 1 or segment_steps < 1:
            raise ValueError(f"every {every} and segment_steps {segment_steps} must be >= 1")
        self.exporter = exporter
        self.run = run
        self.every = every
        self.segment_steps = segment_steps
        self.frames = frames
        self._episodes = 0
        self._segment: Segment | None = None
        self._t = 0

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        self._finish()
        self._episodes += 1
        recording = self._episodes % self.every == 0
        game = self.env.unwrapped
        game.render_mode = "rgb_array" if recording and self.frames else None
        encoding = game.config.observation  # type: ignore[attr-defined]
        episode = f"{self._episodes:06d}-{uuid.uuid4().hex[:8]}"
        self._segment = Segment(self.run, episode, 0, encoding=encoding) if recording else None
        self._t = 0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._t += 1
        if self._segment is not None:
            self._record(self._segment, action, float(reward), observation, info)
            if terminated or truncated:
                self._finish()
        return observation, reward, terminated, truncated, info

    def _record(self, segment: Segment, action: Any, reward: float, observation: np.ndarray,
                info: dict[str, Any]) -> None:  # fmt: skip
        game = self.env.unwrapped
        state = info.get("state") or game.sync()  # type: ignore[attr-defined]
        # The observation after the step, exactly as the policy sees it (float32 -> JSON float
        # round-trips exactly): the reward model learns from the features the shaping applies to.
        segment.steps.append({"t": self._t, "action": int(action), "applied_action": info.get("action"),
                              "reward": reward, "reward_components": info.get("reward_components", {}),
                              "observation": np.asarray(observation, np.float32).tolist(),
                              "state": state})  # fmt: skip
        if self.frames:  # the RGBA screen, copied in one block; the queue's thread encodes it
            segment.frames.append(game.gameboy.screen_rgba())  # type: ignore[attr-defined]
        if len(segment.steps) >= self.segment_steps:
            self.exporter.offer(segment)
            self._segment = Segment(
                segment.run, segment.episode, segment.index + 1, encoding=segment.encoding
            )

    def _finish(self) -> None:
        if self._segment is not None and self._segment.steps:
            self.exporter.offer(self._segment)
        self._segment = None
        self.env.unwrapped.render_mode = None

    def close(self) -> None:
        self._finish()
        super().close()
