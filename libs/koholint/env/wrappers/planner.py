"""Hybrid control: the learned policy plays until the switch fires, then the planner does.

``PlannerControlWrapper`` watches every step (title screen, dialog and puzzle predicates,
with the switch's hysteresis). When the planner takes over, it decides and executes macros on the
env's own emulator (the backend decides in-process, or over HTTP with ``PlannerClient``)
until the game leaves title/dialog/puzzle or the budget ends, and the policy sees one aggregated
transition: the step's reward plus the reward of everything the macros did.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from koholint.env.zelda import ZeldaEnv
from koholint.game.ram import OPENING_GAMEPLAY_TYPES
from koholint.planning.autopilot import AutopilotReport, Budget, run_autopilot
from koholint.planning.backends import Backend
from koholint.planning.memory import SessionMemory
from koholint.planning.switch import PolicySwitch, classify
from koholint.planning.view import dialog_open, puzzle_unsolved, room_tiles
from koholint.schemas.positions import MAX_TAKEOVER_DECISIONS


class PlannerControlWrapper(gym.Wrapper[np.ndarray, Any, np.ndarray, Any]):
    def __init__(
        self,
        env: gym.Env[np.ndarray, Any],
        backend: Backend,
        *,
        enter_after: int = 2,
        leave_after: int = 2,
        budget: Budget | None = None,
    ) -> None:
        super().__init__(env)
        if not isinstance(env.unwrapped, ZeldaEnv):
            raise TypeError("PlannerControlWrapper wraps koholint/Zelda-v1 (ZeldaEnv)")
        self.backend = backend
        self.switch = PolicySwitch(enter_after, leave_after)
        self.leave_after = leave_after
        self.budget = budget or Budget(max_macros=32, max_frames=6000)
        self.memory = SessionMemory()
        self.takeovers = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        self.switch.reset()
        self.memory = SessionMemory()
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated or self._observe() == "policy":
            return observation, reward, terminated, truncated, info
        zelda: ZeldaEnv = self.env.unwrapped  # type: ignore[assignment]
        report = run_autopilot(
            zelda.gameboy, self.backend, self.memory, budget=self.budget,
            leave_after=self.leave_after, seed=self.takeovers,
        )  # fmt: skip
        self.takeovers += 1
        self.switch.reset()  # control is back with the policy
        observation, extra, terminated, truncated, info = zelda.absorb()
        info["planner"] = {
            "stopped": report.stopped, "macros": report.macros, "frames": report.frames,
            "started_in": report.started_in, "decisions": decision_records(report),
        }  # fmt: skip
        return observation, float(reward) + float(extra), terminated, truncated, info

    def _observe(self) -> str:
        zelda: ZeldaEnv = self.env.unwrapped  # type: ignore[assignment]
        raw = zelda.raw_state
        if raw.gameplay_type in OPENING_GAMEPLAY_TYPES:
            return self.switch.observe(classify(False, False, title=True))
        dialog = dialog_open(raw.dialog)
        puzzle = not dialog and puzzle_unsolved(room_tiles(zelda.gameboy.memory), raw.room_status)
        return self.switch.observe(classify(dialog, puzzle))


def decision_records(report: AutopilotReport) -> list[dict[str, Any]]:
    """The takeover's last decisions as plain data (PlannerDecision), for whoever watches."""
    return [
        {
            "mode": step.decision.mode,
            "backend": step.decision.backend[:64],
            "macro": step.decision.macro.kind if step.decision.macro else None,
            "reason": step.decision.reason[:500],
            "ok": step.result.ok if step.result else None,
            "result": step.result.reason[:300] if step.result else None,
            "frames": step.result.frames if step.result else 0,
        }  # fmt: skip
        for step in report.steps[-MAX_TAKEOVER_DECISIONS:]
    ]
