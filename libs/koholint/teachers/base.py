"""What every scripted teacher is given and returns, and the episode machinery they share.

A teacher (``Teacher``) is given a ``Lesson`` — the winning actions, the demonstration they
make under the training env, that env's settings and how many episodes to play from each
start — and returns a ``TaughtReport``: the observations it saw and the actions it took in
its clean episodes, with counts. A teacher that also labels (``Labeller``) can be handed a
policy (``Policy``): the policy plays from the same starts and the teacher labels the states
it reaches with its own step there (DAgger).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from koholint.env.encoding import NPC_TYPES, SLOT_INDEX
from koholint.env.factory import make_env
from koholint.env.zelda import EnvConfig, ZeldaEnv
from koholint.explore.curriculum import DemoState
from koholint.explore.demo import DemoTransitions
from koholint.explore.trajectory import winning_demo
from koholint.game.ram import ROOM_HEIGHT, ROOM_WIDTH, RamReader
from koholint.game.tiles import Metatile

FACINGS = ("right", "left", "up", "down")
"""The observation's facing slots, in the order of hLinkDirection's values."""
DONE = -1
"""A teacher's choice that ends its episode as a clean one."""
LOST = -2
"""A labeller's verdict that ends a policy's episode as not clean (it strayed, or gave up)."""
UNCLONED = 1 << 8
"""Added to a teacher's action that is taken but not taught (waiting out a puff, a fade)."""

Episode = tuple[list[np.ndarray], list[int]]
"""A clean episode's observations and the actions taken on them."""
Policy = Callable[[np.ndarray, np.random.Generator], int]
"""A policy's sampled action for an observation."""
Label = Callable[[ZeldaEnv, np.ndarray], int | None]
"""A labeller's step for the state a policy is in; None where it has none (the policy acts
on unlabelled), DONE or LOST to end the episode clean or not."""


@dataclass(frozen=True)
class Lesson:
    """What a teacher is given: the winning `actions`, their `demo` as the policy sees it
    under the training env, that env's settings (sticky actions and all), the `episodes`
    played from each start (seeds 0..), and the demo steps starts are taken from (multiples
    of `every`)."""

    actions: bytes
    demo: DemoTransitions
    env_config: EnvConfig
    episodes: int
    every: int = 8


@dataclass(frozen=True)
class TaughtReport:
    """What a teacher returns: its transitions, the demo states it started from, its
    episodes from them, and how many were clean."""

    transitions: DemoTransitions
    starts: int
    episodes: int
    clean: int


class Teacher(Protocol):
    """A scripted teacher: its clean episodes from a lesson's starts."""

    def teach(self, lesson: Lesson) -> TaughtReport:
        """Its clean episodes' observations and actions."""
        ...


@runtime_checkable
class Labeller(Teacher, Protocol):
    """A teacher that also labels the states a policy reaches from a lesson's starts."""

    def correct(self, lesson: Lesson, act: Policy) -> TaughtReport:
        """`act` plays from the lesson's starts; every state it reaches that the teacher has
        a step for is labelled with that step (``clean`` counts the episodes `act` finished
        as the teacher would have)."""
        ...


def rooms(observations: np.ndarray) -> list[tuple[int, int, int]]:
    """Each observation's room: (indoor, map id, room id)."""
    columns = [SLOT_INDEX["indoor"], SLOT_INDEX["map_id"], SLOT_INDEX["room_id"]]
    scaled = np.rint(observations[:, columns] * np.array([1, 255, 255])).astype(int)
    return [(a, b, c) for a, b, c in scaled.tolist()]


def room_of(observation: np.ndarray) -> tuple[int, int, int]:
    """One observation's room: (indoor, map id, room id)."""
    return rooms(observation[None, :])[0]


