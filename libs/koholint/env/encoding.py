"""The 128-float observation vector, every slot documented, every value in [-1, 1].

``SLOTS`` is the one source of the layout: (index, name, source, normalisation).
``encode(raw)`` fills a float32 vector from a ``RawState``. ``encoder_version()`` names the
layout: a reward model or policy trained on one layout is refused by an env with another.

The ``memory`` encoding (``ENCODINGS``) appends ``MEMORY_SLOTS``: what the game remembers
across rooms, which one frame's slots do not show — for each bit of a room's flags byte, how
many rooms of the overworld and of the indoor maps have it set (visited, puzzle solved, door
opened, key taken, ...). An R_phi that judges compare states with needs it, or it explains
"further along" by where Link stands (docs/reward-model.md); the policy sees it when the
env's ``observation`` setting is ``memory`` (a room crossed before and after a puzzle is
solved then looks different).

Room-object features (neighbours, the tile in front) use the cartridge's metatile ids
(docs/cartridge.md); on the real DX ROM those slots read LADX object ids and are only
a rough signal.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple, get_args

import numpy as np

from koholint.game.ram import (
    ENEMY_TYPES,
    ROOM_FLAG_TABLES,
    ROOM_HEIGHT,
    ROOM_OBJECTS_STRIDE,
    ROOM_WIDTH,
    EntityType,
    RamAddress,
)
from koholint.game.state import RawState
from koholint.game.tiles import PICKUPS, SOLID, STAIRS, Metatile
from koholint.schemas.env import Encoding

OBSERVATION_SIZE = 128
ENTITY_BASE = 64
ENTITY_FEATURES = 4

NPC_TYPES = frozenset({EntityType.ELDER, EntityType.SHOPKEEPER})
_LINK_X, _LINK_Y = int(RamAddress.LINK_X), int(RamAddress.LINK_Y)
_ROOM_OBJECTS = int(RamAddress.ROOM_OBJECTS)


class Slot(NamedTuple):
    position: int
    name: str
    source: str
    normalisation: str


_SCALAR_SLOTS = [
    ("indoor", "wIsIndoor DBA5", "0 or 1"),
    ("map_id", "hMapId FFF7 (0 outdoors)", "/255"),
    ("room_id", "hMapRoom FFF6", "/255"),
    ("room_row", "hMapRoom FFF6 high nibble", "/15"),
    ("room_column", "hMapRoom FFF6 low nibble", "/15"),
    ("link_x", "hLinkPositionX FF98", "/160"),
    ("link_y", "hLinkPositionY FF99", "/128"),
    ("link_tile_x", "hLinkPositionX FF98 >> 4", "/9, clipped"),
    ("link_tile_y", "hLinkPositionY FF99 >> 4", "/7, clipped"),
    ("facing_right", "hLinkDirection FF9E == 0", "0 or 1"),
    ("facing_left", "hLinkDirection FF9E == 1", "0 or 1"),
    ("facing_up", "hLinkDirection FF9E == 2", "0 or 1"),
    ("facing_down", "hLinkDirection FF9E == 3", "0 or 1"),
    ("motion_normal", "wLinkMotionState C11C == 0", "0 or 1"),
    ("motion_map_fade", "wLinkMotionState C11C in (3, 4)", "0 or 1"),
    ("motion_pass_out", "wLinkMotionState C11C == 7", "0 or 1"),
    ("in_transition", "wRoomTransitionState C124 != 0", "0 or 1"),
    ("dialog_open", "wDialogState C19F & 7F != 0", "0 or 1"),
    ("dialog_printing", "wDialogState C19F & 7F in 1..8", "0 or 1"),
    ("dialog_waiting", "wDialogState C19F & 7F in (09, 0C)", "0 or 1"),
    ("dialog_choice", "wDialogState C19F & 7F == 0D", "0 or 1"),
    ("dialog_selection", "wDialogAskSelectionIndex C177", "clipped to 0..1"),
    ("mode_title", "wGameplayType DB95 == 00", "0 or 1"),
    ("mode_world", "wGameplayType DB95 == 0B", "0 or 1"),
    ("mode_credits", "wGameplayType DB95 == 01 (the win)", "0 or 1"),
    ("health_fraction", "wHealth DB5A / (8 * wMaxHearts DB5B)", "0..1"),
    ("max_hearts", "wMaxHearts DB5B", "/14, clipped"),
    ("health", "wHealth DB5A", "/112, clipped"),
    ("invincible", "wInvincibilityCounter DBC7 != 0", "0 or 1"),
    ("rupees", "wRupeeCountHigh/Low DB5D/DB5E (BCD)", "/999"),
    ("keys", "wDungeonSmallKeys DBD0", "/9, clipped"),
    ("has_sword", "sword (01) in DB00 or DB01", "0 or 1"),
    ("sword_in_a", "DB01 == 01", "0 or 1"),
    ("sword_in_b", "DB00 == 01", "0 or 1"),
    ("has_instrument", "wHasInstrument1 DB65 bit 1", "0 or 1"),
    ("kills", "wKillCount DBB5", "/255"),
    ("deaths", "wDeathCount DB57", "/255"),
    *[(f"room_flag_{bit}", f"hRoomStatus FFF8 bit {bit}", "0 or 1") for bit in range(8)],
    *[
        (
            f"solid_{name}",
            f"wRoomObjects D711 at Link's tile + {name}; outside the room counts",
            "0 or 1",
        )
        for name in ("n", "ne", "e", "se", "s", "sw", "w", "nw")
    ],
    ("enemy_nearby", "an active enemy in the entity tables", "0 or 1"),
    ("nearest_enemy_dx", "entity x C200 - Link x, nearest active enemy", "/160, signed"),
    ("nearest_enemy_dy", "entity y C210 - Link y, nearest active enemy", "/128, signed"),
    ("enemy_count", "active enemies", "/16"),
    ("front_npc", "an NPC within 20 px in front of Link", "0 or 1"),
    ("front_chest", "wRoomObjects tile in front == chest", "0 or 1"),
    ("front_block", "wRoomObjects tile in front == block", "0 or 1"),
    ("front_locked_door", "wRoomObjects tile in front == locked door", "0 or 1"),
    ("front_pickup", "wRoomObjects tile in front is a key, rupee or heart", "0 or 1"),
    ("front_stairs", "wRoomObjects tile in front is stairs", "0 or 1"),
    ("front_walkable", "wRoomObjects tile in front is not solid", "0 or 1"),
]
_ENTITY_SLOT_DOCS = [
    ("active", "wEntitiesStatusTable C280 != 0", "0 or 1"),
    ("enemy", "wEntitiesTypeTable C3A0 is an enemy type", "0 or 1"),
    ("dx", "wEntitiesPosXTable C200 - Link x", "/160, signed"),
    ("dy", "wEntitiesPosYTable C210 - Link y", "/128, signed"),
]

SLOTS: tuple[Slot, ...] = tuple(
    [Slot(i, name, source, norm) for i, (name, source, norm) in enumerate(_SCALAR_SLOTS)]
    + [
        Slot(ENTITY_BASE + ENTITY_FEATURES * entity + k, f"entity_{entity}_{name}", source, norm)
        for entity in range(16)
        for k, (name, source, norm) in enumerate(_ENTITY_SLOT_DOCS)
    ]
)
SLOT_INDEX = {slot.name: slot.position for slot in SLOTS}
if len(_SCALAR_SLOTS) != ENTITY_BASE or len(SLOTS) != OBSERVATION_SIZE:
    raise RuntimeError("the observation layout must fill exactly 128 slots")


def _clip(value: float) -> float:
    return -1.0 if value < -1.0 else (1.0 if value > 1.0 else value)


def _front_npc(raw: RawState) -> float:
    fx = raw.x + (20, -20, 0, 0)[raw.direction]
    fy = raw.y + (0, 0, -20, 20)[raw.direction]
    for slot in range(16):
        if (
            raw.entity_status[slot]
            and raw.entity_type[slot] in NPC_TYPES
            and abs(raw.entity_x[slot] - fx) < 12
            and abs(raw.entity_y[slot] - fy) < 12
        ):
            return 1.0
    return 0.0


# Lookup tables: one tuple per byte value, so encoding is mostly concatenation.
_FACING = ((1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0))
_MOTION = tuple((float(m == 0), float(m in (3, 4)), float(m == 7)) for m in range(256))
_DIALOG = tuple(
    (float(d != 0), float(0 < d < 9), float(d in (9, 12)), float(d == 13))
    for d in (v & 0x7F for v in range(256))
)
_MODE = tuple((float(t == 0x00), float(t == 0x0B), float(t == 0x01)) for t in range(256))
_BITS = tuple(tuple(float(v >> bit & 1) for bit in range(8)) for v in range(256))
_SOLID = {tile: (1.0 if tile < 0 or tile in SOLID else 0.0) for tile in range(-1, 256)}
_ENEMY = frozenset(int(kind) for kind in ENEMY_TYPES)
_NO_ENTITY = (0.0, 0.0, 0.0, 0.0)


def encode(raw: RawState) -> np.ndarray:
    """The observation vector for one frame."""
    room, x, y, indoor = raw.room, raw.x, raw.y, raw.indoor
    b_slot, a_slot = raw.inventory
    max_health = raw.max_hearts * 8
    front = raw.front
    tile_x, tile_y = x >> 4, y >> 4
    values = [
        1.0 if indoor else 0.0, raw.map_id / 255 if indoor else 0.0, room / 255,
        (room >> 4) / 15, (room & 15) / 15,
        x / 160 if x < 160 else 1.0, y / 128 if y < 128 else 1.0,
        tile_x / 9 if tile_x < 9 else 1.0, tile_y / 7 if tile_y < 7 else 1.0,
        *_FACING[raw.direction], *_MOTION[raw.motion], 1.0 if raw.transition else 0.0,
        *_DIALOG[raw.dialog], 1.0 if raw.selection else 0.0, *_MODE[raw.gameplay_type],
        _clip(raw.health / max_health) if max_health else 0.0, _clip(raw.max_hearts / 14),
        _clip(raw.health / 112), 1.0 if raw.invincible else 0.0,
        _clip(raw.rupees / 999), _clip(raw.keys / 9),
        1.0 if b_slot == 1 or a_slot == 1 else 0.0, 1.0 if a_slot == 1 else 0.0,
        1.0 if b_slot == 1 else 0.0, 1.0 if raw.instrument else 0.0,
        raw.kills / 255, raw.deaths / 255, *_BITS[raw.room_status],
    ]  # fmt: skip
    values += [_SOLID[tile] for tile in raw.neighbours]
    enemies = raw.enemies()
    if enemies:
        ex, ey = min(enemies, key=lambda e: abs(e[0] - x) + abs(e[1] - y))
        values += (1.0, _clip((ex - x) / 160), _clip((ey - y) / 128), len(enemies) / 16)
    else:
        values += _NO_ENTITY
    values += (
        _front_npc(raw), 1.0 if front == Metatile.CHEST else 0.0,
        1.0 if front == Metatile.BLOCK else 0.0, 1.0 if front == Metatile.LOCKED_DOOR else 0.0,
        1.0 if front in PICKUPS else 0.0, 1.0 if front in STAIRS else 0.0,
        1.0 if front >= 0 and front not in SOLID else 0.0,
    )  # fmt: skip
    entity_status, entity_type, entity_x, entity_y = (
        raw.entity_status, raw.entity_type, raw.entity_x, raw.entity_y,
    )  # fmt: skip
    for slot in range(16):
        if entity_status[slot]:
            values += (
                1.0, 1.0 if entity_type[slot] in _ENEMY else 0.0,
                _clip((entity_x[slot] - x) / 160), _clip((entity_y[slot] - y) / 128),
            )  # fmt: skip
        else:
            values += _NO_ENTITY
    return np.array(values, dtype=np.float32)


_TABLES = (("overworld", "D800"), ("indoor", "D900"))
MEMORY_SIZE = 16
MEMORY_SLOTS: tuple[Slot, ...] = tuple(
    Slot(OBSERVATION_SIZE + 8 * table + bit, f"{name}_rooms_flag_{bit}",
         f"rooms of the {name} table ({address}) with flag bit {bit} set",
         "log2(1 + count) / 8")
    for table, (name, address) in enumerate(_TABLES)
    for bit in range(8)
)  # fmt: skip
EVENT_BITS = 7  # bits 0-6 of a room's flags; bit 7 (visited) counts every room walked into
FLAGS_SIZE = 2 * EVENT_BITS
FLAG_SLOTS: tuple[Slot, ...] = tuple(
    Slot(OBSERVATION_SIZE + EVENT_BITS * table + bit, f"{name}_rooms_event_{bit}",
         f"rooms of the {name} table ({address}) with flag bit {bit} set",
         "min(count, 4) / 4")
    for table, (name, address) in enumerate(_TABLES)
    for bit in range(EVENT_BITS)
)  # fmt: skip
"""The ``flags`` encoding's extra slots: the room events (a puzzle solved, a chest opened,
a door unlocked) and not the visited bit, whose count moves with every room a detour walks
into; a count of 1 reads 0.25, not log2(2) / 8."""
ENCODINGS: tuple[Encoding, ...] = get_args(Encoding)


def encode_memory(raw: RawState) -> np.ndarray:
    """``MEMORY_SLOTS`` of one frame (16 float32 in [0, 1])."""
    return memory_slots(raw._memory)


# each slot's value for every count of rooms (0..256): a lookup, not a log per step
_COUNT_SCALE = (np.log2(1.0 + np.arange(257)) / 8).astype(np.float32)
_EVENT_SCALE = (np.minimum(np.arange(257), 4) / 4).astype(np.float32)


def _flag_counts(memory: Any) -> np.ndarray:
    """(2, 8): how many rooms of each table have each flag bit set."""
    tables = np.frombuffer(bytes(memory[ROOM_FLAG_TABLES]), np.uint8).reshape(2, 256)
    counts: np.ndarray = np.unpackbits(tables[:, :, None], axis=2, bitorder="little").sum(axis=1)
    return counts


def memory_slots(memory: Any) -> np.ndarray:
    """``MEMORY_SLOTS`` read from the emulator's memory (anything sliced by address)."""
    slots: np.ndarray = _COUNT_SCALE[_flag_counts(memory).reshape(MEMORY_SIZE)]
    return slots


