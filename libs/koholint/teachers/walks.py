"""The path-finder's walks: clean walks across each room of the demonstration to the exit
the demonstration leaves it by, from the demonstration's own states, under the training
env's sticky actions, cloned with the demonstration (the teacher ``walks``).

The demonstration crosses each room once, on one line, and cloning sees only that line. The
walker takes the shortest path around walls and stairs to the cell the demonstration left
from and steps out the way it faced there.

Those walks keep to the walker's own line too, and a cloned policy that strays a few pixels
off it meets states nobody showed it. ``corrected_walks`` is DAgger (Ross, Gordon and
Bagnell 2011): the cloned policy walks from the same states, and every state it reaches in
the room is labelled with the walker's step there.

Those starts are the demonstration's own, one room each; the states a policy meets on its
way from where the curriculum starts it (after a fight it fought its own way, a room it
entered off the line) are not among them. ``corrected_route`` labels those: the policy
plays from the curriculum's start across the next rooms of the route, and the walker labels
every state where the demonstration leaves that room with that progress.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from koholint.env.encoding import SLOT_INDEX
from koholint.env.zelda import BUTTON_ACTIONS, EnvConfig, ZeldaEnv
from koholint.explore.demo import DemoTransitions
from koholint.game.navigation import DIRECTION_BUTTONS, Cell, NoPathError, next_step
from koholint.game.ram import ROOM_HEIGHT, ROOM_WIDTH
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
    facing,
    healed_states,
    room_of,
    rooms,
    scripted_episode,
    teach,
    walkable_tiles,
)

MAX_WALK_STEPS = 160
"""A walk that takes longer is not a clean one (a room is crossed in 40-80 steps)."""
CORRECTION_STREAM = 0xDA66E7
"""The cloned policy's sampling stream in a corrected walk, apart from the env's sticky one."""
MAX_SETTLE_STEPS = 64
"""Steps waited, not cloned, for a started room change (scroll or fade) to finish."""
PROGRESS_SLOTS = ("keys", "has_sword", "sword_in_a", "sword_in_b", "has_instrument", "kills",
                  *(f"room_flag_{bit}" for bit in range(2, 7)))  # fmt: skip
"""What a room's business changes: a state walks to the exit only once these are the
exit's (the key taken, the enemies dead, the door or chest open; the room status bits 2-6
of cartridge/src/ladx.h, not the rupee, heart and visited bits of passing through); the
fighter teaches the fights."""
ROUTE_SLOTS = tuple(slot for slot in PROGRESS_SLOTS if slot != "kills")
"""The progress a route's exit is found by: a policy may beat an enemy the demonstration
passed by (or meet one it beat), and the way on is the same."""
ROUTE_ROOMS = 4
"""Room changes of the demonstration a route episode follows from its start."""
ROUTE_STREAM = 0x207E
"""The policy's sampling stream in a route episode."""
FACING_ACTIONS = {facing: BUTTON_ACTIONS[button] for facing, button in DIRECTION_BUTTONS.items()}


@dataclass(frozen=True)
class Exit:
    """Where the demonstration leaves a room: at step `last` (its action leaves) from
    `cell`, facing `facing`, into room `to`."""

    room: tuple[int, int, int]
    to: tuple[int, int, int]
    last: int
    cell: Cell
    facing: str


