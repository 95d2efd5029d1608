"""The world map: every room the ROM shows, rendered once by the emulator and cached per ROM.

Rooms are found by replaying the walkthrough (the recorded one on the cartridge, the
controller's on a generated world) and then by
walking out of every room found through each edge, a few tiles apart. Each room is the screen's
play field (160x128, the HUD cut off) rendered with sprites switched off on a copy of the state,
so the map shows the game's own tiles without Link or enemies. A ROM without a walkthrough (the
user's own) starts from power-on; rooms the agents reach later are drawn by the page from the
positions alone.

The page lays rooms out on the game's grids: overworld rooms 16 to a row, indoor rooms 8 to a
row per indoor map (LADX's room numbering).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from koholint.baselines.recorder import RouteError
from koholint.baselines.world_route import world_walkthrough
from koholint.game.emulator import Button, GameBoy
from koholint.game.png import encode_png
from koholint.game.ram import GameplayType, MotionState
from koholint.game.rom import RomInfo, bundled_cartridge, read_rom
from koholint.game.state import RawState
from koholint.game.walkthrough import (
    Walkthrough,
    WalkthroughError,
    WalkthroughPlayer,
    load_walkthrough,
)
from koholint.game.worlds import WorldError

logger = logging.getLogger("console.worldmap")
MAP_SCHEMA_VERSION = 1
ROOM_WIDTH, ROOM_HEIGHT = 160, 128
LCDC, OBJ_ENABLE = 0xFF40, 0x02
CHECK_EVERY_FRAMES = 4
WALK_FRAMES = 240
SETTLE_FRAMES = 180
SIDESTEPS = (
    0,
    -16,
    16,
    -32,
    32,
    -48,
    48,
    -64,
    64,
)  # frames held sideways before walking out (1 px per frame)
EXPLORE_BUDGET_FRAMES = 200_000
DIRECTIONS = (Button.RIGHT, Button.LEFT, Button.UP, Button.DOWN)
SIDEWAYS = {Button.RIGHT: (Button.UP, Button.DOWN), Button.LEFT: (Button.UP, Button.DOWN),
            Button.UP: (Button.LEFT, Button.RIGHT), Button.DOWN: (Button.LEFT, Button.RIGHT)}  # fmt: skip

RoomKey = tuple[int, int, int]


def room_name(key: RoomKey) -> str:
    return "-".join(str(part) for part in key)


@dataclass
class WorldMap:
    rom: RomInfo
    rooms: dict[RoomKey, bytes]  # PNG per room

    def describe(self) -> dict[str, object]:
        return {
            "schema_version": MAP_SCHEMA_VERSION,
            "rom_sha256": self.rom.sha256,
            "rom_title": self.rom.title,
            "room_width": ROOM_WIDTH,
            "room_height": ROOM_HEIGHT,
            "rooms": [
                {"key": room_name(key), "indoor": key[0], "map": key[1], "room": key[2],
                 "image": f"/v1/map/rooms/{room_name(key)}.png"}
                for key in sorted(self.rooms)
            ],
        }  # fmt: skip


def _settled(raw: RawState) -> bool:
    return bool(
        raw.gameplay_type == GameplayType.WORLD
        and raw.transition == 0
        and raw.motion == MotionState.NORMAL
    )


def _capture(gameboy: GameBoy) -> np.ndarray:
    """The play field now, sprites off, without changing the game (a copy is rendered)."""
    saved, frame = gameboy.save_state(), gameboy.frame
    gameboy.memory[LCDC] = gameboy.memory[LCDC] & ~OBJ_ENABLE
    gameboy.tick(1, render=True)
    image = gameboy.screen_rgb()[:ROOM_HEIGHT]
    gameboy.load_state(saved)
    gameboy._frame = frame
    return image  # type: ignore[no-any-return]


class _Explorer:
    def __init__(self, gameboy: GameBoy) -> None:
        self.gameboy = gameboy
        self.images: dict[RoomKey, np.ndarray] = {}
        self.states: dict[RoomKey, bytes] = {}
        self.frames_left = EXPLORE_BUDGET_FRAMES

    def raw(self) -> RawState:
        return RawState(self.gameboy.memory, self.gameboy.rom.cgb)

    def note(self) -> RoomKey | None:
        """Capture the room Link stands in if it is settled and new; its key, else None."""
        raw = self.raw()
        if not _settled(raw) or raw.room_key in self.images:
            return None
        image = _capture(self.gameboy)
        if image.min() == image.max():  # still fading in: blank; a later look takes it
            return None
        self.images[raw.room_key] = image
        self.states[raw.room_key] = self.gameboy.save_state()
        return raw.room_key

    def replay_walkthrough(self) -> None:
        try:
            player = WalkthroughPlayer(self.gameboy, walkthrough_of(self.gameboy.rom))
        except WalkthroughError:
            logger.info("no walkthrough for ROM %s: the map starts empty", self.gameboy.rom.sha256)
            return
        total = player.walkthrough.frames
        while self.gameboy.frame < total:
            player.advance_to(min(self.gameboy.frame + CHECK_EVERY_FRAMES, total))
            self.note()

    def run(self, frames: int, buttons: int) -> None:
        self.gameboy.hold(buttons)
        self.gameboy.tick(frames)
        self.frames_left -= frames

    def walk_out(
        self, start: bytes, key: RoomKey, direction: Button, sidestep: int
    ) -> RoomKey | None:
        """From `start`, step sideways then walk towards `direction`; the new room found, if any."""
        self.gameboy.load_state(start)
        if sidestep:
            self.run(abs(sidestep), SIDEWAYS[direction][sidestep > 0])
        for _ in range(WALK_FRAMES // CHECK_EVERY_FRAMES):
            self.run(CHECK_EVERY_FRAMES, direction)
            if self.raw().room_key != key:
                break
        else:
            return None
        for _ in range(SETTLE_FRAMES // CHECK_EVERY_FRAMES):
            self.run(CHECK_EVERY_FRAMES, Button.NONE)
            found = self.note()
            if found is not None or _settled(self.raw()):
                return found
        return None

    def explore(self) -> None:
        """Walk out of every known room through each edge; new rooms join the queue."""
        if not self.states:
            self.run(600, Button.NONE)  # power-on: past the boot, maybe into play
            self.note()
        todo = deque(self.states)
        while todo and self.frames_left > 0:
            key = todo.popleft()
            for direction in DIRECTIONS:
                for sidestep in SIDESTEPS:
                    found = self.walk_out(self.states[key], key, direction, sidestep)
                    if found is not None:
                        todo.append(found)
                        break


def walkthrough_of(rom: RomInfo) -> Walkthrough:
    """The recorded walkthrough of the cartridge; the controller's on any other engine world
    (it reads the world from the ROM); WalkthroughError on a ROM that is not the engine's."""
    if rom.engine and not rom.is_bundled_cartridge:
        try:
            return world_walkthrough(rom)
        except (RouteError, WorldError) as error:
            raise WalkthroughError(f"the controller could not play {rom.path}: {error}") from error
    return load_walkthrough()


