"""Robustification (Go-Explore phase 2): a backward curriculum over a winning trajectory,
and swarming to the newest milestone.

Backward curriculum (Salimans & Chen 2018, as Go-Explore robustified its trajectories):
episodes start from states of the winning trajectory near its end; when the share of
episodes from the current start that win passes `threshold` (over the last `window`
episodes from there), the start moves `move_by` steps earlier, until the policy wins from
the beginning. The move is made as soon as the wins alone reach ``threshold * window``: the
window's share can no longer fall below the threshold, so the decision is the one a full
window would give, without waiting for the episodes that cannot change it.

With `passes` > 1, once the start has reached the beginning and wins there, the curriculum
walks the route again from the end, with the policy it has now: a policy that walked the
route once wins from the beginning only now and then; walking it again with what it learned
is what makes it robust.

Swarming (the Pokémon Red agent's, and the closest Zelda project's "advancing checkpoint"):
when any env reaches a progress level higher than any before, its state becomes the swarm
state, and a share of episodes start there.

Both are shared by every env of a run through a source (``CurriculumSource``): in-process
``LocalCurriculum``, or an actor behind the same methods (the trainer's).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, SupportsFloat

import gymnasium as gym
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from koholint.env.zelda import ZeldaEnv, progress_level
from koholint.game.ram import GameplayType, MotionState, RamAddress
from koholint.schemas.fields import JsonFloat, JsonInt

MAX_DEMO_STATES = 100_000
_WORLD = int(GameplayType.WORLD)
_CREDITS = int(GameplayType.CREDITS)
_PASS_OUT = int(MotionState.PASS_OUT)
_HEALTH, _MAX_HEARTS = int(RamAddress.HEALTH), int(RamAddress.MAX_HEARTS)
_HEALTH_PER_HEART = 8


@dataclass(frozen=True)
class DemoState:
    """A state of the winning trajectory: `step` actions from the start lead to it."""

    step: int
    state: bytes


@dataclass(frozen=True)
class Start:
    """Where an episode starts: a demo state (`step` >= 0), a swarm state (`step` = -1) or
    the env's own start (None state); `budget` is the steps it may take."""

    state: bytes | None
    step: int
    budget: int


class CurriculumSource(Protocol):
    def start(self, seed: int) -> Start: ...

    def report(self, step: int, won: bool) -> None:
        """An episode that started at demo step `step` ended, won or not."""
        ...

    def offer(self, level: int, state: bytes) -> None:
        """A state at progress `level`: it becomes the swarm state if no state had as high a level."""
        ...

    def swarm_level(self) -> int: ...


SUCCESS_WINDOW = 20
"""episodes from the current start its success share is measured over"""
LATER_WINDOW = 100
"""episodes from later starts their success share is measured over"""
BUDGET_SLACK = 64
"""steps an episode may take beyond ``time_factor`` times the demo steps left"""


def episode_budget(time_factor: float, steps_left: int, slack: int = BUDGET_SLACK) -> int:
    """Steps an episode may take to the win with `steps_left` demo steps ahead of its start."""
    return int(time_factor * steps_left) + slack


