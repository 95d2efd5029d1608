"""The Link's Awakening DX RAM map: one constants module, with typed readers.

Names and meanings come from the zladx LADX disassembly (``src/constants/memory``).
The open test cartridge keeps its state at the same addresses, so every tap here
reads both the cartridge and the real DX ROM.

On the DX ROM, D000-DFFF is switchable WRAM: read it with an explicit bank
(``pyboy.memory[1, address]``), which :class:`RamReader` does when ``banked`` is set.

>>> RamAddress.HEALTH == 0xDB5A
True
>>> bcd_to_int(0x42)
42
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol


class RamAddress(IntEnum):
    """Named RAM addresses (LADX DX names in the docstring of each group)."""

    # HRAM
    LINK_X = 0xFF98  # hLinkPositionX: Link's centre, room pixels
    LINK_Y = 0xFF99  # hLinkPositionY
    LINK_DIRECTION = 0xFF9E  # hLinkDirection: 0 right, 1 left, 2 up, 3 down
    FRAME_COUNTER = 0xFFE7  # hFrameCounter
    MAP_ROOM = 0xFFF6  # hMapRoom: room id on the active map
    MAP_ID = 0xFFF7  # hMapId: indoor map id
    ROOM_STATUS = 0xFFF8  # hRoomStatus: current room flags
    LINK_ROOM_POSITION = 0xFFFA  # hLinkRoomPosition: (tile y << 4) | tile x
    # WRAM bank 0
    OAM_BUFFER = 0xC000  # wOAMBuffer: shadow OAM, 40 x 4 bytes
    LINK_MOTION_STATE = 0xC11C  # wLinkMotionState
    ROOM_TRANSITION_STATE = 0xC124  # wRoomTransitionState
    DIALOG_ASK_SELECTION = 0xC177  # wDialogAskSelectionIndex
    DIALOG_STATE = 0xC19F  # wDialogState
    ENTITIES_X = 0xC200  # wEntitiesPosXTable (16 slots)
    ENTITIES_Y = 0xC210  # wEntitiesPosYTable
    ENTITIES_SPEED_X = 0xC240  # wEntitiesSpeedXTable
    ENTITIES_SPEED_Y = 0xC250  # wEntitiesSpeedYTable
    ENTITIES_STATUS = 0xC280  # wEntitiesStatusTable
    ENTITIES_STATE = 0xC290  # wEntitiesStateTable
    ENTITIES_HEALTH = 0xC360  # wEntitiesHealthTable
    ENTITIES_DIRECTION = 0xC380  # wEntitiesDirectionTable
    ENTITIES_TYPE = 0xC3A0  # wEntitiesTypeTable
    ENTITIES_SPRITE_VARIANT = 0xC3B0  # wEntitiesSpriteVariantTable
    # WRAM bank 1 (banked on the DX ROM)
    FILE_SELECTION_ARROW_SHIFTED = 0xD000  # wIsFileSelectionArrowShifted: 0 ERASE, 1 COPY
    ROOM_OBJECTS = 0xD711  # wRoomObjects: 10x8 room tiles, rows 16 bytes apart
    OVERWORLD_ROOM_STATUS = 0xD800  # wOverworldRoomStatus: 256 rooms
    INDOOR_ROOM_STATUS = 0xD900  # wIndoorARoomStatus: 256 rooms
    INVENTORY = 0xDB00  # wInventoryItems: DB00 B slot, DB01 A slot, DB02-DB0B subscreen
    SWORD_LEVEL = 0xDB4E  # wSwordLevel
    DEATH_COUNT = 0xDB57  # wDeathCount (3 bytes, one per save slot; slot 1 used)
    HEALTH = 0xDB5A  # wHealth: 8 per heart
    MAX_HEARTS = 0xDB5B  # wMaxHearts
    RUPEES_HIGH = 0xDB5D  # wRupeeCountHigh (BCD hundreds)
    RUPEES_LOW = 0xDB5E  # wRupeeCountLow (BCD tens and ones)
    HAS_INSTRUMENT_1 = 0xDB65  # wHasInstrument1: bit 1 = has instrument
    SAVE_SLOT_NAMES = 0xDB80  # wSaveSlotNames: 3 slots x 5 letters, 0 = no letter
    GAMEPLAY_TYPE = 0xDB95  # wGameplayType
    GAMEPLAY_SUBTYPE = 0xDB96  # wGameplaySubtype
    IS_INDOOR = 0xDBA5  # wIsIndoor
    SAVE_SLOT = 0xDBA6  # wSaveSlot: file select cursor, 0-2 a slot, 3 the ERASE/COPY row
    SAVE_FILES_COUNT = 0xDBA7  # wSaveFilesCount: bit n = slot n holds a file
    NAME_ENTRY_CURRENT_CHAR = 0xDBA9  # wNameEntryCurrentChar: name entry grid cursor, 0-63
    SAVE_SLOT_NAME_CHAR_INDEX = 0xDBAA  # wSaveSlotNameCharIndex: where the next letter goes
    KILL_COUNT = 0xDBB5  # wKillCount
    INVINCIBILITY_COUNTER = 0xDBC7  # wInvincibilityCounter
    DUNGEON_SMALL_KEYS = 0xDBD0  # wDungeonSmallKeys (current dungeon)


# Cartridge only: a seed byte the caller writes; the cartridge reads it on every room
# entry to place and steer enemies. Unused by the real game.
CARTRIDGE_SEED_ADDRESS = 0xC0F0

ENTITY_SLOTS = 16
ROOM_FLAG_TABLES = slice(
    int(RamAddress.OVERWORLD_ROOM_STATUS), int(RamAddress.INDOOR_ROOM_STATUS) + 256
)
"""The overworld and indoor room flag tables (D800-D9FF), one byte per room, read as one slice."""
ROOM_WIDTH, ROOM_HEIGHT = 10, 8
ROOM_OBJECTS_STRIDE = 16


@dataclass(frozen=True)
class AddressDoc:
    """What one address holds, for documentation and coverage tests."""

    address: RamAddress
    size: int
    meaning: str


ADDRESS_DOCS: tuple[AddressDoc, ...] = (
    AddressDoc(RamAddress.MAP_ROOM, 1, "room id on the active map"),
    AddressDoc(RamAddress.MAP_ID, 1, "indoor map id (00 = first dungeon, 0A-1F caves/houses)"),
    AddressDoc(RamAddress.IS_INDOOR, 1, "0 overworld, 1 indoor"),
    AddressDoc(RamAddress.ROOM_STATUS, 1, "current room flags (see RoomFlag)"),
    AddressDoc(RamAddress.LINK_X, 1, "Link's x position in the room, pixels"),
    AddressDoc(RamAddress.LINK_Y, 1, "Link's y position in the room, pixels"),
    AddressDoc(RamAddress.LINK_DIRECTION, 1, "0 right, 1 left, 2 up, 3 down"),
    AddressDoc(RamAddress.LINK_ROOM_POSITION, 1, "Link's tile in the room, (y << 4) | x"),
    AddressDoc(RamAddress.LINK_MOTION_STATE, 1, "0 normal, 3/4 map fade, 6 falling, 7 pass out"),
    AddressDoc(RamAddress.ROOM_TRANSITION_STATE, 1, "0 none, 1-5 transition in progress"),
    AddressDoc(
        RamAddress.DIALOG_STATE,
        1,
        "0 closed, 1-5 opening, 6-8 printing, 9 wait for A, "
        "0C end, 0D choice, 0E-0F closing; bit 7 = box at bottom",
    ),
    AddressDoc(RamAddress.DIALOG_ASK_SELECTION, 1, "selected choice (0 = first)"),
    AddressDoc(RamAddress.INVENTORY, 12, "B slot, A slot, subscreen slots; 1 sword, 2 bombs, ..."),
    AddressDoc(RamAddress.HEALTH, 1, "health, 8 per heart"),
    AddressDoc(RamAddress.MAX_HEARTS, 1, "heart containers"),
    AddressDoc(RamAddress.RUPEES_HIGH, 1, "rupees, BCD hundreds"),
    AddressDoc(RamAddress.RUPEES_LOW, 1, "rupees, BCD tens and ones"),
    AddressDoc(RamAddress.DUNGEON_SMALL_KEYS, 1, "small keys for the current dungeon"),
    AddressDoc(RamAddress.HAS_INSTRUMENT_1, 1, "bit 1 = has the first instrument"),
    AddressDoc(RamAddress.DEATH_COUNT, 1, "deaths (save slot 1)"),
    AddressDoc(RamAddress.KILL_COUNT, 1, "enemies defeated"),
    AddressDoc(
        RamAddress.GAMEPLAY_TYPE,
        1,
        "00 title, 01 credits (victory), 02 file select, 03 name entry, 0B world",
    ),
    AddressDoc(RamAddress.GAMEPLAY_SUBTYPE, 1, "07 = interactive in the world"),
    AddressDoc(RamAddress.OVERWORLD_ROOM_STATUS, 256, "overworld room flags, 0x80 = visited"),
    AddressDoc(RamAddress.INDOOR_ROOM_STATUS, 256, "indoor room flags, 0x80 = visited"),
    AddressDoc(RamAddress.ENTITIES_X, 16, "entity x positions"),
    AddressDoc(RamAddress.ENTITIES_Y, 16, "entity y positions"),
    AddressDoc(RamAddress.ENTITIES_STATUS, 16, "entity status: 0 off, 1 dying, 5 active"),
    AddressDoc(RamAddress.ENTITIES_TYPE, 16, "entity type (EntityType)"),
    AddressDoc(RamAddress.ROOM_OBJECTS, 0x80, "room tiles, 10 per row, rows 16 bytes apart"),
    AddressDoc(RamAddress.FRAME_COUNTER, 1, "frame counter"),
    AddressDoc(RamAddress.SAVE_FILES_COUNT, 1, "bit n set: save slot n holds a file"),
    AddressDoc(RamAddress.SAVE_SLOT_NAMES, 15, "the three files' names, 5 letters, 0 = none"),
    AddressDoc(RamAddress.NAME_ENTRY_CURRENT_CHAR, 1, "name entry grid cursor, 16 x 4"),
    AddressDoc(RamAddress.SAVE_SLOT_NAME_CHAR_INDEX, 1, "name entry: the letter A writes next"),
)


class GameplayType(IntEnum):
    TITLE = 0x00  # GAMEPLAY_INTRO: the intro and the title screen
    CREDITS = 0x01
    FILE_SELECT = 0x02
    FILE_NEW = 0x03  # the name entry of a new file
    WORLD = 0x0B


GAMEPLAY_SUBTYPE_INTERACTIVE = 0x07
"""wGameplaySubtype once the world takes input."""
FILE_SELECT_SUBTYPE_INTERACTIVE = 0x07
"""wGameplaySubtype once the file select takes input."""
FILE_NEW_SUBTYPE_INTERACTIVE = 0x02
"""wGameplaySubtype once the name entry takes input."""
OPENING_GAMEPLAY_TYPES = frozenset(
    {GameplayType.TITLE, GameplayType.FILE_SELECT, GameplayType.FILE_NEW}
)
"""The screens between power-on and play: the title, the file select and the name entry."""
SAVE_SLOTS = 3
COMMAND_SAVE_SLOT = 3
"""wSaveSlot on the file select's ERASE/COPY row (shown once a file exists)."""
NAME_LENGTH = 5
NAME_ENTRY_ROWS = ("ABCDEFG  abcdefg", "HIJKLMN  hijklmn", "OPQRSTU  opqrstu", "VWXYZ    vwxyz  ")
"""LA DX's name entry grid (NameEntryCharacterTable), row by row: the letter A writes from
each wNameEntryCurrentChar. LEFT/RIGHT move the cursor by 1 and UP/DOWN by a row, wrapping."""
NAME_ENTRY_GRID = "".join(NAME_ENTRY_ROWS)
NAME_ENTRY_COLUMNS = 16


