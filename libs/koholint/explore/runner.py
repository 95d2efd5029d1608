"""One exploration run: restore a cell's state, act at random with repeats, report new cells.

This is the part that runs in the worker processes. A worker keeps one emulator; for each
run it restores the state, takes random actions (each action repeats the previous one with
``repeat_probability``, Go-Explore's exploration), and saves a state only for a cell that
is new or reached in fewer steps than the archive knew when the task was sent — saving
costs ~25 ms, a step ~0.35 ms. A run ends after ``run_steps`` steps, when Link passes out
(Go-Explore ends on a life lost: the respawn is a detour), or at the credits.

With ``planner`` on, the env is wrapped in hybrid control (``PlannerControlWrapper`` with the
deterministic rules backend): where the policy switch fires — a dialog, the unsolved block
puzzle — the planner's macros play inside the step, as they will for the trained policy.
The switch keeps a little state (its hysteresis), so states are saved only where it is at
rest (neither dialog nor puzzle): a restored state then plays on exactly as the trajectory
replayed from the start does.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import gymnasium as gym
import numpy as np

from koholint.env.encoding import encoder
from koholint.env.factory import make_env
from koholint.env.zelda import Action, ZeldaEnv, progress_level
from koholint.explore.archive import Cell
from koholint.explore.cells import cell_of, reached_milestones, restartable, won
from koholint.explore.levels import LevelFunction
from koholint.game.ram import MotionState
from koholint.game.state import RawState
from koholint.planning.view import dialog_open, puzzle_unsolved, room_tiles

# START and SELECT do nothing in play (SELECT swaps the item slots): random runs leave them
# out, except from power-on, where START leaves the title screen.
PLAY_ACTIONS = bytes([Action.NOOP, Action.UP, Action.DOWN, Action.LEFT, Action.RIGHT,
                      Action.A, Action.B])  # fmt: skip
ALL_ACTIONS = bytes(range(len(Action)))
_PASS_OUT = int(MotionState.PASS_OUT)


@dataclass(frozen=True)
class RunTask:
    """Where a run starts: the cell's state and the steps the trajectory to it took."""

    state: bytes
    steps: int
    seed: int
    level: int = 0
    """the cell's level: a ratcheting level (R_phi's) never falls below it along the run"""


@dataclass(frozen=True)
class Found:
    """A cell a run reached first or faster: `length` actions of the run lead to it."""

    cell: Cell
    level: int
    length: int
    state: bytes
    score: float = 0.0
    observation: bytes = b""
    """with ``record_states`` (an encoding): the state's observation vector (float32)"""
    facts: dict[str, Any] | None = None
    """with ``record_states``: the structured state (``ZeldaEnv.structured_state``)"""


@dataclass
class RunReport:
    actions: bytes
    found: list[Found] = field(default_factory=list)
    win: int | None = None
    """actions of the run up to the credits, when it got there"""
    milestones: dict[str, int] = field(default_factory=dict)
    """milestone -> actions of the run when a saved cell first showed it"""


def exploration_env(
    *,
    frame_skip: int = 4,
    max_episode_steps: int = 4096,
    planner: bool = True,
    start_state: str | bytes | None = None,
) -> gym.Env[np.ndarray, Any]:
    """The env phase 1 steps (and its trajectories replay in): no sticky actions, no latch,
    the cartridge's seed byte 0, and hybrid control with the rules planner when `planner`."""
    return make_env(
        start_state=start_state, frame_skip=frame_skip, sticky_action_probability=0.0,
        latch_steps=1, cartridge_seed=0, info_state=False, reward_mode="sparse",
        max_episode_steps=max_episode_steps, planner="rules" if planner else None,
    )  # fmt: skip


def switch_at_rest(memory: object, raw: RawState) -> bool:
    """The policy switch would read "policy" here: no dialog, no unsolved puzzle."""
    return not dialog_open(raw.dialog) and not puzzle_unsolved(room_tiles(memory), raw.room_status)


class Runner:
    """An emulator that runs exploration tasks (one per worker process)."""

    def __init__(
        self,
        *,
        frame_skip: int,
        tile_bin: int,
        run_steps: int,
        repeat_probability: float,
        planner: bool = True,
        actions: bytes = PLAY_ACTIONS,
        prefer_health: bool = False,
        level_of: LevelFunction = progress_level,
        ratchet: bool = False,
        record_states: str | None = None,
    ) -> None:
        self.prefer_health = prefer_health
        self.level_of, self.ratchet = level_of, ratchet
        self.encode = None if record_states is None else encoder(record_states)
        self.actions = np.frombuffer(actions, np.uint8)
        self.env = exploration_env(
            frame_skip=frame_skip, max_episode_steps=2 * run_steps + 2, planner=planner
        )
        self.zelda: ZeldaEnv = self.env.unwrapped  # type: ignore[assignment]
        self.planner = planner
        self.tile_bin = tile_bin
        self.run_steps = run_steps
        self.repeat_probability = repeat_probability

    def run(self, task: RunTask, known: dict[Cell, tuple[float, int]]) -> RunReport:
        """Explore from `task`; `known` (cell -> (score, steps) of the kept state, see
        Archive.best_known) is updated with what is saved."""
        env, zelda, rng = self.env, self.zelda, np.random.default_rng(task.seed)
        env.reset(options={"start_state": task.state})
        draws = rng.random(self.run_steps)
        choices = self.actions[rng.integers(0, len(self.actions), self.run_steps)]
        actions = bytearray()
        report = RunReport(actions=b"")
        # The room flags persist: what the start state had reached is no news.
        seen_milestones = reached_milestones(zelda.gameboy.memory, zelda.raw_state)
        action = int(choices[0])
        reached_level = task.level
        for index in range(self.run_steps):
            if draws[index] >= self.repeat_probability:
                action = int(choices[index])
            env.step(action)
            actions.append(action)
            raw = zelda.raw_state
            if won(raw):
                report.win = len(actions)
                break
            if raw.motion == _PASS_OUT:
                break
            if not restartable(raw):
                continue
            cell, level = cell_of(raw, self.tile_bin, self.level_of)
            if self.ratchet and level < reached_level:
                cell, level = (*cell[:3], reached_level, *cell[4:]), reached_level
            reached_level = max(reached_level, level)
            steps = task.steps + len(actions)
            score = float(raw.health >> 3) if self.prefer_health else 0.0  # whole hearts
            best = known.get(cell)
            if best is not None and (score, -steps) <= (best[0], -best[1]):
                continue
            if self.planner and not switch_at_rest(zelda.gameboy.memory, raw):
                continue
            known[cell] = (score, steps)
            state = zelda.gameboy.save_state()
            found = Found(cell, level, len(actions), state, score)
            if self.encode is not None:  # the judges compare the cells (orchestrator.judged)
                found = replace(found, observation=self.encode(raw).tobytes(),
                                facts=zelda.structured_state())  # fmt: skip
            report.found.append(found)
            for name in reached_milestones(zelda.gameboy.memory, raw) - seen_milestones:
                report.milestones.setdefault(name, len(actions))
        if report.win is not None:
            report.milestones.setdefault("instrument", report.win)
        report.actions = bytes(actions)
        return report

    def close(self) -> None:
        self.env.close()
