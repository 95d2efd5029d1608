"""Baseline policies by name: the figures learning must beat, and the scripted winner.

- ``noop``: never presses anything.
- ``random``: a uniformly random action each step (its own seeded RNG).
- ``walkthrough``: the recorded walkthrough, one frame per step (needs ``frame_skip=1`` and a
  power-on start: :data:`WALKTHROUGH_ENV` gives the settings).
- ``explorer``: walks to the exits of the rooms it has seen least, swings at enemies that come
  close and talks to people in front of it; reads the room from RAM like the walkthrough
  recorder does.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

import numpy as np

from koholint.env.encoding import SLOT_INDEX
from koholint.env.zelda import Action, ZeldaEnv
from koholint.game.emulator import Button
from koholint.game.navigation import NoPathError, edge_cells, next_step
from koholint.game.ram import CARTRIDGE_SEED_ADDRESS, RamReader
from koholint.game.walkthrough import Walkthrough, load_walkthrough

POLICY_NAMES = ("noop", "random", "walkthrough", "explorer")
WALKTHROUGH_ENV: dict[str, Any] = {
    "frame_skip": 1,
    "start_state": None,
    "sticky_action_probability": 0.0,
    "latch_steps": 1,
}
BUTTON_ACTION = {
    int(Button.NONE): Action.NOOP, int(Button.UP): Action.UP, int(Button.DOWN): Action.DOWN,
    int(Button.LEFT): Action.LEFT, int(Button.RIGHT): Action.RIGHT, int(Button.A): Action.A,
    int(Button.B): Action.B, int(Button.START): Action.START, int(Button.SELECT): Action.SELECT,
}  # fmt: skip
EXIT_DIRECTIONS = ("up", "down", "left", "right")
DIRECTION_ACTION = {
    "up": Action.UP,
    "down": Action.DOWN,
    "left": Action.LEFT,
    "right": Action.RIGHT,
}


class UnknownPolicyError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


class Policy(Protocol):
    def reset(self, env: ZeldaEnv, seed: int) -> None: ...

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> int: ...


class NoopPolicy:
    def reset(self, env: ZeldaEnv, seed: int) -> None:
        pass

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> int:
        return int(Action.NOOP)


class RandomPolicy:
    def reset(self, env: ZeldaEnv, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> int:
        return int(self._rng.integers(len(Action)))


class WalkthroughPolicy:
    """Plays the recorded walkthrough frame by frame (every recorded frame holds one button)."""

    def reset(self, env: ZeldaEnv, seed: int) -> None:
        if env.config.frame_skip != 1 or env.config.start_state is not None:
            raise ValueError(f"the walkthrough policy needs an env made with {WALKTHROUGH_ENV}")
        walkthrough = self._walkthrough(env)
        self._actions = [
            BUTTON_ACTION[mask] for mask, count in walkthrough.inputs for _ in range(count)
        ]
        self._index = 0

    @staticmethod
    def _walkthrough(env: ZeldaEnv) -> Walkthrough:
        """The recorded one on the bundled cartridge; the controller's on any other world."""
        from koholint.baselines.world_route import world_walkthrough

        rom = env.gameboy.rom
        if rom.is_bundled_cartridge:
            return load_walkthrough()
        if not rom.engine:
            raise ValueError(f"{rom.path}: the walkthrough plays the engine's worlds only")
        return world_walkthrough(rom, env.gameboy.memory[CARTRIDGE_SEED_ADDRESS])

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> int:
        action = self._actions[self._index] if self._index < len(self._actions) else Action.NOOP
        self._index += 1
        return int(action)


