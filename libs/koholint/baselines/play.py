"""Run named policies in ``koholint/Zelda-v1`` and report what each episode reached."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from koholint.baselines.episode import PlayedEpisode
from koholint.baselines.policies import WALKTHROUGH_ENV, make_policy
from koholint.baselines.trained import (
    PlayReport,
    PlaySettings,
    load_policy,
    play_policy,
)
from koholint.env.zelda import ZeldaEnv, progress_level
from koholint.game.rom import default_rom, read_rom
from koholint.trajectory.jsonl import TrajectoryWriter

_TRAINED_ROW = "{:>6}{:>5}{:>7}{:>7}{:>7}{:>7}{:>9}"


def run_episode(
    policy_name: str,
    *,
    seed: int,
    start: str | None = "start_of_play",
    max_steps: int = 25_000,
    rom: str | None = None,
    trajectory: Path | None = None,
) -> PlayedEpisode:
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
        result = PlayedEpisode(
            policy=policy_name, start=str(settings["start_state"] or "power_on"), seed=seed,
            won=terminated, steps=steps, level=progress_level(env.raw_state),
            rooms=info["rooms"], cells=info["cells"], episode_return=total, frames=info["frame"],
            kills=state["kills"], deaths=state["deaths"], milestones=dict(info["milestones"]),
            seconds=time.perf_counter() - started,
            trajectory=None if trajectory is None else str(trajectory),
        )  # fmt: skip
        if writer:
            writer.close(result.summary())
        return result
    finally:
        env.close()


def world_line(trained_sha256: str | None) -> str:
    """Which world the episodes play, and whether the policy trained on another."""
    world = read_rom(default_rom())
    line = f"world {world.title} {world.sha256[:12]} ({world.path})"
    if trained_sha256 and trained_sha256 != world.sha256:
        line += f"; the policy trained on another world ({trained_sha256[:12]})"
    return line


def play_checkpoint(
    path: Path,
    *,
    start: str = "start_of_play",
    episodes: int = 20,
    seed: int = 0,
    sticky: float | None = None,
    planner: str | None = None,
    max_steps: int | None = None,
    greedy: bool = False,
    export: Path | None = None,
    workers: int = 1,
    out: Any = print,
) -> PlayReport:
    """A trained policy (``koholint.baselines.trained``) in the env settings it trained with
    (or the overrides): one line per episode, then the win rate with its 95% interval."""
    policy = load_policy(path)
    settings = PlaySettings(start=start, episodes=episodes, seed=seed, sticky=sticky,
                            planner=planner, max_steps=max_steps, greedy=greedy, export=export,
                            workers=workers)  # fmt: skip
    source = policy.source
    out(f"policy {policy.path} (run {source.get('run') or '?'}, {source.get('checkpoint') or '?'}, "
        f"{source.get('env_steps') or '?'} env steps)")  # fmt: skip
    out(world_line(source.get("world_sha256")))

    def header(report: PlayReport) -> None:
        out(f"start {report.start}  sticky {report.sticky}  planner {report.planner}  "
            f"frame skip {report.frame_skip}  episodes of {report.max_steps} steps  "
            f"actions {'greedy' if report.greedy else 'sampled'}")  # fmt: skip
        out(_TRAINED_ROW.format("seed", "won", "steps", "level", "rooms", "cells", "return"))

    def row(episode: PlayedEpisode) -> None:
        out(_TRAINED_ROW.format(episode.seed, "yes" if episode.won else "no", episode.steps,
                                episode.level, episode.rooms, episode.cells,
                                f"{episode.episode_return:.2f}"))  # fmt: skip

    report = play_policy(policy, settings, row, on_start=header)
    low, high = report.interval()
    out(f"win rate {report.win_rate:.2f} ({report.wins}/{len(report.episodes)} episodes won), "
        f"95% interval {low:.2f}-{high:.2f} (Wilson)")  # fmt: skip
    if export is not None:
        out(f"episodes as GIFs and play.json in {export}/")
    return report