class MotionState(IntEnum):
    NORMAL = 0
    MAP_FADE_OUT = 3
    MAP_FADE_IN = 4
    FALLING = 6
    PASS_OUT = 7


class DialogState(IntEnum):
    """wDialogState without bit 7 (box position)."""

    CLOSED = 0x00
    PRINTING = 0x06
    WAIT_FOR_A = 0x09
    END = 0x0C
    CHOICE = 0x0D
    CLOSING_1 = 0x0E
    CLOSING_2 = 0x0F


DIALOG_BOX_AT_BOTTOM = 0x80


class RoomFlag(IntEnum):
    """Bits of a room's status byte."""

    RUPEE_TAKEN = 0x01  # cartridge
    HEART_TAKEN = 0x02  # cartridge
    DOOR_OPEN = 0x04
    KEY_TAKEN = 0x08  # cartridge
    CHEST_OPEN = 0x10
    PUZZLE_SOLVED = 0x20  # cartridge
    CLEARED = 0x40  # cartridge: every enemy defeated
    VISITED = 0x80


class EntityStatus(IntEnum):
    OFF = 0
    DYING = 1
    ACTIVE = 5


class EntityType(IntEnum):
    """LADX entity ids where the creature exists in LADX; cartridge ids (E0+) otherwise."""

    OCTOROK = 0x09
    KEESE = 0x19
    ELDER = 0xE0  # cartridge NPC with the multi-page dialog
    SHOPKEEPER = 0xE1  # cartridge NPC with the yes/no dialog
    BLOCK = 0xE2  # cartridge: the pushable block, mirrored from the room tiles