class ExplorerPolicy:
    """Leaves each room by the exit it has taken least, preferring rooms it has seen least."""

    def reset(self, env: ZeldaEnv, seed: int) -> None:
        self._env = env
        self._rng = np.random.default_rng(seed)
        self._room_visits: Counter[tuple[int, int, int]] = Counter()
        self._exits_taken: Counter[tuple[tuple[int, int, int], str]] = Counter()
        self._leads_to: dict[tuple[tuple[int, int, int], str], tuple[int, int, int]] = {}
        self._room: tuple[int, int, int] | None = None
        self._target: str | None = None
        self._tolerance = env.config.frame_skip // 2
        self._last_position: tuple[int, int] | None = None
        self._still = 0
        self._wander = 0

    def _ram(self) -> RamReader:
        return RamReader(self._env.gameboy.memory, banked=self._env.gameboy.rom.cgb)

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> int:
        state = info["state"]
        room = info["room_key"]
        if room != self._room:
            self._arrive(room)
        if state["dialog"]["open"]:
            return (
                int(Action.A)
                if state["dialog"]["waiting_for_a"] or state["dialog"]["choice_shown"]
                else int(Action.NOOP)
            )
        if state["mode"] == "title":
            return int(Action.START)
        if state["link"]["motion_state"] or state["in_transition"]:
            return int(Action.NOOP)
        strike = self._strike(observation)
        if strike is not None:
            return strike
        if (
            observation[SLOT_INDEX["front_chest"]] > 0.5
            and observation[SLOT_INDEX["facing_up"]] > 0.5
        ):
            return int(Action.A)  # open it
        if self._unstick(state):
            return int(self._rng.integers(1, 5))
        return self._walk(state)

    def _unstick(self, state: dict[str, Any]) -> bool:
        """After 12 steps without moving (an NPC or enemy in the way), wander for 6 steps."""
        position = (state["link"]["x"], state["link"]["y"])
        self._still = self._still + 1 if position == self._last_position else 0
        self._last_position = position
        if self._still >= 12:
            self._still, self._wander = 0, 6
        if self._wander:
            self._wander -= 1
            return True
        return False

    def _arrive(self, room: tuple[int, int, int]) -> None:
        if self._room is not None and self._target is not None:
            self._leads_to[(self._room, self._target)] = room
        self._room = room
        self._room_visits[room] += 1
        self._target = self._choose_exit(room)

    def _choose_exit(self, room: tuple[int, int, int]) -> str | None:
        tiles = self._ram().room_objects()
        exits = [d for d in EXIT_DIRECTIONS if edge_cells(tiles, d)]
        if not exits:
            return None

        def score(direction: str) -> tuple[int, int, float]:
            neighbour = self._leads_to.get((room, direction))
            seen = self._room_visits[neighbour] if neighbour else 0
            return (seen, self._exits_taken[(room, direction)], float(self._rng.random()))

        choice = min(exits, key=score)
        self._exits_taken[(room, choice)] += 1
        return choice

    def _strike(self, observation: np.ndarray) -> int | None:
        """Swing when an enemy is close and roughly in front (observation slots 53-55)."""
        if observation[SLOT_INDEX["enemy_nearby"]] < 0.5:
            return None
        dx = observation[SLOT_INDEX["nearest_enemy_dx"]] * 160
        dy = observation[SLOT_INDEX["nearest_enemy_dy"]] * 128
        if abs(dx) + abs(dy) > 28:
            return None
        facing = ("right", "left", "up", "down")[int(np.argmax(observation[9:13]))]
        want = (
            ("right" if dx > 0 else "left") if abs(dx) >= abs(dy) else ("down" if dy > 0 else "up")
        )
        if want != facing:
            return int(DIRECTION_ACTION[want])
        return int(Action.B if observation[SLOT_INDEX["sword_in_b"]] > 0.5 else Action.A)

    def _walk(self, state: dict[str, Any]) -> int:
        if self._target is None:
            return int(self._rng.integers(1, 5))
        tiles = self._ram().room_objects()
        cells = edge_cells(tiles, self._target)
        position = (state["link"]["x"], state["link"]["y"])
        here = (position[0] // 16, position[1] // 16)
        goal = min(cells, key=lambda c: abs(c[0] - here[0]) + abs(c[1] - here[1]))
        if here == goal:
            return int(DIRECTION_ACTION[self._target])
        try:
            button = next_step(tiles, position, goal, tolerance=self._tolerance)
        except NoPathError:
            self._target = self._choose_exit(self._room) if self._room else None
            return int(self._rng.integers(1, 5))
        return int(BUTTON_ACTION[int(button)])


def make_policy(name: str) -> Policy:
    policies: dict[str, type[Policy]] = {
        "noop": NoopPolicy,
        "random": RandomPolicy,
        "walkthrough": WalkthroughPolicy,
        "explorer": ExplorerPolicy,
    }
    if name not in policies:
        raise UnknownPolicyError(
            f"unknown policy {name!r}; choose one of {', '.join(POLICY_NAMES)}"
        )
    return policies[name]()
