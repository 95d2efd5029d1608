"""The path-finder's chests: from the demonstration's states in a room before it opens the
room's chest, the steps to the tile below the chest, up against it and A (the teacher
``chests``).

The walker (``walks``) walks a room only once its business is done: its states before the
chest opens are nobody's, so a cloned policy that arrives a few pixels off the
demonstration's line in the sword's room meets them with nothing but the one line cloned.
``corrected_chests`` is DAgger over the same states: the cloned policy plays from them, and
every state it reaches in the room before the chest opens is labelled with the path-finder's
step there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from koholint.env.encoding import SLOT_INDEX
from koholint.env.zelda import BUTTON_ACTIONS, EnvConfig, ZeldaEnv
from koholint.explore.demo import DemoTransitions
from koholint.game.navigation import chest_step
from koholint.schemas.env import Action
from koholint.teachers.base import (
    DONE,
    LOST,
    UNCLONED,
    Episode,
    Label,
    Lesson,
    Policy,
    TaughtReport,
    corrected,
    healed_states,
    room_of,
    rooms,
    scripted_episode,
    teach,
    walkable_tiles,
)
from koholint.teachers.walks import free_to_move

MAX_CHEST_STEPS = 160
"""A walk to the chest that takes longer is not a clean one (a room is crossed in 40-80)."""
CORRECTION_STREAM = 0xC4E575
"""The cloned policy's sampling stream in a corrected walk, apart from the env's sticky one."""
_CHEST_OPEN = SLOT_INDEX["room_flag_4"]  # hRoomStatus bit 4: this room's chest is open


@dataclass(frozen=True)
class Opening:
    """A chest the demonstration opens: in `room`, first seen open at step `step`."""

    room: tuple[int, int, int]
    step: int


def demo_openings(demo: DemoTransitions) -> list[Opening]:
    """Every chest the demonstration opens (the room's chest bit set with no room change)."""
    where = rooms(demo.observations)
    opened = demo.observations[:, _CHEST_OPEN] > 0.5
    return [Opening(where[step], step) for step in range(1, len(where))
            if opened[step] and not opened[step - 1] and where[step] == where[step - 1]]  # fmt: skip


def chest_steps(demo: DemoTransitions, every: int) -> list[tuple[int, Opening]]:
    """Demo steps (multiples of `every`) to walk to a chest from, each with its opening:
    the steps of the room visit that opens it, before it opens, where Link is free to move."""
    where = rooms(demo.observations)
    free = free_to_move(demo.observations)
    chosen: list[tuple[int, Opening]] = []
    for opening in demo_openings(demo):
        entered = opening.step
        while entered > 0 and where[entered - 1] == opening.room:
            entered -= 1
        chosen.extend((step, opening) for step in range(entered, opening.step)
                      if step % every == 0 and free[step])  # fmt: skip
    return chosen


def chest_action(env: ZeldaEnv) -> int | None:
    """The path-finder's step toward the tile below the room's closed chest, up against it,
    then A; None without a chest or a walkable path to it."""
    raw = env.raw_state
    button = chest_step(walkable_tiles(env), (raw.x, raw.y), raw.direction,
                        tolerance=env.config.frame_skip // 2)  # fmt: skip
    return None if button is None else int(BUTTON_ACTIONS.get(button, Action.NOOP))


def chest_transitions(
    actions: bytes, demo: DemoTransitions, env_config: EnvConfig, *, episodes: int,
    every: int = 8,
) -> TaughtReport:  # fmt: skip
    """The path-finder's steps from each of `chest_steps`' states, `episodes` times each
    with seeds 0.., under `env_config`'s sticky actions; only walks that open the chest
    without leaving the room or a death within MAX_CHEST_STEPS are kept."""
    if episodes < 1:
        raise ValueError(f"episodes {episodes}: use >= 1 walks per start")
    openings = dict(chest_steps(demo, every))
    starts = healed_states(actions, env_config, sorted(openings), every)
    return teach(starts, episodes, demo.observations.shape[1],
                 lambda start, seed: _walk(start.state, openings[start.step], env_config, seed))  # fmt: skip


def _walk(state: bytes, opening: Opening, env_config: EnvConfig, seed: int) -> Episode | None:
    """One walk from `state` that opens the chest: its observations and actions, or None if
    it was not clean."""
    label = _chest_label(opening)
    walked = 0

    def choose(env: ZeldaEnv, observation: np.ndarray) -> int | None:
        nonlocal walked
        step = label(env, observation)
        if step is None and observation[_CHEST_OPEN] <= 0.5:
            return UNCLONED + int(Action.NOOP)  # a dialog or a push: wait, untaught
        walked += 1
        return None if step == LOST or walked > MAX_CHEST_STEPS else step

    return scripted_episode(state, env_config, seed, MAX_CHEST_STEPS * 2, choose)


def corrected_chests(
    actions: bytes, demo: DemoTransitions, env_config: EnvConfig, act: Policy, *,
    episodes: int, every: int = 8,
) -> TaughtReport:  # fmt: skip
    """The path-finder's labels on the states `act` reaches from each of `chest_steps`'
    states, `episodes` times each with seeds 0.., under `env_config`'s sticky actions:
    every state in the room before the chest opens where Link is free to move is labelled;
    `clean` counts the episodes in which `act` opened it within MAX_CHEST_STEPS."""
    if episodes < 1:
        raise ValueError(f"episodes {episodes}: use >= 1 corrected walks per start")
    openings = dict(chest_steps(demo, every))
    starts = healed_states(actions, env_config, sorted(openings), every)
    return corrected(starts, episodes, demo.observations.shape[1], act, env_config=env_config,
                     max_steps=MAX_CHEST_STEPS, stream=CORRECTION_STREAM,
                     label_for=lambda start: _chest_label(openings[start.step]))  # fmt: skip


def _chest_label(opening: Opening) -> Label:
    """The path-finder's labels in the chest's room where Link is free to move: DONE once
    the chest is open, LOST in another room or with no path to it."""

    def label(env: ZeldaEnv, observation: np.ndarray) -> int | None:
        if room_of(observation) != opening.room:
            return LOST
        if observation[_CHEST_OPEN] > 0.5:
            return DONE
        if not free_to_move(observation):
            return None
        step = chest_action(env)
        return LOST if step is None else step

    return label


class ChestOpener:
    """The teacher ``chests``: the path-finder's walks to each chest the demonstration opens
    and A, and its labels on the states a policy reaches from the same starts (DAgger)."""

    def teach(self, lesson: Lesson) -> TaughtReport:
        return chest_transitions(lesson.actions, lesson.demo, lesson.env_config,
                                 episodes=lesson.episodes, every=lesson.every)  # fmt: skip

    def correct(self, lesson: Lesson, act: Policy) -> TaughtReport:
        return corrected_chests(lesson.actions, lesson.demo, lesson.env_config, act,
                                episodes=lesson.episodes, every=lesson.every)  # fmt: skip


TEACHER = ChestOpener()
