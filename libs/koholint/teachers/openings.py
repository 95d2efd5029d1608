"""The path-finder's openings: from the demonstration's states in a room before it opens
the room's chest or locked door, the steps there and the press that opens it (the teachers
``chests`` and ``doors``).

The walker (``walks``) walks a room only once its business is done: its states before the
chest or the door opens are nobody's, so a cloned policy that arrives a few pixels off the
demonstration's line meets them with nothing but the one line cloned. ``corrected_openings``
is DAgger over the same states: the cloned policy plays from them, and every state it
reaches in the room before the opening is labelled with the path-finder's step there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from koholint.env.encoding import SLOT_INDEX
from koholint.env.zelda import BUTTON_ACTIONS, EnvConfig, ZeldaEnv
from koholint.explore.demo import DemoTransitions
from koholint.game.emulator import Button
from koholint.game.navigation import chest_step, door_step
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
from koholint.teachers.walks import free_to_move, progress_marks

MAX_OPENING_STEPS = 160
"""A walk to the opening that takes longer is not a clean one (a room is crossed in 40-80)."""
CORRECTION_STREAM = 0xC4E575
"""The cloned policy's sampling stream in a corrected walk, apart from the env's sticky one."""


@dataclass(frozen=True)
class Opener:
    """What a room's business is: the hRoomStatus bit it sets (an observation slot) and the
    path-finder's button toward it from (tiles, pixel position, hLinkDirection, tolerance)."""

    name: str
    flag: int
    button: Callable[[list[list[int]], tuple[int, int], int, int], Button | None]


CHEST = Opener("chest", SLOT_INDEX["room_flag_4"], chest_step)
"""The room's chest: bit 4 set once open; below it, up against it, then A."""
DOOR = Opener("locked door", SLOT_INDEX["room_flag_2"],
              lambda tiles, position, direction, tolerance: door_step(tiles, position, tolerance))  # fmt: skip
"""The room's locked door: bit 2 set once open; inside it, then into it with a key."""


@dataclass(frozen=True)
class Opening:
    """What the demonstration opens: in `room`, first seen open at step `step`."""

    room: tuple[int, int, int]
    step: int


def demo_openings(demo: DemoTransitions, opener: Opener) -> list[Opening]:
    """Every `opener` thing the demonstration opens (its room bit set with no room change)."""
    where = rooms(demo.observations)
    opened = demo.observations[:, opener.flag] > 0.5
    return [Opening(where[step], step) for step in range(1, len(where))
            if opened[step] and not opened[step - 1] and where[step] == where[step - 1]]  # fmt: skip


def opening_steps(demo: DemoTransitions, opener: Opener, every: int) -> list[tuple[int, Opening]]:
    """Demo steps (multiples of `every`) to walk to an opening from, each with its opening:
    the steps of the room visit that opens it, before it opens, where Link is free to move
    and the rest of the room's business is done (the key taken, the enemies beaten: what
    the demonstration held just before it opened)."""
    where = rooms(demo.observations)
    free = free_to_move(demo.observations)
    progress = progress_marks(demo.observations)
    chosen: list[tuple[int, Opening]] = []
    for opening in demo_openings(demo, opener):
        ready = progress[opening.step - 1]
        entered = opening.step
        while entered > 0 and where[entered - 1] == opening.room:
            entered -= 1
        chosen.extend((step, opening) for step in range(entered, opening.step)
                      if step % every == 0 and free[step] and progress[step] == ready)  # fmt: skip
    return chosen