def render_rooms(rom: RomInfo) -> dict[RoomKey, bytes]:
    """Every room the walkthrough and the walks out of rooms reach, as PNG."""
    with GameBoy(rom=rom.path) as gameboy:
        explorer = _Explorer(gameboy)
        explorer.replay_walkthrough()
        explorer.explore()
    return {key: encode_png(image) for key, image in explorer.images.items()}


class MapCache:
    """The rendered rooms of one ROM on disk (``<dir>/<sha256>/``), rendered on first use."""

    def __init__(self, directory: Path, rom_path: str | None) -> None:
        self.directory = directory
        self.rom = read_rom(rom_path or bundled_cartridge())
        self._map: WorldMap | None = None
        self._lock = threading.Lock()

    def get(self) -> WorldMap:
        with self._lock:
            if self._map is None:
                self._map = self._load() or self._render()
            return self._map

    def _folder(self) -> Path:
        return self.directory / self.rom.sha256

    def _load(self) -> WorldMap | None:
        index = self._folder() / "rooms.json"
        if not index.exists():
            return None
        document = json.loads(index.read_text())
        if document.get("schema_version") != MAP_SCHEMA_VERSION:
            return None
        keys: list[RoomKey] = [(indoor, map_id, room) for indoor, map_id, room in document["rooms"]]
        rooms = {key: (self._folder() / f"{room_name(key)}.png").read_bytes() for key in keys}
        return WorldMap(self.rom, rooms)

    def _render(self) -> WorldMap:
        rooms = render_rooms(self.rom)
        folder = self._folder()
        folder.mkdir(parents=True, exist_ok=True)
        for key, png in rooms.items():
            (folder / f"{room_name(key)}.png").write_bytes(png)
        index = {
            "schema_version": MAP_SCHEMA_VERSION,
            "rooms": [list(key) for key in sorted(rooms)],
        }
        (folder / "rooms.json").write_text(json.dumps(index))
        logger.info("rendered %d rooms of ROM %s", len(rooms), self.rom.sha256)
        return WorldMap(self.rom, rooms)