def flag_slots(memory: Any) -> np.ndarray:
    """``FLAG_SLOTS`` read from the emulator's memory (anything sliced by address)."""
    slots: np.ndarray = _EVENT_SCALE[_flag_counts(memory)[:, :EVENT_BITS].reshape(FLAGS_SIZE)]
    return slots


LOCAL_RADIUS = 3
"""tiles the ``local`` view reaches from Link's on each side: a 7 x 7 window"""
_LOCAL_OFFSETS = [
    (dx, dy)
    for dy in range(-LOCAL_RADIUS, LOCAL_RADIUS + 1)
    for dx in range(-LOCAL_RADIUS, LOCAL_RADIUS + 1)
    if (dx, dy) != (0, 0)
]
LOCAL_SLOTS: tuple[Slot, ...] = tuple(
    [
        Slot(OBSERVATION_SIZE + index, f"local_solid_{dx:+d}_{dy:+d}",
             f"wRoomObjects D711 at Link's tile + ({dx}, {dy}) is solid; outside the room counts",
             "0 or 1")
        for index, (dx, dy) in enumerate(_LOCAL_OFFSETS)
    ]
    + [
        Slot(OBSERVATION_SIZE + len(_LOCAL_OFFSETS), "local_offset_x",
             "hLinkPositionX FF98 & 15 (where in its tile Link stands)", "/15"),
        Slot(OBSERVATION_SIZE + len(_LOCAL_OFFSETS) + 1, "local_offset_y",
             "hLinkPositionY FF99 & 15", "/15"),
    ]
)  # fmt: skip
"""The ``local`` encoding's extra slots: the room's walls around Link, wherever he stands.
The frame's slots place Link by room id and pixels, so a policy learns each room's gaps
as a map of its own; a window centred on Link shows a gap in the wall beside him the same
way in every room and every world."""
LOCAL_SIZE = len(LOCAL_SLOTS)
_ROOM_TILES = ROOM_HEIGHT * ROOM_OBJECTS_STRIDE
_SOLID_BYTE = np.array([1.0 if tile in SOLID else 0.0 for tile in range(256)], np.float32)