def opening_action(env: ZeldaEnv, opener: Opener) -> int | None:
    """The path-finder's step toward what `opener` opens and the press that opens it; None
    without one in the room or a walkable path to it."""
    raw = env.raw_state
    button = opener.button(walkable_tiles(env), (raw.x, raw.y), raw.direction,
                           env.config.frame_skip // 2)  # fmt: skip
    return None if button is None else int(BUTTON_ACTIONS.get(button, Action.NOOP))


def opening_transitions(
    actions: bytes, demo: DemoTransitions, env_config: EnvConfig, opener: Opener, *,
    episodes: int, every: int = 8,
) -> TaughtReport:  # fmt: skip
    """The path-finder's steps from each of `opening_steps`' states, `episodes` times each
    with seeds 0.., under `env_config`'s sticky actions; only walks that open it without
    leaving the room or a death within MAX_OPENING_STEPS are kept."""
    if episodes < 1:
        raise ValueError(f"episodes {episodes}: use >= 1 walks per start")
    openings = dict(opening_steps(demo, opener, every))
    starts = healed_states(actions, env_config, sorted(openings), every)
    return teach(starts, episodes, demo.observations.shape[1],
                 lambda start, seed: _walk(start.state, opener, openings[start.step], env_config,
                                           seed))  # fmt: skip


def _walk(
    state: bytes, opener: Opener, opening: Opening, env_config: EnvConfig, seed: int
) -> Episode | None:
    """One walk from `state` that opens it: its observations and actions, or None if it was
    not clean."""
    label = _opening_label(opener, opening)
    walked = 0

    def choose(env: ZeldaEnv, observation: np.ndarray) -> int | None:
        nonlocal walked
        step = label(env, observation)
        if step is None:
            return UNCLONED + int(Action.NOOP)  # a dialog or a scroll: wait, untaught
        walked += 1
        return None if step == LOST or walked > MAX_OPENING_STEPS else step

    return scripted_episode(state, env_config, seed, MAX_OPENING_STEPS * 2, choose)


def corrected_openings(
    actions: bytes, demo: DemoTransitions, env_config: EnvConfig, opener: Opener,
    act: Policy, *, episodes: int, every: int = 8,
) -> TaughtReport:  # fmt: skip
    """The path-finder's labels on the states `act` reaches from each of `opening_steps`'
    states, `episodes` times each with seeds 0.., under `env_config`'s sticky actions:
    every state in the room before the opening where Link is free to move is labelled;
    `clean` counts the episodes in which `act` opened it within MAX_OPENING_STEPS."""
    if episodes < 1:
        raise ValueError(f"episodes {episodes}: use >= 1 corrected walks per start")
    openings = dict(opening_steps(demo, opener, every))
    starts = healed_states(actions, env_config, sorted(openings), every)
    return corrected(starts, episodes, demo.observations.shape[1], act, env_config=env_config,
                     max_steps=MAX_OPENING_STEPS, stream=CORRECTION_STREAM,
                     label_for=lambda start: _opening_label(opener, openings[start.step]))  # fmt: skip


def _opening_label(opener: Opener, opening: Opening) -> Label:
    """The path-finder's labels in the opening's room where Link is free to move: DONE once
    it is open, LOST in another room or with no path to it."""

    def label(env: ZeldaEnv, observation: np.ndarray) -> int | None:
        if room_of(observation) != opening.room:
            return LOST
        if observation[opener.flag] > 0.5:
            return DONE
        if not free_to_move(observation):
            return None
        step = opening_action(env, opener)
        return LOST if step is None else step

    return label


@dataclass(frozen=True)
class OpeningTeacher:
    """The teachers ``chests`` and ``doors``: the path-finder's walks to each `opener` thing
    the demonstration opens, and its labels on the states a policy reaches from the same
    starts (DAgger)."""

    opener: Opener

    def teach(self, lesson: Lesson) -> TaughtReport:
        return opening_transitions(lesson.actions, lesson.demo, lesson.env_config, self.opener,
                                   episodes=lesson.episodes, every=lesson.every)  # fmt: skip

    def correct(self, lesson: Lesson, act: Policy) -> TaughtReport:
        return corrected_openings(lesson.actions, lesson.demo, lesson.env_config, self.opener,
                                  act, episodes=lesson.episodes, every=lesson.every)  # fmt: skip


CHESTS = OpeningTeacher(CHEST)
DOORS = OpeningTeacher(DOOR)
