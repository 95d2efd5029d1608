"""Clean fights for the warm start: a scripted fighter clears the rooms the demonstration
fights in, from the demonstration's own states, under the training env's sticky actions.

Phase 1's demonstration fights the way a random walk does: seed 2's took 324 steps and
three hits to clear the key hall, and the shortening cannot cut a fight, because the
enemies move on the game's RNG. Cloning that teaches flailing. The fighter below (walk
along the larger gap to the nearest enemy, swing when it is within the sword's reach in
front) clears the key hall from every start it was tried on (BENCHMARKS.md); its steps
join the demonstration's in the warm start (``curriculum.clone_fights``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from koholint.env.encoding import SLOT_INDEX
from koholint.env.zelda import EnvConfig, ZeldaEnv
from koholint.explore.curriculum import DemoState
from koholint.explore.demo import DemoTransitions
from koholint.explore.trajectory import winning_demo
from koholint.game.emulator import Button
from koholint.game.navigation import NoPathError, next_step
from koholint.game.ram import RamReader
from koholint.game.tiles import Metatile
from koholint.schemas.env import Action

SWORD_REACH = (0.0, 24.0)
"""How far in front of Link (pixels along his facing) the sword hits: its box is centred
12 px ahead and 12 px wide each side (cartridge/src/world.c, sword_hits)."""
SWORD_SIDE = 12.0
MAX_FIGHT_STEPS = 256
"""A fight that takes longer is not a clean one: its steps are not cloned."""
FACINGS = ("right", "left", "up", "down")
KEY_WAIT_STEPS = 4
"""Steps waited after the last enemy is gone for a key to appear: it dies in a 12-frame
puff (cartridge/src/actors.c, DYING_FRAMES) and the room's key is placed after it."""
BUTTON_ACTIONS = {Button.UP: Action.UP, Button.DOWN: Action.DOWN, Button.LEFT: Action.LEFT,
                  Button.RIGHT: Action.RIGHT}  # fmt: skip


def fight_action(observation: np.ndarray) -> int | None:
    """The fighter's action, or None when no enemy is left in the room."""
    if observation[SLOT_INDEX["enemy_nearby"]] < 0.5:
        return None
    dx = float(observation[SLOT_INDEX["nearest_enemy_dx"]]) * 160
    dy = float(observation[SLOT_INDEX["nearest_enemy_dy"]]) * 128
    facing = FACINGS[int(np.argmax([observation[SLOT_INDEX[f"facing_{f}"]] for f in FACINGS]))]
    along, across = {"right": (dx, dy), "left": (-dx, dy), "up": (-dy, dx), "down": (dy, dx)}[
        facing
    ]
    if SWORD_REACH[0] < along < SWORD_REACH[1] and abs(across) < SWORD_SIDE:
        return int(Action.B if observation[SLOT_INDEX["sword_in_b"]] > 0.5 else Action.A)
    if abs(dx) >= abs(dy):
        return int(Action.RIGHT if dx > 0 else Action.LEFT)
    return int(Action.DOWN if dy > 0 else Action.UP)


@dataclass(frozen=True)
class TaughtReport:
    """A scripted teacher's data (the fighter's, the walker's): its transitions, the demo
    states it started from, its episodes from them, and how many were clean."""

    transitions: DemoTransitions
    starts: int
    episodes: int
    clean: int


def rooms(observations: np.ndarray) -> list[tuple[int, int, int]]:
    """Each observation's room: (indoor, map id, room id)."""
    columns = [SLOT_INDEX["indoor"], SLOT_INDEX["map_id"], SLOT_INDEX["room_id"]]
    scaled = np.rint(observations[:, columns] * np.array([1, 255, 255])).astype(int)
    return [(a, b, c) for a, b, c in scaled.tolist()]


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
                 lambda start, seed: _fight(start.state, env_config, seed))  # fmt: skip


Episode = tuple[list[np.ndarray], list[int]]


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
    return TaughtReport(
        DemoTransitions(np.asarray(observations, np.float32).reshape(-1, size),
                        np.asarray(chosen, np.int64), np.zeros(len(chosen), np.float32)),
        starts=len(starts), episodes=len(starts) * episodes, clean=clean,
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


DONE = -1
"""A teacher's choice that ends its episode as a clean one."""
UNCLONED = 1 << 8
"""Added to a teacher's action that is taken but not taught (waiting out a puff, a fade)."""


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


def _fight(state: bytes, env_config: EnvConfig, seed: int) -> Episode | None:
    """One fight from `state`, then the walk to the key the cleared room shows: their
    observations and actions, or None if it was not clean (a death, or too long)."""
    waited = 0

    def choose(env: ZeldaEnv, observation: np.ndarray) -> int | None:
        nonlocal waited
        action = fight_action(observation)
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
    key hall shows its key once its enemies are dead; the policy sees the key only when
    it is in front, so the walk to it is taught here, from wherever the fight ended)."""
    tiles = RamReader(env.gameboy.memory, banked=env.gameboy.rom.cgb).room_objects()
    raw = env.raw_state
    keys = [(x, y) for y, row in enumerate(tiles) for x, tile in enumerate(row)
            if tile == Metatile.KEY]  # fmt: skip
    if not keys:
        return None
    goal = min(keys, key=lambda cell: abs(cell[0] * 16 + 8 - raw.x) + abs(cell[1] * 16 + 8 - raw.y))
    try:
        button = next_step(tiles, (raw.x, raw.y), goal, tolerance=env.config.frame_skip // 2)
    except NoPathError:
        return None
    return int(BUTTON_ACTIONS.get(button, Action.NOOP))