def demo_exits(demo: DemoTransitions) -> list[Exit]:
    """Every room change of the demonstration, in order."""
    where = rooms(demo.observations)
    exits = []
    for step in range(1, len(where)):
        if where[step] != where[step - 1]:
            row = demo.observations[step - 1]
            x = min(int(round(float(row[SLOT_INDEX["link_x"]]) * 160)) // 16, ROOM_WIDTH - 1)
            y = min(int(round(float(row[SLOT_INDEX["link_y"]]) * 128)) // 16, ROOM_HEIGHT - 1)
            exits.append(
                Exit(where[step - 1], where[step], step - 1, (max(x, 0), max(y, 0)), facing(row))
            )
    return exits


def walk_steps(demo: DemoTransitions, every: int) -> list[tuple[int, Exit]]:
    """Demo steps (multiples of `every`) to walk from, each with its exit: the steps of a
    room visit whose progress is already the exit's, where Link is free to move, and only
    in the last visit of a room with that progress (an earlier one was a detour)."""
    observations = demo.observations
    progress = progress_marks(observations)
    free = free_to_move(observations)
    exits = demo_exits(demo)
    later = {(e.room, progress[e.last]): index for index, e in enumerate(exits)}
    chosen: list[tuple[int, Exit]] = []
    entered = 0
    for index, exit_ in enumerate(exits):
        if later[(exit_.room, progress[exit_.last])] == index:
            chosen.extend((step, exit_) for step in range(entered, exit_.last)
                          if step % every == 0 and free[step]
                          and progress[step] == progress[exit_.last])  # fmt: skip
        entered = exit_.last + 1
    return chosen


def progress_marks(
    observations: np.ndarray, slots: tuple[str, ...] = PROGRESS_SLOTS
) -> list[tuple[int, ...]]:
    """Per observation, what a room's business changes (`slots`), as integers."""
    columns = [SLOT_INDEX[slot] for slot in slots]
    return [tuple(row) for row in np.rint(observations[:, columns] * 255).astype(int).tolist()]


Where = tuple[tuple[int, int, int], tuple[int, ...]]
"""A room and the progress Link has in it (``ROUTE_SLOTS``)."""


def route_exits(demo: DemoTransitions) -> dict[Where, Exit]:
    """Where the demonstration leaves each room with each progress (``ROUTE_SLOTS``): its
    last exit from there (an earlier one was a detour)."""
    marks = progress_marks(demo.observations, ROUTE_SLOTS)
    return {(exit_.room, marks[exit_.last]): exit_ for exit_ in demo_exits(demo)}


def walk_action(env: ZeldaEnv, exit_: Exit) -> int | None:
    """The step toward the exit's cell, then out the way the demonstration faced; None when
    no walkable path leads there."""
    raw = env.raw_state
    if (min(raw.x // 16, ROOM_WIDTH - 1), min(raw.y // 16, ROOM_HEIGHT - 1)) == exit_.cell:
        return int(FACING_ACTIONS[exit_.facing])
    try:
        button = next_step(walkable_tiles(env), (raw.x, raw.y), exit_.cell,
                           tolerance=env.config.frame_skip // 2)  # fmt: skip
    except NoPathError:
        return None
    return int(BUTTON_ACTIONS.get(button, FACING_ACTIONS[exit_.facing]))


def walk_transitions(
    actions: bytes, demo: DemoTransitions, env_config: EnvConfig, *, episodes: int,
    every: int = 8,
) -> TaughtReport:  # fmt: skip
    """The walker's steps from each of `walk_steps`' states, `episodes` times each with
    seeds 0.., under `env_config`'s sticky actions; only walks that reach the
    demonstration's next room without a death within MAX_WALK_STEPS are kept."""
    if episodes < 1:
        raise ValueError(f"episodes {episodes}: use >= 1 walks per start")
    exits = dict(walk_steps(demo, every))
    starts = healed_states(actions, env_config, sorted(exits), every)
    return teach(starts, episodes, demo.observations.shape[1],
                 lambda start, seed: _walk(start.state, exits[start.step], env_config, seed))  # fmt: skip


def _walk(state: bytes, exit_: Exit, env_config: EnvConfig, seed: int) -> Episode | None:
    """One walk from `state` out of the room by `exit_`: its observations and actions, or
    None if it was not clean (a death, no path, too long, or another room reached)."""
    walked = 0

    def choose(env: ZeldaEnv, observation: np.ndarray) -> int | None:
        nonlocal walked
        room = room_of(observation)
        if room != exit_.room:
            return DONE if room == exit_.to else None
        if (observation[SLOT_INDEX["in_transition"]] > 0.5
                or observation[SLOT_INDEX["motion_map_fade"]] > 0.5):  # fmt: skip
            return UNCLONED + int(Action.NOOP)  # leaving: wait for the next room
        walked += 1
        return walk_action(env, exit_) if walked <= MAX_WALK_STEPS else None

    return scripted_episode(state, env_config, seed, MAX_WALK_STEPS + MAX_SETTLE_STEPS, choose)


def corrected_walks(
    actions: bytes, demo: DemoTransitions, env_config: EnvConfig, act: Policy, *,
    episodes: int, every: int = 8,
) -> TaughtReport:  # fmt: skip
    """The walker's labels on the states `act` reaches walking from each of `walk_steps`'
    states, `episodes` times each with seeds 0.., under `env_config`'s sticky actions:
    every state in the start's room where Link is free to move is labelled, the walks
    that stray or die too (those states are the point); `clean` counts the walks `act`
    took into the demonstration's next room within MAX_WALK_STEPS."""
    if episodes < 1:
        raise ValueError(f"episodes {episodes}: use >= 1 corrected walks per start")
    exits = dict(walk_steps(demo, every))
    starts = healed_states(actions, env_config, sorted(exits), every)
    return corrected(starts, episodes, demo.observations.shape[1], act, env_config=env_config,
                     max_steps=MAX_WALK_STEPS + MAX_SETTLE_STEPS, stream=CORRECTION_STREAM,
                     label_for=lambda start: _walk_label(exits[start.step]))  # fmt: skip


def _walk_label(exit_: Exit) -> Label:
    """The walker's labels in the exit's room where Link is free to move: DONE in the room
    the exit leads to, LOST in any other."""

    def label(env: ZeldaEnv, observation: np.ndarray) -> int | None:
        room = room_of(observation)
        if room != exit_.room:
            return DONE if room == exit_.to else LOST
        return walk_action(env, exit_) if _walking(observation) else None

    return label


def corrected_route(
    actions: bytes, demo: DemoTransitions, env_config: EnvConfig, act: Policy, *, start: int,
    episodes: int, rooms: int = ROUTE_ROOMS, every: int = 8, planner: str | None = "rules",
) -> TaughtReport:  # fmt: skip
    """DAgger from the curriculum's start: `act` plays `episodes` times (seeds 0..) from the
    healed demo state at step `start` (a multiple of `every`), under `env_config`'s sticky
    actions and hybrid control with `planner` as training plays (the route crosses dialogs
    and puzzles; the planner's steps are not labelled), and every state where Link is free
    to move in a room the demonstration leaves with that progress is labelled with the
    walker's step to that exit (``route_exits``).
    An episode ends clean in the room the demonstration enters at its `rooms`-th room change
    after `start`, with the progress it had there; it ends lost at a death or after twice
    the demonstration's steps to there (the curriculum's budget, and the settling)."""
    if episodes < 1:
        raise ValueError(f"episodes {episodes}: use >= 1 route episodes")
    ahead = [exit_ for exit_ in demo_exits(demo) if exit_.last >= start][:rooms]
    starts = healed_states(actions, env_config, [start], every)
    if not ahead or not starts:  # the last room (only the win is ahead), or mid-transition
        return teach([], episodes, demo.observations.shape[1], lambda *_: None)
    entered = demo.observations[ahead[-1].last + 1]
    goal = (ahead[-1].to, progress_marks(entered[None], ROUTE_SLOTS)[0])
    label = _route_label(route_exits(demo), goal)
    return corrected(starts, episodes, demo.observations.shape[1], act, env_config=env_config,
                     max_steps=2 * (ahead[-1].last + 1 - start) + MAX_SETTLE_STEPS,
                     stream=ROUTE_STREAM, label_for=lambda _: label, planner=planner)  # fmt: skip


def _route_label(exits: dict[Where, Exit], goal: Where) -> Label:
    """The walker's step to the route's exit from the room and progress Link is in; DONE
    at `goal` (a room and its progress), None where the route leaves no way from there."""

    def label(env: ZeldaEnv, observation: np.ndarray) -> int | None:
        where = (room_of(observation), progress_marks(observation[None], ROUTE_SLOTS)[0])
        if where == goal:
            return DONE
        exit_ = exits.get(where)
        return walk_action(env, exit_) if exit_ is not None and _walking(observation) else None

    return label


def _walking(observation: np.ndarray) -> bool:
    """Link is free to move and no room change fades: the walker has a step to label."""
    return bool(free_to_move(observation)) and observation[SLOT_INDEX["motion_map_fade"]] < 0.5


def free_to_move(observations: np.ndarray) -> np.ndarray:
    """Per observation (any leading shape): Link moves as the buttons say, no scroll or
    dialog."""
    return ((observations[..., SLOT_INDEX["motion_normal"]] > 0.5)
            & (observations[..., SLOT_INDEX["in_transition"]] < 0.5)
            & (observations[..., SLOT_INDEX["dialog_open"]] < 0.5))  # fmt: skip


class Walker:
    """The teacher ``walks``: the path-finder's clean walks to each room's exit, and its
    labels on the states a policy reaches walking from the same starts (DAgger)."""

    def teach(self, lesson: Lesson) -> TaughtReport:
        return walk_transitions(lesson.actions, lesson.demo, lesson.env_config,
                                episodes=lesson.episodes, every=lesson.every)  # fmt: skip

    def correct(self, lesson: Lesson, act: Policy) -> TaughtReport:
        return corrected_walks(lesson.actions, lesson.demo, lesson.env_config, act,
                               episodes=lesson.episodes, every=lesson.every)  # fmt: skip


TEACHER = Walker()