def local_slots(memory: Any) -> np.ndarray:
    """``LOCAL_SLOTS`` read from the emulator's memory (anything sliced by address): the
    solidity of the 7 x 7 tiles around Link's (his own left out), then his offset in it."""
    x, y = memory[_LINK_X], memory[_LINK_Y]
    rows = np.frombuffer(bytes(memory[_ROOM_OBJECTS : _ROOM_OBJECTS + _ROOM_TILES]), np.uint8)
    room = _SOLID_BYTE[rows.reshape(ROOM_HEIGHT, ROOM_OBJECTS_STRIDE)[:, :ROOM_WIDTH]]
    padded = np.pad(room, LOCAL_RADIUS, constant_values=1.0)
    tile_x, tile_y = min(x >> 4, ROOM_WIDTH - 1), min(y >> 4, ROOM_HEIGHT - 1)
    window = padded[tile_y : tile_y + 2 * LOCAL_RADIUS + 1, tile_x : tile_x + 2 * LOCAL_RADIUS + 1]
    flat = window.reshape(-1)
    centre = LOCAL_RADIUS * (2 * LOCAL_RADIUS + 1) + LOCAL_RADIUS
    offsets = np.array(((x & 15) / 15, (y & 15) / 15), np.float32)
    return np.concatenate((flat[:centre], flat[centre + 1 :], offsets))