class CurriculumSettings(BaseModel):
    """How the curriculum moves, declared once (the trainer's `curriculum` settings extend it)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    threshold: JsonFloat = Field(0.2, gt=0, le=1)
    """the start moves earlier when this share of its last 20 episodes won"""
    move_by: JsonInt = Field(16, ge=1, le=1_000_000)
    """steps of the trajectory the start moves earlier each time"""
    swarm_share: JsonFloat = Field(0.0, ge=0, lt=1)
    """share of episodes that start at the best progress level any env reached"""
    replay_share: JsonFloat = Field(0.0, ge=0, lt=1)
    """share of episodes that start at a demo state drawn uniformly from those later than the
    current start: the route already walked keeps being trained, not only by the episodes that
    survive to it (their results do not move the start)"""
    passes: JsonInt = Field(1, ge=1, le=100)
    """walks of the route from the end; a new one starts when the policy wins from the
    beginning (threshold), until this many were made"""
    time_factor: JsonFloat = Field(2.0, gt=0, le=100)
    """an episode from demo step s may take this times (length - s), plus 64, steps"""
    heal_starts: StrictBool = False
    """demo starts have Link's hearts full: phase 1's random walk may cross a fight at half a
    heart, an edge a policy under sticky actions cannot repeat (episodes from the beginning,
    and every evaluation, keep the game's own health)"""


class LocalCurriculum:
    """The curriculum's shared state in this process (see the module docstring).

    `demo` are states along the winning trajectory, in order, the last one just before the
    win; `demo_length` is the trajectory's length. An episode from demo step s may take
    ``time_factor * (demo_length - s) + slack`` steps."""

    def __init__(
        self,
        demo: Sequence[DemoState],
        demo_length: int,
        settings: CurriculumSettings | None = None,
        *,
        window: int = SUCCESS_WINDOW,
        slack: int = BUDGET_SLACK,
        max_episode_steps: int = 4096,
    ) -> None:
        if not demo or len(demo) > MAX_DEMO_STATES:
            raise ValueError(f"demo needs 1..{MAX_DEMO_STATES} states, got {len(demo)}")
        if any(b.step <= a.step for a, b in zip(demo, demo[1:], strict=False)):
            raise ValueError("demo states must be in trajectory order (increasing steps)")
        if window < 1:
            raise ValueError(f"window {window}: use >= 1 episodes")
        settings = settings or CurriculumSettings()
        self.settings = settings
        self.demo = list(demo)
        self.demo_length = demo_length
        self.threshold, self.window, self.move_by = settings.threshold, window, settings.move_by
        self.swarm_share, self.replay_share = settings.swarm_share, settings.replay_share
        self.time_factor, self.slack = settings.time_factor, slack
        self.max_episode_steps = max_episode_steps
        self.position = len(self.demo) - 1
        """index into `demo` of the current start; -1 = the env's own start (done)"""
        self.passes, self.pass_number = settings.passes, 1
        self._results: deque[bool] = deque(maxlen=window)
        self._wins_to_move = math.ceil(settings.threshold * window - 1e-9)
        self._swarm: tuple[int, bytes] | None = None
        self._later: deque[bool] = deque(maxlen=LATER_WINDOW)
        self.moves: list[int] = []
        """the demo step of every start the curriculum moved to, in order"""

    @property
    def start_step(self) -> int:
        """Demo step episodes start from now (0 when the curriculum reached the start)."""
        return self.demo[self.position].step if self.position >= 0 else 0

    def start(self, seed: int) -> Start:
        rng = np.random.default_rng(seed)
        if self._swarm is not None and rng.random() < self.swarm_share:
            return Start(self._swarm[1], -1, self.max_episode_steps)
        # Never demo[0]: with the start past the beginning, step 0 reports as the start's own.
        first_later = max(self.position + 1, 1)
        if self.replay_share and first_later < len(self.demo) and rng.random() < self.replay_share:
            return self._start_at(self.demo[int(rng.integers(first_later, len(self.demo)))])
        if self.position < 0:
            return replace(self._start_at(self.demo[0]), state=None,
                           budget=self.max_episode_steps)  # fmt: skip
        return self._start_at(self.demo[self.position])

    def _start_at(self, demo: DemoState) -> Start:
        return Start(demo.state, demo.step, self._budget(demo.step))

    def _budget(self, start: int) -> int:
        """Steps an episode from demo step `start` may take to the win."""
        wanted = episode_budget(self.time_factor, self.demo_length - start, self.slack)
        return min(wanted, self.max_episode_steps)

    def report(self, step: int, won: bool) -> None:
        if step > self.start_step:
            self._later.append(won)
        if step != self.start_step or step < 0:
            return  # an episode from a later start (replayed, or the start moved), or the swarm
        self._results.append(won)
        if sum(self._results) < self._wins_to_move:
            return
        if self.position >= 0:
            self._move_earlier()
        elif self.pass_number < self.passes:  # won from the beginning: walk the route again
            self.pass_number += 1
            self.position = len(self.demo) - 1
            self._results.clear()
            self.moves.append(self.start_step)

    def success_rate(self) -> float:
        return sum(self._results) / len(self._results) if self._results else 0.0

    def later_success_rate(self) -> float | None:
        """Wins among the last episodes that started later than the current start (replayed,
        or begun before the start moved); None before any."""
        return sum(self._later) / len(self._later) if self._later else None

    def _move_earlier(self) -> None:
        target = self.start_step - self.move_by
        while self.position >= 0 and self.demo[self.position].step > target:
            self.position -= 1
        self._results.clear()
        self.moves.append(self.start_step)

    def state(self) -> dict[str, Any]:
        """Where the curriculum is, for a checkpoint (the swarm state is not kept)."""
        return {
            "position": self.position, "pass": self.pass_number, "demo_states": len(self.demo),
            "demo_length": self.demo_length, "moves": list(self.moves),
            "results": list(self._results),
        }  # fmt: skip

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from `state()` of a curriculum over the same demo (a resumed run would
        otherwise walk the whole curriculum back from the end)."""
        shape = (state.get("demo_states"), state.get("demo_length"))
        if shape != (len(self.demo), self.demo_length):
            raise ValueError(
                f"the saved curriculum has {shape[0]} states of a {shape[1]}-step demo, this one "
                f"{len(self.demo)} of {self.demo_length}: it was saved over another trajectory"
            )
        position = int(state["position"])
        if not -1 <= position < len(self.demo):
            raise ValueError(
                f"saved curriculum position {position} is not in -1..{len(self.demo) - 1}"
            )
        self.position, self.pass_number = position, int(state.get("pass", 1))
        self.moves = [int(step) for step in state.get("moves", [])]
        self._results = deque((bool(won) for won in state.get("results", [])), maxlen=self.window)

    def offer(self, level: int, state: bytes) -> None:
        if self._swarm is None or level > self._swarm[0]:
            self._swarm = (level, state)

    def swarm_level(self) -> int:
        return self._swarm[0] if self._swarm is not None else -1


class CurriculumWrapper(gym.Wrapper[np.ndarray, Any, np.ndarray, Any]):
    """Starts each episode where the curriculum says, truncates it after the start's step
    budget, reports wins back, and offers states of a new best progress level to the swarm.

    ``info['curriculum']`` (at reset) holds the start's demo step (-1 swarm, 0 the env's own
    start) and the source's swarm level. Offering a state costs a save (~25 ms), so the env
    offers only when its level beats the swarm level it last heard of.

    With `end_on_death` (the default) an episode is truncated when Link passes out, as
    Go-Explore's robustification ended on a life lost: the game respawns him elsewhere, far
    from the demonstration, where new rooms and cells can pay more than the fight he lost.
    Only the credits count as a win."""

    def __init__(
        self,
        env: gym.Env[np.ndarray, Any],
        source: CurriculumSource,
        *,
        end_on_death: bool = True,
    ) -> None:
        super().__init__(env)
        if not isinstance(env.unwrapped, ZeldaEnv):
            raise TypeError("CurriculumWrapper wraps koholint/Zelda-v1 (ZeldaEnv)")
        self.source = source
        self.end_on_death = end_on_death
        self._start = Start(None, 0, 1)
        self._steps = 0
        self._swarm_level = -1

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is not None:
            self.np_random, _ = gym.utils.seeding.np_random(seed)
        self._start = self.source.start(int(self.np_random.integers(0, 2**31 - 1)))
        options = dict(options or {})
        if self._start.state is not None:
            options["start_state"] = self._start.state
        observation, info = self.env.reset(seed=seed, options=options)
        self._steps = 0
        self._swarm_level = self.source.swarm_level()
        info["curriculum"] = {"start_step": self._start.step, "swarm_level": self._swarm_level}
        return observation, info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        zelda: ZeldaEnv = self.env.unwrapped  # type: ignore[assignment]
        raw = zelda.raw_state
        # A state in play only: the credits (the win) would start episodes that end at once.
        if not raw.transition and raw.gameplay_type == _WORLD:
            level = progress_level(raw)
            if level > self._swarm_level:
                self.source.offer(level, zelda.gameboy.save_state())
                self._swarm_level = self.source.swarm_level()
        if not terminated and self._steps >= self._start.budget:
            truncated = True
        if self.end_on_death and not terminated and raw.motion == _PASS_OUT:
            truncated = True
        if terminated or truncated:
            won = bool(terminated) and raw.gameplay_type == _CREDITS
            self.source.report(self._start.step, won)
        return observation, reward, terminated, truncated, info


def demo_states(
    trajectory: bytes,
    env: gym.Env[np.ndarray, Any],
    *,
    every: int = 8,
    seed: int = 0,
    heal: bool = False,
) -> list[DemoState]:
    """Replay `trajectory` (one action per byte) in `env` — the env it was found in, wrappers
    such as hybrid control included — from its configured start, and save a state every
    `every` steps (and at the start), stopping before the winning step; with `heal`, each
    saved state has Link's hearts full (the replay itself goes on as it was)."""
    if every < 1:
        raise ValueError(f"every {every} must be >= 1")
    zelda = env.unwrapped
    if not isinstance(zelda, ZeldaEnv):
        raise TypeError("demo_states replays in koholint/Zelda-v1 (ZeldaEnv), wrapped or not")
    if zelda.config.sticky_action_probability or zelda.config.latch_steps != 1:
        raise ValueError(
            "the demo replays only without sticky actions or latched holds: make the env with "
            "sticky_action_probability=0 and latch_steps=1 (phase 1 explored without them)"
        )
    env.reset(seed=seed)
    states = [DemoState(0, _saved(zelda, heal))]
    for index, action in enumerate(trajectory[:-1], start=1):
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            raise ValueError(f"the trajectory ended the episode at step {index}, before its end")
        if index % every == 0 and not zelda.raw_state.transition:
            states.append(DemoState(index, _saved(zelda, heal)))
    return states


def _saved(zelda: ZeldaEnv, heal: bool) -> bytes:
    """The game's state now; with `heal`, as if Link's hearts were full. The health byte is
    put back at once, so the emulator goes on exactly as it would have."""
    if not heal:
        return zelda.gameboy.save_state()
    memory = zelda.gameboy.memory
    health, full = memory[_HEALTH], memory[_MAX_HEARTS] * _HEALTH_PER_HEART
    if not 0 < health < full:  # 0: passing out, a start no heal should hide
        return zelda.gameboy.save_state()
    memory[_HEALTH] = full
    try:
        return zelda.gameboy.save_state()
    finally:
        memory[_HEALTH] = health
