"""Phase 1's winning trajectory: the env it replays in, and its JSONL file with RAM hashes.

The actions (one byte each) replay in the env phase 1 explored (``exploration_env``: sticky
actions off, hybrid control with the rules planner); ``write_trajectory`` records them with
``koholint.trajectory.jsonl`` (a RAM hash per step, and the planner in the header), so
``koholint replay FILE`` checks it, and reports whether it wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from koholint.env.zelda import ZeldaEnv, milestones
from koholint.explore.curriculum import DemoState, demo_states
from koholint.explore.runner import exploration_env
from koholint.trajectory.gif import write_gif
from koholint.trajectory.jsonl import TrajectoryWriter


def _room_for(actions: bytes) -> int:
    """An episode length the trajectory never reaches: each planner takeover counts as a
    second env step (``ZeldaEnv.absorb``), so there can be up to two per action."""
    return 2 * len(actions) + 2


@dataclass(frozen=True)
class TrajectoryCheck:
    steps: int
    won: bool
    """the last action reaches the credits (and none before it does)"""
    milestones: dict[str, bool]


def write_trajectory(
    actions: bytes,
    path: Path,
    *,
    start_state: str | None = "start_of_play",
    frame_skip: int = 4,
    planner: bool = True,
    policy: str = "go-explore phase 1",
) -> TrajectoryCheck:
    """Replay `actions` from the start, write the JSONL trajectory, and say whether it wins."""
    env = exploration_env(
        start_state=start_state, frame_skip=frame_skip, planner=planner,
        max_episode_steps=_room_for(actions),
    )  # fmt: skip
    zelda: ZeldaEnv = env.unwrapped  # type: ignore[assignment]
    try:
        env.reset(seed=0)
        writer = TrajectoryWriter(
            Path(path), zelda, seed=0, policy=policy, planner="rules" if planner else None
        )
        terminated_at, episode_return = None, 0.0
        for t, action in enumerate(actions, start=1):
            _, reward, terminated, _, info = env.step(action)
            episode_return += float(reward)
            writer.step(t, action, float(reward), info)
            if terminated:
                terminated_at = t
                break
        won = terminated_at == len(actions)
        reached = milestones(zelda.gameboy.memory, zelda.raw_state)
        writer.close({"steps": terminated_at or len(actions), "won": won,
                      "return": round(episode_return, 6), "milestones": reached})  # fmt: skip
        return TrajectoryCheck(len(actions), won, reached)
    finally:
        env.close()


def winning_demo(
    actions: bytes,
    *,
    every: int = 8,
    start_state: str | None = "start_of_play",
    frame_skip: int = 4,
    planner: bool = True,
    heal: bool = False,
) -> list[DemoState]:
    """States along a phase-1 trajectory, every `every` steps, replayed in the env it was
    found in: the backward curriculum's starts (``koholint.explore.curriculum``); `heal`:
    with Link's hearts full."""
    env = exploration_env(
        start_state=start_state, frame_skip=frame_skip, planner=planner,
        max_episode_steps=_room_for(actions),
    )  # fmt: skip
    try:
        return demo_states(actions, env, every=every, heal=heal)
    finally:
        env.close()


def trajectory_gif(
    actions: bytes, path: Path, *, every: int = 3, start_state: str | None = "start_of_play"
) -> int:
    """Replay `actions` with rendering and write every `every`-th screen as an animated GIF
    (played at twice the game's speed). Returns the number of frames written."""
    env = exploration_env(start_state=start_state, max_episode_steps=_room_for(actions))
    zelda: ZeldaEnv = env.unwrapped  # type: ignore[assignment]
    try:
        env.reset(seed=0)
        screens = []
        for index, action in enumerate(actions):
            env.step(action)
            if index % every == 0 or index == len(actions) - 1:
                screens.append(zelda.gameboy.render_now())
    finally:
        env.close()
    return write_gif(screens, Path(path), every=every, frame_skip=zelda.config.frame_skip)
