"""Run named policies in ``koholint/Zelda-v1`` and report what each episode reached."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from koholint.baselines.policies import WALKTHROUGH_ENV, make_policy
from koholint.baselines.trajectory import TrajectoryWriter
from koholint.env.zelda import ZeldaEnv


@dataclass(frozen=True)
class EpisodeResult:
    policy: str
    start: str
    seed: int
    rooms: int
    cells: int
    episode_return: float
    steps: int
    frames: int
    won: bool
    kills: int
    deaths: int
    seconds: float
    trajectory: Path | None

    def summary(self) -> dict[str, Any]:
        return {
            "policy": self.policy, "start": self.start, "seed": self.seed, "rooms": self.rooms,
            "cells": self.cells, "return": round(self.episode_return, 4), "steps": self.steps,
            "frames": self.frames, "won": self.won, "kills": self.kills, "deaths": self.deaths,
        }  # fmt: skip


def run_episode(
    policy_name: str,
    *,
    seed: int,
    start: str | None = "start_of_play",
    max_steps: int = 25_000,
    rom: str | None = None,
    trajectory: Path | None = None,
) -> EpisodeResult:
    """One episode of a named policy; the walkthrough always starts at power-on, one frame a step."""
    settings: dict[str, Any] = {"rom": rom, "start_state": start, "max_episode_steps": max_steps}
    if policy_name == "walkthrough":
        settings.update(WALKTHROUGH_ENV)
    policy = make_policy(policy_name)
    env = ZeldaEnv(settings)
    started = time.perf_counter()
    try:
        observation, info = env.reset(seed=seed)
        policy.reset(env, seed)
        writer = (
            TrajectoryWriter(trajectory, env, seed=seed, policy=policy_name) if trajectory else None
        )
        total, steps, terminated, truncated = 0.0, 0, False, False
        while not (terminated or truncated):
            action = policy.act(observation, info)
            observation, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            steps += 1
            if writer:
                writer.step(steps, action, float(reward), info)
        state = info["state"]
        result = EpisodeResult(
            policy=policy_name, start=str(settings["start_state"] or "power_on"), seed=seed,
            rooms=info["rooms"], cells=info["cells"], episode_return=total, steps=steps,
            frames=info["frame"], won=terminated, kills=state["kills"], deaths=state["deaths"],
            seconds=time.perf_counter() - started, trajectory=trajectory,
        )  # fmt: skip
        if writer:
            writer.close(result.summary())
        return result
    finally:
        env.close()