ENEMY_TYPES = frozenset({EntityType.OCTOROK, EntityType.KEESE})


class InventoryItem(IntEnum):
    NONE = 0x00
    SWORD = 0x01
    BOMBS = 0x02
    POWER_BRACELET = 0x03
    SHIELD = 0x04


HAS_INSTRUMENT_BIT = 0x02


class Memory(Protocol):
    """Anything that reads a byte at an address (PyBoy's ``memory`` does)."""

    def __getitem__(self, address: int, /) -> int: ...


class RamReader:
    """Typed reads of the RAM map; banked WRAM reads for the DX ROM."""

    def __init__(self, memory: Memory, *, banked: bool = False) -> None:
        self._memory = memory
        self._banked = banked

    def byte(self, address: int) -> int:
        if self._banked and 0xD000 <= address < 0xE000:
            return int(self._memory[1, address])  # type: ignore[index]
        return int(self._memory[address])

    def bytes(self, address: int, count: int) -> list[int]:
        return [self.byte(address + offset) for offset in range(count)]

    def room_key(self) -> tuple[int, int, int]:
        """(indoor, map, room): hMapRoom alone repeats across maps."""
        indoor = self.byte(RamAddress.IS_INDOOR)
        map_id = self.byte(RamAddress.MAP_ID) if indoor else 0
        return indoor, map_id, self.byte(RamAddress.MAP_ROOM)

    def rupees(self) -> int:
        return bcd_to_int(self.byte(RamAddress.RUPEES_HIGH)) * 100 + bcd_to_int(
            self.byte(RamAddress.RUPEES_LOW)
        )

    def link_position(self) -> tuple[int, int]:
        return self.byte(RamAddress.LINK_X), self.byte(RamAddress.LINK_Y)

    def dialog_state(self) -> int:
        """The dialog state without its box-position bit."""
        return self.byte(RamAddress.DIALOG_STATE) & ~DIALOG_BOX_AT_BOTTOM & 0xFF

    def has_instrument(self) -> bool:
        return bool(self.byte(RamAddress.HAS_INSTRUMENT_1) & HAS_INSTRUMENT_BIT)

    def visited_rooms(self) -> set[tuple[int, int]]:
        """(indoor, room) for every room whose status has the visited bit."""
        visited = set()
        for indoor, table in (
            (0, RamAddress.OVERWORLD_ROOM_STATUS),
            (1, RamAddress.INDOOR_ROOM_STATUS),
        ):
            for room, flags in enumerate(self.bytes(table, 256)):
                if flags & RoomFlag.VISITED:
                    visited.add((indoor, room))
        return visited

    def room_objects(self) -> list[list[int]]:
        """The current room's tiles as 8 rows of 10."""
        return [
            self.bytes(RamAddress.ROOM_OBJECTS + row * ROOM_OBJECTS_STRIDE, ROOM_WIDTH)
            for row in range(ROOM_HEIGHT)
        ]

    def active_entities(self) -> list[tuple[int, int, int, int]]:
        """(slot, type, x, y) of every entity whose status is not off."""
        statuses = self.bytes(RamAddress.ENTITIES_STATUS, ENTITY_SLOTS)
        return [
            (
                slot,
                self.byte(RamAddress.ENTITIES_TYPE + slot),
                self.byte(RamAddress.ENTITIES_X + slot),
                self.byte(RamAddress.ENTITIES_Y + slot),
            )
            for slot, status in enumerate(statuses)
            if status != EntityStatus.OFF
        ]


def bcd_to_int(value: int) -> int:
    """Decode one packed BCD byte (0x42 -> 42)."""
    high, low = value >> 4, value & 0x0F
    if high > 9 or low > 9:
        raise ValueError(f"0x{value:02X} is not a BCD byte")
    return high * 10 + low
