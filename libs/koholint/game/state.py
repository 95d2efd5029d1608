"""The structured game state: one pydantic model read from RAM, and its fast reader.

``GameState`` is the contract every service validates against; its JSON Schema is
checked in (``schemas/game_state.schema.json``, regenerate with
``koholint schemas export``). The environment's hot path never builds the model:
``RawState.read`` takes the few bytes it needs in one pass, ``RawState.to_dict``
gives the same data as a plain dict that validates as a ``GameState``.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from koholint.game.ram import (
    DIALOG_BOX_AT_BOTTOM,
    ENEMY_TYPES,
    ENTITY_SLOTS,
    HAS_INSTRUMENT_BIT,
    ROOM_FLAG_TABLES,
    RamAddress,
    RoomFlag,
)

STATE_SCHEMA_VERSION = 1
DIRECTIONS = ("right", "left", "up", "down")
# The opening's screens (title, file select 0x02, name entry 0x03) are one mode: the planner's.
MODES = {0x00: "title", 0x01: "credits", 0x02: "title", 0x03: "title", 0x0B: "world"}
OAM = 0xFE00
OAM_ENTRIES = 40
DIALOG_PRINTING_STATES = range(1, 9)
DIALOG_WAIT_STATES = (0x09, 0x0C)
DIALOG_CHOICE_STATE = 0x0D


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RoomKey(_Model):
    """A room: hMapRoom repeats across maps, so the key is (indoor, map, room)."""

    indoor: bool
    map: int = Field(ge=0, le=255)
    room: int = Field(ge=0, le=255)


class LinkState(_Model):
    x: int = Field(ge=0, le=255, description="centre, room pixels")
    y: int = Field(ge=0, le=255, description="centre, room pixels")
    tile_x: int = Field(ge=0, le=15)
    tile_y: int = Field(ge=0, le=15)
    direction: Literal["right", "left", "up", "down"]
    motion_state: int = Field(
        ge=0, le=255, description="wLinkMotionState: 0 normal, 3/4 fade, 7 pass out"
    )


class DialogInfo(_Model):
    open: bool
    printing: bool
    waiting_for_a: bool
    choice_shown: bool
    selection: int = Field(ge=0, le=255)
    raw_state: int = Field(ge=0, le=255, description="wDialogState")


class OamInfo(_Model):
    visible_sprites: int = Field(ge=0, le=OAM_ENTRIES)
    link_visible: bool


class Entity(_Model):
    slot: int = Field(ge=0, lt=ENTITY_SLOTS)
    type: int = Field(ge=0, le=255)
    x: int = Field(ge=0, le=255)
    y: int = Field(ge=0, le=255)
    status: int = Field(ge=0, le=255)
    enemy: bool


class Inventory(_Model):
    b_slot: int = Field(ge=0, le=255)
    a_slot: int = Field(ge=0, le=255)
    items: int = Field(ge=0, description="bit n set when item id n is in any slot")


class GameState(_Model):
    """Everything a service needs to know about the game at one frame."""

    schema_version: Literal[1] = 1
    room: RoomKey
    link: LinkState
    dialog: DialogInfo
    mode: Literal["title", "world", "credits", "other"]
    gameplay_type: int = Field(ge=0, le=255)
    gameplay_subtype: int = Field(ge=0, le=255)
    in_transition: bool
    oam: OamInfo
    entities: list[Entity] = Field(max_length=ENTITY_SLOTS)
    inventory: Inventory
    health: int = Field(ge=0, le=255, description="8 per heart")
    max_hearts: int = Field(ge=0, le=255)
    rupees: int = Field(ge=0, le=999)
    keys: int = Field(ge=0, le=255)
    has_instrument: bool
    room_status: int = Field(ge=0, le=255)
    rooms_visited: int = Field(ge=0, le=512)
    kills: int = Field(ge=0, le=255)
    deaths: int = Field(ge=0, le=255)
    progress: int | None = Field(
        None, ge=0, description="progress level along the route (koholint.env.zelda.progress_level)"
    )


class RawState:
    """The bytes the environment needs each step, read in one pass (no pydantic, few objects)."""

    __slots__ = (
        "indoor", "map_id", "room", "x", "y", "direction", "motion", "transition", "dialog",
        "selection", "gameplay_type", "gameplay_subtype", "health", "max_hearts", "rupees",
        "keys", "instrument", "inventory", "room_status", "kills", "deaths", "invincible",
        "entity_status", "entity_type", "entity_x", "entity_y", "neighbours", "front",
        "frame", "_memory",
    )  # fmt: skip

    def __init__(self, memory: Any, banked: bool = False) -> None:
        """Read from PyBoy's memory; `banked` reads D000-DFFF from WRAM bank 1 (the DX ROM)."""
        read = memory.__getitem__
        high = (lambda address: memory[1, address]) if banked else read
        self._memory = memory
        self.indoor = high(_IS_INDOOR)
        self.map_id = read(_MAP_ID)
        self.room = read(_MAP_ROOM)
        self.x = x = read(_LINK_X)
        self.y = y = read(_LINK_Y)
        self.direction = read(_LINK_DIRECTION) & 3
        self.motion = read(_MOTION)
        self.transition = read(_TRANSITION)
        self.dialog = read(_DIALOG)
        self.selection = read(_SELECTION)
        self.gameplay_type = high(_GAMEPLAY_TYPE)
        self.gameplay_subtype = high(_GAMEPLAY_SUBTYPE)
        self.health = high(_HEALTH)
        self.max_hearts = high(_MAX_HEARTS)
        rupees_high, rupees_low = high(_RUPEES_HIGH), high(_RUPEES_LOW)
        self.rupees = (rupees_high & 0x0F) * 100 + (rupees_low >> 4) * 10 + (rupees_low & 0x0F)
        self.keys = high(_KEYS)
        self.instrument = bool(high(_INSTRUMENT) & HAS_INSTRUMENT_BIT)
        self.inventory = (high(_INVENTORY), high(_INVENTORY + 1))
        self.room_status = read(_ROOM_STATUS)
        self.kills = high(_KILLS)
        self.deaths = high(_DEATHS)
        self.invincible = high(_INVINCIBLE)
        self.entity_status = memory[_ENTITY_STATUS : _ENTITY_STATUS + 16]
        self.entity_type = memory[_ENTITY_TYPE : _ENTITY_TYPE + 16]
        self.entity_x = memory[_ENTITY_X : _ENTITY_X + 16]
        self.entity_y = memory[_ENTITY_Y : _ENTITY_Y + 16]
        self.neighbours, self.front = self._read_tiles(high, x >> 4, y >> 4)
        self.frame = read(_FRAME)

    @classmethod
    def from_fields(cls, values: list[int], memory: Any) -> RawState:
        """The state from a snapshot in ``RAW_FIELDS`` order (the compiled fast path's
        ``Taps.fields()``): the same values the constructor reads, without reading RAM."""
        raw = cls.__new__(cls)
        (
            raw.indoor, raw.map_id, raw.room, raw.x, raw.y, raw.direction, raw.motion,
            raw.transition, raw.dialog, raw.selection, raw.gameplay_type, raw.gameplay_subtype,
            raw.health, raw.max_hearts, raw.rupees, raw.keys, instrument, b_slot, a_slot,
            raw.room_status, raw.kills, raw.deaths, raw.invincible, raw.frame, raw.front,
        ) = values[:25]  # fmt: skip
        raw.instrument = bool(instrument)
        raw.inventory = (b_slot, a_slot)
        raw.neighbours = values[25:33]
        raw.entity_status = values[33:49]
        raw.entity_type = values[49:65]
        raw.entity_x = values[65:81]
        raw.entity_y = values[81:97]
        raw._memory = memory
        return raw

    def _read_tiles(self, high: Any, tile_x: int, tile_y: int) -> tuple[list[int], int]:
        """Room objects around Link (N, NE, E, SE, S, SW, W, NW; -1 outside) and the one in front."""
        tiles = []
        for dx, dy in _NEIGHBOUR_OFFSETS:
            tx, ty = tile_x + dx, tile_y + dy
            if 0 <= tx < 10 and 0 <= ty < 8:
                tiles.append(high(_ROOM_OBJECTS + (ty << 4) + tx))
            else:
                tiles.append(-1)
        return tiles, tiles[_FRONT_INDEX[self.direction]]

    @property
    def room_key(self) -> tuple[int, int, int]:
        return (self.indoor, self.map_id if self.indoor else 0, self.room)

    def enemies(self) -> list[tuple[int, int]]:
        """(x, y) of every active enemy."""
        return [
            (self.entity_x[slot], self.entity_y[slot])
            for slot in range(ENTITY_SLOTS)
            if self.entity_status[slot] == 5 and self.entity_type[slot] in _ENEMY_TYPE_IDS
        ]

    def oam(self) -> dict[str, Any]:
        """Sprites on screen, and whether one is drawn where Link stands (OAM y = centre + 8,
        x = centre, within 8 px). Read on demand: OAM is not needed by the observation."""
        oam = self._memory[OAM : OAM + 4 * OAM_ENTRIES]
        ys, xs = oam[0::4], oam[1::4]
        sx, sy = self.x, self.y + 8
        return {
            "visible_sprites": sum(
                1 for oy, ox in zip(ys, xs, strict=True) if 0 < oy < 160 and 0 < ox < 168
            ),
            "link_visible": any(
                abs(oy - sy) <= 8 and abs(ox - sx) <= 8 for oy, ox in zip(ys, xs, strict=True)
            ),
        }

    @property
    def items_mask(self) -> int:
        """The items in Link's slots as a bit mask (bit n: item n)."""
        items = 0
        for item in self.inventory:
            if item:
                items |= 1 << item
        return items

    def to_dict(self, rooms_visited: int) -> dict[str, Any]:
        """The state as plain data that validates as a GameState."""
        dialog = self.dialog & ~DIALOG_BOX_AT_BOTTOM & 0xFF
        items = self.items_mask
        return {
            "schema_version": STATE_SCHEMA_VERSION,
            "room": {"indoor": bool(self.indoor), "map": self.room_key[1], "room": self.room},
            "link": {
                "x": self.x,
                "y": self.y,
                "tile_x": self.x >> 4,
                "tile_y": self.y >> 4,
                "direction": DIRECTIONS[self.direction],
                "motion_state": self.motion,
            },  # fmt: skip
            "dialog": {
                "open": dialog != 0,
                "printing": dialog in DIALOG_PRINTING_STATES,
                "waiting_for_a": dialog in DIALOG_WAIT_STATES,
                "choice_shown": dialog == DIALOG_CHOICE_STATE,
                "selection": self.selection,
                "raw_state": self.dialog,
            },
            "mode": MODES.get(self.gameplay_type, "other"),
            "gameplay_type": self.gameplay_type,
            "gameplay_subtype": self.gameplay_subtype,
            "in_transition": self.transition != 0,
            "oam": self.oam(),
            "entities": [
                {
                    "slot": slot,
                    "type": self.entity_type[slot],
                    "x": self.entity_x[slot],
                    "y": self.entity_y[slot],
                    "status": self.entity_status[slot],
                    "enemy": self.entity_type[slot] in _ENEMY_TYPE_IDS,
                }  # fmt: skip
                for slot in range(ENTITY_SLOTS)
                if self.entity_status[slot]
            ],
            "inventory": {"b_slot": self.inventory[0], "a_slot": self.inventory[1], "items": items},
            "health": self.health,
            "max_hearts": self.max_hearts,
            "rupees": min(self.rupees, 999),
            "keys": self.keys,
            "has_instrument": self.instrument,
            "room_status": self.room_status,
            "rooms_visited": rooms_visited,
            "kills": self.kills,
            "deaths": self.deaths,
        }


