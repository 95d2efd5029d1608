"""The scripted fighter: clean fights from the demonstration's own states, under the
training env's sticky actions, cloned with the demonstration.

A fight's enemies move on the game's RNG, so no shortening of a trajectory can cut one, and
a random walk's fights are flailing. The fighter takes the path-finder's steps toward the
nearest enemy while it is more than a cell away, then walks along the larger gap to it and
swings when it is within the sword's reach in front, then walks to the key the cleared room
shows; its clean fights are what it teaches (the teacher ``fights``).

A policy cloned on those fights meets, under sticky actions, distances and knock-backs no
clean fight passed through. ``corrected_fights`` is DAgger for the fights: the policy fights
from the same states, and every state it reaches in the room is labelled with the fighter's
step there.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from koholint.env.encoding import SLOT_INDEX
from koholint.env.zelda import BUTTON_ACTIONS, EnvConfig, ZeldaEnv
from koholint.explore.demo import DemoTransitions
from koholint.game.navigation import NoPathError, nearest_step, next_step
from koholint.game.ram import ROOM_HEIGHT, ROOM_WIDTH, RamReader
from koholint.game.tiles import Metatile
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

SWORD_REACH = (0.0, 24.0)
"""How far in front of Link (pixels along his facing) the sword hits: its box is centred
12 px ahead and 12 px wide each side (cartridge/src/world.c, sword_hits)."""
SWORD_SIDE = 12.0
MAX_FIGHT_STEPS = 256
"""A fight that takes longer is not a clean one: its steps are not cloned."""
CORRECTION_STREAM = 0xF16447
"""The policy's sampling stream in a corrected fight, apart from the env's sticky one."""
KEY_WAIT_STEPS = 4
"""Steps waited after the last enemy is gone for a key to appear: it dies in a 12-frame
puff (cartridge/src/actors.c, DYING_FRAMES) and the room's key is placed after it."""


def fight_action(observation: np.ndarray) -> int | None:
    """The fighter's action, or None when no enemy is left in the room."""
    if observation[SLOT_INDEX["enemy_nearby"]] < 0.5:
        return None
    dx = float(observation[SLOT_INDEX["nearest_enemy_dx"]]) * 160
    dy = float(observation[SLOT_INDEX["nearest_enemy_dy"]]) * 128
    along, across = {"right": (dx, dy), "left": (-dx, dy), "up": (-dy, dx), "down": (dy, dx)}[
        facing(observation)
    ]
    if SWORD_REACH[0] < along < SWORD_REACH[1] and abs(across) < SWORD_SIDE:
        return int(Action.B if observation[SLOT_INDEX["sword_in_b"]] > 0.5 else Action.A)
    if abs(dx) >= abs(dy):
        return int(Action.RIGHT if dx > 0 else Action.LEFT)
    return int(Action.DOWN if dy > 0 else Action.UP)