_EXTRA: dict[str, tuple[tuple[Slot, ...], Callable[[Any], np.ndarray]]] = {
    "memory": (MEMORY_SLOTS, memory_slots),
    "flags": (FLAG_SLOTS, flag_slots),
    "local": (LOCAL_SLOTS, local_slots),
}
"""Each encoding beyond the frame's: the slots it appends and how they are read from memory."""


def _extra_layout(encoding: str) -> tuple[Slot, ...]:
    _check(encoding)
    return _EXTRA[encoding][0] if encoding in _EXTRA else ()


def extra_slots(encoding: str) -> Callable[[Any], np.ndarray] | None:
    """What `encoding` appends to the frame's slots, read from the emulator's memory (None:
    nothing)."""
    _check(encoding)
    return _EXTRA[encoding][1] if encoding in _EXTRA else None


@cache
def encoder(encoding: str = "observation") -> Callable[[RawState], np.ndarray]:
    """The function that encodes a frame in `encoding` (one of ``ENCODINGS``)."""
    extra = extra_slots(encoding)
    if extra is None:
        return encode

    def encode_with_extra(raw: RawState) -> np.ndarray:
        return np.concatenate((encode(raw), extra(raw._memory)))

    return encode_with_extra


def encode_with_memory(raw: RawState) -> np.ndarray:
    """The ``memory`` encoding: ``encode(raw)`` then ``encode_memory(raw)``."""
    return encoder("memory")(raw)


def encoding_size(encoding: str = "observation") -> int:
    return OBSERVATION_SIZE + len(_extra_layout(encoding))


@cache
def encoder_version(encoding: str = "observation") -> str:
    """``obs<size>-<12 hex of the layout's sha256>``; changes whenever a slot changes."""
    slots = SLOTS + _extra_layout(encoding)
    layout = "\n".join(
        f"{slot.position}|{slot.name}|{slot.source}|{slot.normalisation}" for slot in slots
    )
    return f"obs{encoding_size(encoding)}-{hashlib.sha256(layout.encode()).hexdigest()[:12]}"


def encoding_of(version: str) -> str | None:
    """The name of the encoding whose ``encoder_version`` is `version` (None: no encoding of
    this env's)."""
    return next((name for name in ENCODINGS if encoder_version(name) == version), None)


def _check(encoding: str) -> None:
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding {encoding!r}: use one of {', '.join(ENCODINGS)}")
