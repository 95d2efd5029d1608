"""Records the cartridge's walkthrough by playing it with a RAM-reading controller.

The controller knows the room layouts only through RAM (wRoomObjects) and walks
with breadth-first search over walkable tiles; it talks, opens the chest, buys a
heart container, solves the block puzzle, fights, takes the key, opens the door
and takes the instrument. Every frame's buttons are recorded, so the result
replays blind from power-on. Regenerate with ``koholint cartridge record``.
"""

from __future__ import annotations

from collections.abc import Callable

from koholint.game.emulator import Button, GameBoy
from koholint.game.navigation import (
    DIRECTION_BUTTONS,
    FACING,
    NoPathError,
    edge_cells,
    find_path,
    steer,
    tile_center,
)
from koholint.game.opening import play_opening
from koholint.game.ram import (
    ENEMY_TYPES,
    ROOM_HEIGHT,
    ROOM_WIDTH,
    DialogState,
    EntityStatus,
    GameplayType,
    MotionState,
    RamAddress,
)
from koholint.game.states import STATE_NAMES
from koholint.game.tiles import WALKABLE, Metatile
from koholint.game.walkthrough import Walkthrough


class RouteError(RuntimeError):
    """The controller could not make progress; the message says where."""


class Route:
    """A controller that plays the cartridge and records every frame's buttons."""

    def __init__(self, gameboy: GameBoy) -> None:
        self.gameboy = gameboy
        self.ram = gameboy.ram
        self.walkthrough = Walkthrough(rom_sha256=gameboy.rom.sha256)
        self.states: dict[str, bytes] = {}
        self._health = 0
        self._kills = 0

    # -- recording --------------------------------------------------------
    def press(self, buttons: int, frames: int = 1) -> None:
        self.gameboy.hold(buttons)
        self.gameboy.tick(frames)
        self.walkthrough.append(int(buttons), frames)
        self._mark_events()

    def _mark_events(self) -> None:
        """Mark the first damage taken and the first enemy killed as they happen."""
        health, kills = self.byte(RamAddress.HEALTH), self.byte(RamAddress.KILL_COUNT)
        if health < self._health and not self.has_mark("damage_taken"):
            self.mark("damage_taken")
        if kills > self._kills and not self.has_mark("enemy_killed"):
            self.mark("enemy_killed")
        self._health, self._kills = health, kills

    def has_mark(self, name: str) -> bool:
        return any(mark == name for mark, _ in self.walkthrough.marks)

    def wait(self, frames: int = 1) -> None:
        self.press(Button.NONE, frames)

    def tap(self, buttons: int) -> None:
        """Press for one frame and release for one, so the game sees a new press."""
        self.press(buttons)
        self.wait()

    def mark(self, name: str) -> None:
        self.walkthrough.mark(name)
        if name in STATE_NAMES:
            self.states[name] = self.gameboy.save_state()

    # -- reading ----------------------------------------------------------
    def byte(self, address: int) -> int:
        return self.ram.byte(address)

    def link(self) -> tuple[int, int]:
        return self.ram.link_position()

    def link_tile(self) -> tuple[int, int]:
        x, y = self.link()
        return x // 16, y // 16

    def busy(self) -> bool:
        """True while the game ignores walking: transitions, fades, dialogs, passing out."""
        return bool(
            self.byte(RamAddress.ROOM_TRANSITION_STATE)
            or self.byte(RamAddress.LINK_MOTION_STATE) != MotionState.NORMAL
            or self.ram.dialog_state()
        )

    def enemies(self) -> list[tuple[int, int, int]]:
        return [
            (slot, x, y)
            for slot, kind, x, y in self.ram.active_entities()
            if kind in ENEMY_TYPES
            and self.byte(RamAddress.ENTITIES_STATUS + slot) == EntityStatus.ACTIVE
        ]

    def wait_until(self, condition: Callable[[], bool], limit: int, what: str) -> None:
        for _ in range(limit):
            if condition():
                return
            self.wait()
        raise RouteError(f"timed out after {limit} frames waiting for {what}")

    # -- moving -----------------------------------------------------------
    def path(
        self, goal: tuple[int, int], allow: frozenset[int] = frozenset()
    ) -> list[tuple[int, int]]:
        try:
            return find_path(self.ram.room_objects(), self.link_tile(), goal, allow)
        except NoPathError as error:
            raise RouteError(f"{error} in room {self.ram.room_key()}") from error

    def step_toward(self, target_x: int, target_y: int, axis_first: str) -> None:
        """One frame of movement: align the other axis first, then move along `axis_first`."""
        self.press(steer(self.link(), (target_x, target_y), axis_first))

    def walk_to(
        self, tile: tuple[int, int], limit: int = 1500, allow: frozenset[int] = frozenset()
    ) -> None:
        """Walk to the centre of `tile` in the current room."""
        room = self.ram.room_key()
        goal_x, goal_y = tile_center(tile[0]), tile_center(tile[1])
        for _ in range(limit):
            if (
                self.ram.room_key() != room
                or self.byte(RamAddress.GAMEPLAY_TYPE) != GameplayType.WORLD
            ):
                return
            if self.busy():
                self.wait()
                continue
            if self.link() == (goal_x, goal_y):
                return
            route = self.path(tile, allow)
            if len(route) == 1:
                self.step_toward(goal_x, goal_y, "x")
                continue
            here, nxt = route[0], route[1]
            axis = "x" if nxt[1] == here[1] else "y"
            self.step_toward(tile_center(nxt[0]), tile_center(nxt[1]), axis)
        raise RouteError(f"could not reach {tile} in room {room} within {limit} frames")

    def face(self, direction: str) -> None:
        if self.byte(RamAddress.LINK_DIRECTION) != FACING[direction]:
            self.tap(DIRECTION_BUTTONS[direction])

    def leave(self, direction: str, limit: int = 600) -> None:
        """Walk through the room's opening on the `direction` edge into the next room."""
        room = self.ram.room_key()
        edge = edge_cells(self.ram.room_objects(), direction)
        if not edge:
            raise RouteError(f"room {room} has no opening on the {direction} edge")
        self.walk_to(edge[0])
        for _ in range(limit):
            if self.ram.room_key() != room:
                break
            self.press(DIRECTION_BUTTONS[direction])
        else:
            raise RouteError(f"did not leave room {room} going {direction}")
        self.wait_until(lambda: not self.busy(), 120, "the room transition to end")

    # -- actions ----------------------------------------------------------
    def talk(self, choice: int | None = None, limit: int = 3000) -> None:
        """Press A, then read the dialog through, answering a choice with `choice`."""
        self.tap(Button.A)
        if not self.ram.dialog_state():
            raise RouteError("pressing A opened no dialog")
        self.dialog(choice, limit)

    def dialog(self, choice: int | None = None, limit: int = 3000) -> None:
        for _ in range(limit):
            state = self.ram.dialog_state()
            if state == DialogState.CLOSED:
                return
            if state in (DialogState.WAIT_FOR_A, DialogState.END):
                self.tap(Button.A)
            elif state == DialogState.CHOICE:
                if choice is None:
                    raise RouteError("a dialog asked a question the route did not expect")
                self.choose(choice)
            else:
                self.wait()
        raise RouteError("dialog did not close")

    def choose(self, choice: int) -> None:
        """Move the cursor to the other answer and back (both directions), then to `choice`."""
        self.tap(Button.RIGHT)
        self.tap(Button.LEFT)
        while self.byte(RamAddress.DIALOG_ASK_SELECTION) != choice:
            self.tap(Button.RIGHT)
        self.mark("choice_made")
        self.tap(Button.A)

    def swing(self) -> None:
        self.tap(Button.B)
        self.wait(12)

    def push(self, direction: str, pushes: int, limit: int = 400) -> None:
        """Hold `direction` against the block until it has moved `pushes` tiles."""
        for _ in range(pushes):
            before = self.ram.room_objects()
            for _ in range(limit):
                self.press(DIRECTION_BUTTONS[direction])
                if self.ram.room_objects() != before:
                    break
            else:
                raise RouteError(f"the block did not move pushing {direction}")
        self.wait()

    def take_hit(self, limit: int = 1200) -> None:
        """Walk into the nearest enemy until it hurts Link (to show damage in the walkthrough)."""
        health = self.byte(RamAddress.HEALTH)
        for _ in range(limit):
            if self.byte(RamAddress.HEALTH) < health:
                if self.byte(RamAddress.LINK_MOTION_STATE) != MotionState.PASS_OUT:
                    self.wait_until(lambda: not self.busy(), 60, "the knockback to end")
                return
            enemies = self.enemies()
            if not enemies or self.busy():
                self.wait()
                continue
            x, y = self.link()
            _, ex, ey = min(enemies, key=lambda e: abs(e[1] - x) + abs(e[2] - y))
            if abs(ex - x) + abs(ey - y) > 40:
                self.approach(x, y, ex, ey)
            else:
                self.step_toward(ex, ey, "x" if abs(ex - x) < abs(ey - y) else "y")
        raise RouteError("no enemy hurt Link")

    def fight(self, limit: int = 6000) -> None:
        """Chase and strike every enemy in the room (stop if the chase left it)."""
        room = self.ram.room_key()
        for _ in range(limit):
            if self.ram.room_key() != room:
                return
            enemies = self.enemies()
            if not enemies:
                self.wait(16)
                return
            if self.busy():
                self.wait()
                continue
            x, y = self.link()
            _, ex, ey = min(enemies, key=lambda e: abs(e[1] - x) + abs(e[2] - y))
            self.engage(x, y, ex, ey)
        raise RouteError(f"enemies left in room {self.ram.room_key()} after {limit} frames")

    def engage(self, x: int, y: int, ex: int, ey: int) -> None:
        dx, dy = ex - x, ey - y
        if abs(dx) <= 6 and 8 <= abs(dy) <= 22:
            self.face("down" if dy > 0 else "up")
            self.swing()
        elif abs(dy) <= 6 and 8 <= abs(dx) <= 22:
            self.face("right" if dx > 0 else "left")
            self.swing()
        elif abs(dx) < 8 and abs(dy) < 8:
            self.press(Button.UP if dy > 0 else Button.DOWN)  # too close: back off
        else:
            self.approach(x, y, ex, ey)

    def approach(self, x: int, y: int, ex: int, ey: int) -> None:
        """One frame toward a striking spot 16 px from the enemy along the longer axis."""
        if abs(ex - x) >= abs(ey - y):
            goal = (ex - 16 if ex > x else ex + 16, ey)
        else:
            goal = (ex, ey - 16 if ey > y else ey + 16)
        goal_tile = (
            min(max(goal[0] // 16, 0), ROOM_WIDTH - 1),
            min(max(goal[1] // 16, 0), ROOM_HEIGHT - 1),
        )
        tiles = self.ram.room_objects()
        if tiles[goal_tile[1]][goal_tile[0]] not in WALKABLE:
            goal_tile = (ex // 16, ey // 16)
        try:
            route = self.path(goal_tile)
        except RouteError:
            self.wait()
            return
        if len(route) > 1:
            here, nxt = route[0], route[1]
            axis = "x" if nxt[1] == here[1] else "y"
            self.step_toward(tile_center(nxt[0]), tile_center(nxt[1]), axis)
        else:
            self.step_toward(goal[0], goal[1], "x" if abs(ex - x) >= abs(ey - y) else "y")


def play_route(route: Route) -> None:
    """The whole game, from power-on to the credits."""
    ram = route.ram
    play_opening(route.press, ram, route.mark)
    # Village: the elder's multi-page dialog.
    route.walk_to((6, 3))
    route.face("up")
    route.mark("before_npc")
    route.tap(Button.A)
    route.mark("npc_dialog_open")
    route.dialog()
    route.mark("npc_dialog_closed")
    # West: the sword.
    route.leave("left")
    route.walk_to((4, 3))
    route.face("up")
    route.mark("before_chest")
    route.talk()
    route.mark("sword_obtained")
    route.leave("right")
    # North, east and south for rupees, then the shop's question.
    route.leave("up")
    route.take_hit()
    route.fight()
    route.leave("right")
    route.fight()
    route.walk_to((4, 4))
    route.leave("down")
    route.walk_to((5, 4))
    route.walk_to((4, 3))
    route.face("up")
    route.mark("before_shop")
    route.talk(choice=0)
    route.mark("heart_bought")
    # Back to the crossroads and north to the puzzle.
    route.leave("left")
    route.leave("up")
    route.leave("up")
    route.mark("before_puzzle")
    route.walk_to((2, 2))
    route.push("right", 2)
    route.walk_to((5, 1), allow=frozenset())
    route.push("down", 3)
    route.mark("puzzle_solved")
    route.leave("right")
    route.walk_to((5, 3), allow=frozenset({Metatile.STAIRS_DOWN}))
    route.wait_until(
        lambda: ram.byte(RamAddress.IS_INDOOR) == 1 and not route.busy(), 120, "the dungeon"
    )
    route.mark("dungeon_entrance")
    route.leave("up")
    route.fight()
    route.walk_to((5, 4))
    route.mark("key_taken")
    route.leave("right")
    route.walk_to((4, 1))
    for _ in range(30):
        if ram.room_objects()[0][4] != Metatile.LOCKED_DOOR:
            break
        route.press(Button.UP)
    route.mark("door_unlocked")
    route.leave("up")
    route.mark("last_room")
    route.walk_to((5, 2), allow=frozenset({Metatile.INSTRUMENT}))
    route.wait_until(
        lambda: ram.byte(RamAddress.GAMEPLAY_TYPE) == GameplayType.CREDITS, 60, "the credits"
    )
    route.wait(30)
    route.mark("won")


def record(gameboy: GameBoy) -> Route:
    """Play the route on a fresh emulator; the Route holds the walkthrough and states."""
    route = Route(gameboy)
    play_route(route)
    return route
