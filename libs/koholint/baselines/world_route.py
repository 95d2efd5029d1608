"""The walkthrough controller for any world: plays a cartridge world from power-on to the
credits, reading only RAM and the world's data.

After every move it reads where Link is and what he has done (the room from hMapRoom and its
map, the sword, the keys held, each room's puzzle, door and key flags), asks the world's
solver (``koholint.game.worldgen.solve``) for the shortest route from there and does its first
step with the recorder's moves (``koholint.baselines.recorder.Route``): leave by an exit, take
stairs, open the chest, push the block to the plate (``koholint.planning.puzzle.solve``), beat a
room's enemies and take its key, open a locked door, take the instrument. A death or a knock
off the way only means the next route starts elsewhere.
"""

from __future__ import annotations

from koholint.baselines.recorder import Route, RouteError
from koholint.game.emulator import Button, GameBoy
from koholint.game.navigation import DIRECTION_BUTTONS, STEPS, NoPathError, find_path
from koholint.game.opening import play_opening
from koholint.game.ram import (
    CARTRIDGE_SEED_ADDRESS,
    EntityType,
    GameplayType,
    InventoryItem,
    RamAddress,
    RoomFlag,
)
from koholint.game.rom import RomInfo
from koholint.game.tiles import STAIRS, Metatile
from koholint.game.walkthrough import Walkthrough
from koholint.game.worldgen import Progress, Step, solve
from koholint.game.worlds import World, decode_world, region_of
from koholint.planning import puzzle

SIDES = {"east": "right", "west": "left", "north": "up", "south": "down"}
MAX_FAILED_STEPS = 40
NPC_TYPES = frozenset({EntityType.ELDER, EntityType.SHOPKEEPER})