# The order of RawState.from_fields: scalars, then the 8 neighbours, then the entity tables.
RAW_FIELDS = (
    "indoor", "map_id", "room", "x", "y", "direction", "motion", "transition", "dialog",
    "selection", "gameplay_type", "gameplay_subtype", "health", "max_hearts", "rupees", "keys",
    "instrument", "b_slot", "a_slot", "room_status", "kills", "deaths", "invincible", "frame",
    "front", *(f"neighbour_{index}" for index in range(8)),
    *(f"entity_{table}_{slot}" for table in ("status", "type", "x", "y") for slot in range(16)),
)  # fmt: skip

# Plain ints: IntEnum members are slower to look up and to pass to PyBoy's memory.
_IS_INDOOR, _MAP_ID, _MAP_ROOM = (
    int(RamAddress.IS_INDOOR),
    int(RamAddress.MAP_ID),
    int(RamAddress.MAP_ROOM),
)
_LINK_X, _LINK_Y, _LINK_DIRECTION = (
    int(RamAddress.LINK_X),
    int(RamAddress.LINK_Y),
    int(RamAddress.LINK_DIRECTION),
)
_MOTION, _TRANSITION = int(RamAddress.LINK_MOTION_STATE), int(RamAddress.ROOM_TRANSITION_STATE)
_DIALOG, _SELECTION = int(RamAddress.DIALOG_STATE), int(RamAddress.DIALOG_ASK_SELECTION)
_GAMEPLAY_TYPE, _GAMEPLAY_SUBTYPE = int(RamAddress.GAMEPLAY_TYPE), int(RamAddress.GAMEPLAY_SUBTYPE)
_HEALTH, _MAX_HEARTS = int(RamAddress.HEALTH), int(RamAddress.MAX_HEARTS)
_RUPEES_HIGH, _RUPEES_LOW = int(RamAddress.RUPEES_HIGH), int(RamAddress.RUPEES_LOW)
_KEYS, _INSTRUMENT, _INVENTORY = (
    int(RamAddress.DUNGEON_SMALL_KEYS),
    int(RamAddress.HAS_INSTRUMENT_1),
    int(RamAddress.INVENTORY),
)
_ROOM_STATUS, _KILLS, _DEATHS = (
    int(RamAddress.ROOM_STATUS),
    int(RamAddress.KILL_COUNT),
    int(RamAddress.DEATH_COUNT),
)
_INVINCIBLE, _FRAME = int(RamAddress.INVINCIBILITY_COUNTER), int(RamAddress.FRAME_COUNTER)
_ENTITY_STATUS, _ENTITY_TYPE = int(RamAddress.ENTITIES_STATUS), int(RamAddress.ENTITIES_TYPE)
_ENTITY_X, _ENTITY_Y = int(RamAddress.ENTITIES_X), int(RamAddress.ENTITIES_Y)
_ROOM_OBJECTS = int(RamAddress.ROOM_OBJECTS)
_ENEMY_TYPE_IDS = frozenset(int(kind) for kind in ENEMY_TYPES)

_NEIGHBOUR_OFFSETS = ((0, -1), (1, -1), (1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1))
# Index into the neighbours for each hLinkDirection (right, left, up, down).
_FRONT_INDEX = (2, 6, 0, 4)


def count_visited_rooms(memory: Any, banked: bool = False) -> int:
    """Rooms whose status has the visited bit, overworld and indoor tables together."""
    if banked:
        statuses = [memory[1, address] for address in range(0xD800, 0xDA00)]
    else:
        statuses = memory[ROOM_FLAG_TABLES]
    return sum(1 for flags in statuses if flags & RoomFlag.VISITED)


def read_game_state(memory: Any, banked: bool = False) -> GameState:
    """The validated structured state at this frame (slower than RawState; not for hot loops)."""
    raw = RawState(memory, banked)
    return GameState.model_validate(raw.to_dict(count_visited_rooms(memory, banked)))


def schema_path() -> Path:
    return Path(str(resources.files("koholint") / "schemas" / "game_state.schema.json"))


def game_state_schema_json() -> str:
    return json.dumps(GameState.model_json_schema(), indent=2, sort_keys=True) + "\n"