def walkable_tiles(env: ZeldaEnv) -> list[list[int]]:
    """The room's objects for the path-finder, with the cell each NPC stands in made a wall:
    an NPC stands on floor, and a walk through him is Link standing still (a generated
    world's elder can stand between the start and the room's exit)."""
    memory = env.gameboy.memory
    tiles = [list(row) for row in RamReader(memory, banked=env.gameboy.rom.cgb).room_objects()]
    raw = env.raw_state
    for slot, status in enumerate(raw.entity_status):
        if status and raw.entity_type[slot] in NPC_TYPES:
            column = min(raw.entity_x[slot] // 16, ROOM_WIDTH - 1)
            tiles[min(raw.entity_y[slot] // 16, ROOM_HEIGHT - 1)][column] = Metatile.WALL
    return tiles


def facing(observation: np.ndarray) -> str:
    """The way Link faces in one observation."""
    return FACINGS[int(np.argmax([observation[SLOT_INDEX[f"facing_{f}"]] for f in FACINGS]))]


def teach(
    starts: list[DemoState], episodes: int, size: int,
    episode: Callable[[DemoState, int], Episode | None],
) -> TaughtReport:  # fmt: skip
    """A teacher's `episode` from each start with seeds 0..`episodes` - 1: the clean ones'
    observations (`size` wide) and actions, and the counts."""
    observations: list[np.ndarray] = []
    chosen: list[int] = []
    clean = 0
    for start in starts:
        for seed in range(episodes):
            taught = episode(start, seed)
            if taught is not None:
                clean += 1
                observations.extend(taught[0])
                chosen.extend(taught[1])
    return _report(observations, chosen, size, starts=len(starts),
                   episodes=len(starts) * episodes, clean=clean)  # fmt: skip


def _report(
    observations: list[np.ndarray], actions: list[int], size: int, *, starts: int,
    episodes: int, clean: int,
) -> TaughtReport:  # fmt: skip
    return TaughtReport(
        DemoTransitions(np.asarray(observations, np.float32).reshape(-1, size),
                        np.asarray(actions, np.int64), np.zeros(len(actions), np.float32)),
        starts=starts, episodes=episodes, clean=clean,
    )  # fmt: skip


def healed_states(
    actions: bytes, env_config: EnvConfig, steps: list[int], every: int
) -> list[DemoState]:
    """The curriculum's own healed starts at `steps` (those mid-transition have none)."""
    if not steps:
        return []
    states = winning_demo(actions[: steps[-1] + 1], every=every,
                          frame_skip=env_config.frame_skip, heal=True)  # fmt: skip
    wanted = set(steps)
    return [state for state in states if state.step in wanted]


def scripted_episode(
    state: bytes, env_config: EnvConfig, seed: int, max_steps: int,
    choose: Callable[[ZeldaEnv, np.ndarray], int | None],
) -> Episode | None:  # fmt: skip
    """A teacher's episode from `state`: `choose` gives each step's action (plus UNCLONED
    for one not taught), DONE to end it clean, or None to drop it; a death or `max_steps`
    drops it too. The taught steps' observations and actions, or None."""
    env = ZeldaEnv(env_config.replaced(start_state=state, info_state=False,
                                       max_episode_steps=max_steps))  # fmt: skip
    observations: list[np.ndarray] = []
    chosen: list[int] = []
    try:
        observation, _ = env.reset(seed=seed)
        for _ in range(max_steps):
            action = choose(env, observation)
            if action is None or action == DONE:
                return (observations, chosen) if action == DONE else None
            if action < UNCLONED:
                observations.append(observation)
                chosen.append(action)
            observation, _, terminated, truncated, info = env.step(action % UNCLONED)
            if info["reward_components"]["death"] or terminated or truncated:
                return None
        return None
    finally:
        env.close()


def corrected(
    starts: list[DemoState], episodes: int, size: int, act: Policy, *,
    env_config: EnvConfig, max_steps: int, stream: int, label_for: Callable[[DemoState], Label],
    planner: str | None = None,
) -> TaughtReport:  # fmt: skip
    """DAgger's labels: `act` plays from each start with seeds 0..`episodes` - 1 (its
    sampling on `stream`, apart from the env's sticky one), and every state it reaches is
    labelled with `label_for(start)`'s step there (a fresh labeller each episode); `clean`
    counts the episodes the labeller ended DONE. With a `planner` (a backend's name), the
    episodes play under hybrid control as training does: the planner's steps are not
    labelled, the policy's after them are."""
    observations: list[np.ndarray] = []
    labels: list[int] = []
    clean = 0
    for start in starts:
        for seed in range(episodes):
            label = label_for(start)
            env = make_env(env_config.replaced(start_state=start.state, info_state=False,
                                               max_episode_steps=max_steps), planner=planner)  # fmt: skip
            try:
                clean += _labelled_episode(env, seed, act, np.random.default_rng([seed, stream]),
                                           label, observations, labels)  # fmt: skip
            finally:
                env.close()
    return _report(observations, labels, size, starts=len(starts),
                   episodes=len(starts) * episodes, clean=clean)  # fmt: skip


def _labelled_episode(
    env: gym.Env[np.ndarray, Any], seed: int, act: Policy, rng: np.random.Generator,
    label: Label, observations: list[np.ndarray], labels: list[int],
) -> bool:  # fmt: skip
    """One episode of `act` in `env`, `label`'s steps appended; whether it ended DONE."""
    zelda: ZeldaEnv = env.unwrapped  # type: ignore[assignment]
    observation, _ = env.reset(seed=seed)
    for _ in range(zelda.config.max_episode_steps):
        step = label(zelda, observation)
        if step in (DONE, LOST):
            return step == DONE
        if step is not None:
            observations.append(observation)
            labels.append(step)
        observation, _, terminated, truncated, info = env.step(act(observation, rng))
        if info["reward_components"]["death"] or terminated or truncated:
            return False
    return False