class WorldRoute(Route):
    """Route's moves plus the world: reads progress from RAM and plays the solver's route."""

    def __init__(self, gameboy: GameBoy, world: World) -> None:
        super().__init__(gameboy)
        self.world = world
        self.names = {room.key: room.name for room in world.rooms}
        self.rooms = {room.name: room for room in world.rooms}
        self._leaving = False

    def progress(self) -> Progress:
        sword = InventoryItem.SWORD in (
            self.byte(RamAddress.INVENTORY),
            self.byte(RamAddress.INVENTORY + 1),
        )
        flags = {name: self._flags(name) for name in self.rooms}
        return Progress(
            room=self.names[self.ram.room_key()],
            sword=sword,
            keys=self.byte(RamAddress.DUNGEON_SMALL_KEYS),
            solved=frozenset(n for n, f in flags.items() if f & RoomFlag.PUZZLE_SOLVED),
            opened=frozenset(n for n, f in flags.items() if f & RoomFlag.DOOR_OPEN),
            taken=frozenset(n for n, f in flags.items() if f & RoomFlag.KEY_TAKEN),
        )

    def _flags(self, name: str) -> int:
        room = self.rooms[name]
        table = RamAddress.INDOOR_ROOM_STATUS if room.indoor else RamAddress.OVERWORLD_ROOM_STATUS
        return self.byte(table + room.room_id)

    def path(
        self, goal: tuple[int, int], allow: frozenset[int] = frozenset()
    ) -> list[tuple[int, int]]:
        """Route's path, around the people too (they stop Link but are not in the tiles)."""
        tiles = self.ram.room_objects()
        for _, kind, x, y in self.ram.active_entities():
            if kind in NPC_TYPES:
                tiles[y // 16][x // 16] = Metatile.WALL
        try:
            return find_path(tiles, self.link_tile(), goal, allow)
        except NoPathError as error:
            raise RouteError(f"{error} in room {self.ram.room_key()}") from error

    def press(self, buttons: int, frames: int = 1) -> None:
        """Route's press; outside `leave` a direction that would cross the room's edge is
        dropped, so a chase or a step back never leaves the room by accident."""
        if not self._leaving and buttons & self._edge_buttons():
            buttons &= ~self._edge_buttons()
        super().press(buttons, frames)

    def _edge_buttons(self) -> int:
        if self.byte(RamAddress.GAMEPLAY_TYPE) != GameplayType.WORLD:
            return 0
        x, y = self.link()
        return (
            (Button.LEFT if x <= 6 else 0)
            | (Button.RIGHT if x >= 154 else 0)
            | (Button.UP if y <= 6 else 0)
            | (Button.DOWN if y >= 122 else 0)
        )

    def leave(self, direction: str, limit: int = 600) -> None:
        self._leaving = True
        try:
            super().leave(direction, limit)
        finally:
            self._leaving = False

    def won(self) -> bool:
        return self.byte(RamAddress.GAMEPLAY_TYPE) == GameplayType.CREDITS

    def play_step(self, step: Step) -> None:
        """Do one step of the solver's route in the current room."""
        if step.action in ("exit", "key", "door") and self.enemies() and self.progress().sword:
            self.fight()
        if step.action == "exit":
            self.leave(SIDES[step.direction])
        elif step.action == "stairs":
            self._take_stairs()
        elif step.action == "sword":
            self._open_chest()
        elif step.action == "puzzle":
            self._solve_puzzle()
        elif step.action == "key":
            if not self._flags(step.room) & RoomFlag.KEY_TAKEN:  # the fight may have walked on it
                self._take(Metatile.KEY)
        elif step.action == "door":
            self._open_door()
        else:
            self._take(Metatile.INSTRUMENT)
            self.wait_until(self.won, 60, "the credits")

    def _cell(self, kind: int) -> tuple[int, int]:
        cells = [
            (x, y)
            for y, row in enumerate(self.ram.room_objects())
            for x, t in enumerate(row)
            if t == kind
        ]
        if not cells:
            raise RouteError(f"no {Metatile(kind).name.lower()} in room {self.ram.room_key()}")
        return cells[0]

    def _take(self, kind: int) -> None:
        self.walk_to(self._cell(kind), allow=frozenset({kind}))
        self.wait(2)

    def _take_stairs(self) -> None:
        room = self.ram.room_key()
        tiles = self.ram.room_objects()
        stairs = next(
            (x, y) for y, row in enumerate(tiles) for x, t in enumerate(row) if t in STAIRS
        )
        self.walk_to(stairs, allow=STAIRS)
        self.wait_until(lambda: self.ram.room_key() != room and not self.busy(), 120, "the stairs")

    def _open_chest(self) -> None:
        x, y = self._cell(Metatile.CHEST)
        self.walk_to((x, y + 1))
        self.face("up")
        self.talk()

    def _solve_puzzle(self) -> None:
        pushes = puzzle.solve(
            tuple(tuple(row) for row in self.ram.room_objects()), self.link_tile()
        )
        if pushes is None:
            raise RouteError(f"the block in room {self.ram.room_key()} cannot reach its plate")
        for direction in pushes:
            bx, by = self._cell(Metatile.BLOCK)
            dx, dy = STEPS[direction]
            self.walk_to((bx - dx, by - dy))
            self.push(direction, 1)

    def _open_door(self) -> None:
        x, y = self._cell(Metatile.LOCKED_DOOR)
        inside = {(x, 0): "up", (x, 7): "down", (0, y): "left", (9, y): "right"}
        direction = inside.get((x, y))
        if direction is None:
            raise RouteError(f"the locked door at {(x, y)} is not on an edge")
        dx, dy = STEPS[direction]
        self.walk_to((x - dx, y - dy))
        for _ in range(30):
            if Metatile.LOCKED_DOOR not in {t for row in self.ram.room_objects() for t in row}:
                return
            self.press(DIRECTION_BUTTONS[direction])
        raise RouteError(f"the locked door in room {self.ram.room_key()} did not open")


def play_world(route: WorldRoute, max_frames: int = 60_000) -> None:
    """Power-on to the credits; RouteError when the budget of frames or failed steps runs out."""
    play_opening(route.press, route.ram, route.mark)
    failures = 0
    while not route.won():
        if route.walkthrough.frames > max_frames:
            raise RouteError(f"no win within {max_frames} frames")
        if route.busy():
            route.wait()
            continue
        step = solve(route.world, route.progress())[0]
        try:
            route.play_step(step)
        except RouteError:
            failures += 1
            if failures > MAX_FAILED_STEPS:
                raise
            route.press(Button.NONE, 8)


def play(gameboy: GameBoy, world: World, max_frames: int = 60_000) -> WorldRoute:
    """Play `world` (the ROM in `gameboy` must carry it) and return the recording route."""
    route = WorldRoute(gameboy, world)
    play_world(route, max_frames)
    return route


_walkthroughs: dict[tuple[str, int | None], Walkthrough] = {}


def world_walkthrough(rom: RomInfo, seed_byte: int | None = None) -> Walkthrough:
    """The controller's buttons from power-on to the credits on `rom`'s world (read from its
    world region), with the episode's seed byte written at power-on as the env writes it
    (None: left as power-on has it): the walkthrough baseline of any engine world. Kept per
    ROM and seed byte."""
    key = (rom.sha256, seed_byte)
    if key not in _walkthroughs:
        world = decode_world(region_of(rom.path.read_bytes()))
        with GameBoy(rom=rom.path) as gameboy:
            if seed_byte is not None:
                gameboy.memory[CARTRIDGE_SEED_ADDRESS] = seed_byte
            _walkthroughs[key] = play(gameboy, world).walkthrough
    return _walkthroughs[key]