def fight_step(env: ZeldaEnv, observation: np.ndarray) -> int | None:
    """`fight_action` in the room `env` shows: while the enemy is more than a cell away,
    the path-finder's steps toward its cell instead (the rooms of generated worlds have
    blocks inside, and a straight walk into one stood there until the fight timed out)."""
    action = fight_action(observation)
    if action is None or action in (int(Action.A), int(Action.B)):
        return action
    raw = env.raw_state
    here = _cell(raw.x, raw.y)
    enemy = _cell(raw.x + float(observation[SLOT_INDEX["nearest_enemy_dx"]]) * 160,
                  raw.y + float(observation[SLOT_INDEX["nearest_enemy_dy"]]) * 128)  # fmt: skip
    if max(abs(enemy[0] - here[0]), abs(enemy[1] - here[1])) <= 1:
        return action
    try:
        button = next_step(walkable_tiles(env), (raw.x, raw.y), enemy,
                           tolerance=env.config.frame_skip // 2)  # fmt: skip
    except NoPathError:
        return action
    return int(BUTTON_ACTIONS.get(button, action))


def _cell(x: float, y: float) -> tuple[int, int]:
    """The room cell holding pixel (x, y), clamped to the room."""
    return (min(max(int(x) // 16, 0), ROOM_WIDTH - 1), min(max(int(y) // 16, 0), ROOM_HEIGHT - 1))


def fight_steps(demo: DemoTransitions, every: int) -> list[int]:
    """Demo steps (multiples of `every`) inside a fight: from entering a room the
    demonstration kills in to its last kill there, while an enemy is left."""
    kills = np.rint(demo.observations[:, SLOT_INDEX["kills"]] * 255).astype(int)
    where = rooms(demo.observations)
    enemy = demo.observations[:, SLOT_INDEX["enemy_nearby"]] > 0.5
    steps: list[int] = []
    entered = 0
    for step in range(1, len(where)):
        if where[step] != where[step - 1]:
            entered = step
        if kills[step] > kills[step - 1]:  # a kill in this visit: its fight began at entry
            steps.extend(s for s in range(entered, step) if s % every == 0 and enemy[s])
            entered = step
    return sorted(set(steps))


def fight_transitions(
    actions: bytes, demo: DemoTransitions, env_config: EnvConfig, *, episodes: int,
    every: int = 8,
) -> TaughtReport:  # fmt: skip
    """The fighter's steps from each of the demonstration's fight states (`fight_steps`),
    `episodes` times each with seeds 0.., under `env_config`'s sticky actions; only fights
    that clear the room without a death within MAX_FIGHT_STEPS are kept."""
    if episodes < 1:
        raise ValueError(f"episodes {episodes}: use >= 1 fights per start")
    starts = healed_states(actions, env_config, fight_steps(demo, every), every)
    return teach(starts, episodes, demo.observations.shape[1],
                 lambda start, seed: fight_episode(start.state, env_config, seed))  # fmt: skip


def fight_episode(
    state: bytes, env_config: EnvConfig, seed: int,
    step: Callable[[ZeldaEnv, np.ndarray], int | None] = fight_step,
) -> Episode | None:  # fmt: skip
    """One fight from `state` by `step`, then the walk to the key the cleared room shows:
    their observations and actions, or None if it was not clean (a death, or too long)."""
    waited = 0

    def choose(env: ZeldaEnv, observation: np.ndarray) -> int | None:
        nonlocal waited
        action = step(env, observation)
        action = loot_action(env) if action is None else action
        if action is not None:
            return action
        if waited == KEY_WAIT_STEPS:
            return DONE
        waited += 1  # the last enemy's puff: the key appears after it (not cloned)
        return UNCLONED + int(Action.NOOP)

    return scripted_episode(state, env_config, seed, MAX_FIGHT_STEPS, choose)


def loot_action(env: ZeldaEnv) -> int | None:
    """The step toward the nearest key lying in the room, or None when there is none (the
    policy sees a key only when it is in front, so the walk to the key a cleared room shows
    is taught here, from wherever the fight ended)."""
    tiles = RamReader(env.gameboy.memory, banked=env.gameboy.rom.cgb).room_objects()
    raw = env.raw_state
    button = nearest_step(tiles, (raw.x, raw.y), Metatile.KEY, env.config.frame_skip // 2)
    return None if button is None else int(BUTTON_ACTIONS.get(button, Action.NOOP))


def corrected_fights(
    actions: bytes, demo: DemoTransitions, env_config: EnvConfig, act: Policy, *,
    episodes: int, every: int = 8,
) -> TaughtReport:  # fmt: skip
    """The fighter's labels on the states `act` reaches fighting from each of `fight_steps`'
    states, `episodes` times each with seeds 0.., under `env_config`'s sticky actions: every
    state in the start's room where the fighter has a step is labelled, the fights lost or
    too long too (those states are the point); `clean` counts the fights `act` finished as
    the fighter does (the room cleared and its key taken, no death, within MAX_FIGHT_STEPS)."""
    if episodes < 1:
        raise ValueError(f"episodes {episodes}: use >= 1 corrected fights per start")
    starts = healed_states(actions, env_config, fight_steps(demo, every), every)
    where = rooms(demo.observations)
    return corrected(starts, episodes, demo.observations.shape[1], act, env_config=env_config,
                     max_steps=MAX_FIGHT_STEPS, stream=CORRECTION_STREAM,
                     label_for=lambda start: _fight_label(where[start.step]))  # fmt: skip


def _fight_label(room: tuple[int, int, int]) -> Label:
    """The fighter's labels in `room`: LOST once Link left it, DONE once no enemy and no key
    is left past the last puff."""
    idle = 0

    def label(env: ZeldaEnv, observation: np.ndarray) -> int | None:
        nonlocal idle
        if room_of(observation) != room:
            return LOST
        step = fight_step(env, observation)
        step = loot_action(env) if step is None else step
        idle = 0 if step is not None else idle + 1
        return DONE if idle > KEY_WAIT_STEPS else step

    return label


class Fighter:
    """The teacher ``fights``: the fighter's clean fights, and its labels on the states a
    policy reaches fighting from the same starts (DAgger)."""

    def teach(self, lesson: Lesson) -> TaughtReport:
        return fight_transitions(lesson.actions, lesson.demo, lesson.env_config,
                                 episodes=lesson.episodes, every=lesson.every)  # fmt: skip

    def correct(self, lesson: Lesson, act: Policy) -> TaughtReport:
        return corrected_fights(lesson.actions, lesson.demo, lesson.env_config, act,
                                episodes=lesson.episodes, every=lesson.every)  # fmt: skip


TEACHER = Fighter()
