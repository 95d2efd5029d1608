"""A cartridge world as data: its rooms, exits, stairs, spawns and dialogs, and the ROM
region the cartridge's engine reads them from.

The engine (``cartridge/src``) holds no world of its own: it reads one from the *world region*,
``REGION_SIZE`` bytes at ROM address ``REGION_ADDRESS`` (bank 1 of a 32 KiB ROM with no MBC,
always mapped). :func:`encode_world` writes a :class:`World` into that region and
:func:`install_world` puts it into an engine ROM with the header and global checksums fixed,
in pure Python. ``cartridge/tools/rooms.py`` authors the default world with these types and
encodes it with the same code; ``koholint.game.worldgen`` generates others.

Region layout (little-endian; pointers are CPU addresses inside the region)::

    header  "KWLD", version, rooms, warps, dialogs, start room, start x, start y,
            shop price, room table, warp table, dialog table (u16 each)
    room    id, indoor, map, exits (east, west, north, south; 0xFF none), spawns (u16),
            80 metatiles row by row
    spawns  (type, x, y) ... 0
    warp    from room, from cell (y << 4 | x), to room, to x px, to y px, facing
    dialog  pages, choice, text (u16): pages x 32 characters

>>> box = ["#" * 10] + ["#" + "." * 8 + "#"] * 6 + ["#" * 10]
>>> region = encode_world(World(rooms=[Room("a", 0, 0, 0, box)], start=("a", 4, 4)))
>>> region[:4], len(region) <= REGION_SIZE
(b'KWLD', True)
"""

from __future__ import annotations

import struct
import textwrap
from dataclasses import dataclass, field

REGION_ADDRESS = 0x4000
REGION_SIZE = 0x4000
ROM_SIZE = 0x8000
MAGIC = b"KWLD"
FORMAT_VERSION = 1
HEADER_SIZE = 32
# Header fields (offsets into the region).
H_VERSION, H_ROOMS, H_WARPS, H_DIALOGS = 4, 5, 6, 7
H_START_ROOM, H_START_X, H_START_Y, H_SHOP_PRICE = 8, 9, 10, 11
H_ROOM_TABLE, H_WARP_TABLE, H_DIALOG_TABLE = 12, 14, 16
# Room record fields.
R_ID, R_INDOOR, R_MAP, R_EXITS, R_SPAWNS, R_TILES = 0, 1, 2, 3, 7, 9
ROOM_RECORD_SIZE = R_TILES + 80
WARP_RECORD_SIZE = 6
D_PAGES, D_CHOICE, D_TEXT = 0, 1, 2
DIALOG_RECORD_SIZE = 4
NO_EXIT = 0xFF
MAX_ROOMS = 254

WIDTH, HEIGHT = 10, 8
TEXT_COLUMNS, LINES_PER_PAGE = 16, 2
PAGE_CHARS = TEXT_COLUMNS * LINES_PER_PAGE

# Metatile ids by authoring character: the contract with cartridge/tools/gfx.py.
METATILES = {
    ".": 0, "#": 1, "T": 2, "C": 3, "B": 5, "P": 6, "G": 8, "L": 9, "K": 10, "$": 11,
    "h": 12, "v": 13, "^": 14, "I": 15, ",": 16, "%": 17, "~": 18,
}  # fmt: skip
SOLID = frozenset("#TCBGL%~")
OPENABLE = frozenset("GL")  # solid until the puzzle is solved / the door is unlocked
WALKABLE = frozenset(".P$hK,")

# Entity types: LADX ids where the game has the same creature, cartridge ids otherwise.
ENTITY_TYPES = {"octorok": 0x09, "keese": 0x19, "elder": 0xE0, "shopkeeper": 0xE1, "block": 0xE2}
ENEMIES = frozenset({"octorok", "keese"})
NPCS = frozenset({"elder", "shopkeeper"})

# Direction order matches hLinkDirection: 0 right, 1 left, 2 up, 3 down.
DIRECTIONS = ("east", "west", "north", "south")
OPPOSITE = {"east": "west", "west": "east", "north": "south", "south": "north"}
STEP = {"east": (1, 0), "west": (-1, 0), "north": (0, -1), "south": (0, 1)}

# The dialogs the engine opens, in id order (the C names of rooms.h).
DIALOG_NAMES = (
    "DLG_ELDER", "DLG_SWORD", "DLG_SHOP", "DLG_SHOP_THANKS", "DLG_SHOP_POOR", "DLG_SHOP_NO",
    "DLG_SHOP_SOLD",
)  # fmt: skip
CHOICE_DIALOG = "DLG_SHOP"


class WorldError(ValueError):
    """A world that does not fit together; the message names the room and what is wrong."""


@dataclass
class Room:
    """One 10x8 screen, authored as text rows of METATILES characters."""

    name: str
    room_id: int
    indoor: int
    map_id: int
    rows: list[str]
    exits: dict[str, str] = field(default_factory=dict)
    spawns: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def key(self) -> tuple[int, int, int]:
        """(indoor, map, room), as RamReader.room_key reads it."""
        return self.indoor, self.map_id if self.indoor else 0, self.room_id

    def cells(self, marker: str) -> list[tuple[int, int]]:
        return [(x, y) for y, row in enumerate(self.rows) for x, c in enumerate(row) if c == marker]


@dataclass
class Warp:
    """Stairs: stepping on `source` (room, x, y) arrives at `target` (room, x, y, facing)."""

    source: tuple[str, int, int]
    target: tuple[str, int, int, str]


def default_dialogs(shop_price: int = 10, elder: str = "") -> dict[str, tuple[str, bool]]:
    """The engine's dialogs with a world's elder text (text, has a yes/no choice)."""
    return {
        "DLG_ELDER": (elder or "FIND THE SWORD, OPEN THE WAY AND TAKE THE INSTRUMENT.", False),
        "DLG_SWORD": ("YOU GOT A SWORD! PRESS B TO SWING IT. SELECT SWAPS A AND B.", False),
        "DLG_SHOP": (f"A HEART CONTAINER FOR {shop_price} RUPEES. WILL YOU BUY IT?", True),
        "DLG_SHOP_THANKS": ("THANK YOU! YOUR LIFE GROWS STRONGER.", False),
        "DLG_SHOP_POOR": (f"YOU NEED {shop_price} RUPEES. COME BACK LATER!", False),
        "DLG_SHOP_NO": ("SUIT YOURSELF.", False),
        "DLG_SHOP_SOLD": ("THAT WAS MY LAST ONE. SAFE TRAVELS!", False),
    }


@dataclass
class World:
    rooms: list[Room]
    start: tuple[str, int, int]
    warps: list[Warp] = field(default_factory=list)
    dialogs: dict[str, tuple[str, bool]] = field(default_factory=default_dialogs)
    shop_price: int = 10

    def room(self, name: str) -> Room:
        for room in self.rooms:
            if room.name == name:
                return room
        raise WorldError(f"no room named {name!r}")


def paginate(text: str) -> list[str]:
    """Wrap text into pages of LINES_PER_PAGE lines of TEXT_COLUMNS, padded with spaces."""
    lines = textwrap.wrap(text, TEXT_COLUMNS)
    while len(lines) % LINES_PER_PAGE:
        lines.append("")
    return [
        "".join(line.ljust(TEXT_COLUMNS) for line in lines[start : start + LINES_PER_PAGE])
        for start in range(0, len(lines), LINES_PER_PAGE)
    ]


def edge_cells(direction: str) -> list[tuple[int, int]]:
    if direction == "north":
        return [(x, 0) for x in range(WIDTH)]
    if direction == "south":
        return [(x, HEIGHT - 1) for x in range(WIDTH)]
    if direction == "west":
        return [(0, y) for y in range(HEIGHT)]
    return [(WIDTH - 1, y) for y in range(HEIGHT)]


def is_open(cell: str) -> bool:
    return cell not in SOLID or cell in OPENABLE


def validate(world: World) -> None:
    """Raise WorldError naming the room and cell where the world does not fit together."""
    rooms = {room.name: room for room in world.rooms}
    if len(rooms) != len(world.rooms) or not 0 < len(rooms) <= MAX_ROOMS:
        raise WorldError(f"a world has 1..{MAX_ROOMS} rooms with distinct names")
    keys = set()
    for room in world.rooms:
        if room.key in keys:
            raise WorldError(f"room {room.name}: duplicate room key {room.key}")
        keys.add(room.key)
        _validate_room(room, rooms)
    start, x, y = world.start
    if start not in rooms or rooms[start].rows[y][x] in SOLID:
        raise WorldError(f"the start {world.start} is not a walkable cell")
    for warp in world.warps:
        (src, sx, sy), (dst, dx, dy, facing) = warp.source, warp.target
        if src not in rooms or dst not in rooms or facing not in DIRECTIONS:
            raise WorldError(f"warp {src}->{dst}: unknown room or facing")
        if rooms[dst].rows[dy][dx] not in WALKABLE or rooms[src].rows[sy][sx] not in "v^":
            raise WorldError(f"warp {src}->{dst}: bad source or arrival cell")
    if tuple(world.dialogs) != DIALOG_NAMES:
        raise WorldError(f"a world's dialogs are {DIALOG_NAMES}, in that order")


def _validate_room(room: Room, rooms: dict[str, Room]) -> None:
    if len(room.rows) != HEIGHT or any(len(row) != WIDTH for row in room.rows):
        raise WorldError(f"room {room.name}: layout must be {WIDTH}x{HEIGHT}")
    unknown = {cell for row in room.rows for cell in row} - set(METATILES)
    if unknown:
        raise WorldError(f"room {room.name}: unknown cells {sorted(unknown)}")
    for direction in DIRECTIONS:
        cells = [room.rows[y][x] for x, y in edge_cells(direction)]
        neighbour_name = room.exits.get(direction)
        if neighbour_name is None:
            if any(is_open(cell) for cell in cells):
                raise WorldError(f"room {room.name}: {direction} edge open with no exit")
            continue
        neighbour = rooms.get(neighbour_name)
        if neighbour is None or neighbour.exits.get(OPPOSITE[direction]) != room.name:
            raise WorldError(f"room {room.name}: exit {direction} is not mirrored")
        theirs = [neighbour.rows[y][x] for x, y in edge_cells(OPPOSITE[direction])]
        if [is_open(c) for c in cells] != [is_open(c) for c in theirs]:
            raise WorldError(f"room {room.name}: {direction} opening differs from {neighbour_name}")
    for kind, x, y in room.spawns:
        if kind not in ENTITY_TYPES or room.rows[y][x] in SOLID:
            raise WorldError(f"room {room.name}: {kind} spawns in a solid cell ({x},{y})")
    for marker in "$hKC":
        if len(room.cells(marker)) > 1:
            raise WorldError(f"room {room.name}: at most one {marker!r} per room")
    spawns = len(room.spawns) + len(room.cells("B"))
    if spawns > 16:
        raise WorldError(f"room {room.name}: {spawns} entities, at most 16")


def encode_world(world: World) -> bytes:
    """The world region's bytes (at most REGION_SIZE): what the engine reads at REGION_ADDRESS."""
    validate(world)
    index = {room.name: i for i, room in enumerate(world.rooms)}
    room_table = HEADER_SIZE
    warp_table = room_table + len(world.rooms) * ROOM_RECORD_SIZE
    dialog_table = warp_table + len(world.warps) * WARP_RECORD_SIZE
    tail = bytearray()
    tail_start = dialog_table + len(world.dialogs) * DIALOG_RECORD_SIZE

    def append(data: bytes) -> int:
        address = REGION_ADDRESS + tail_start + len(tail)
        tail.extend(data)
        return address

    rooms = bytearray()
    for room in world.rooms:
        exits = [index[room.exits[d]] if d in room.exits else NO_EXIT for d in DIRECTIONS]
        spawns = list(room.spawns) + [("block", x, y) for x, y in room.cells("B")]
        spawn_bytes = bytes(v for kind, x, y in spawns for v in (ENTITY_TYPES[kind], x, y)) + b"\0"
        rooms += bytes([room.room_id, room.indoor, room.map_id, *exits])
        rooms += struct.pack("<H", append(spawn_bytes))
        rooms += bytes(METATILES[cell] for row in room.rows for cell in row)
    warps = bytearray()
    for warp in world.warps:
        (src, sx, sy), (dst, dx, dy, facing) = warp.source, warp.target
        warps += bytes([index[src], sy * 16 + sx, index[dst], dx * 16 + 8, dy * 16 + 8])
        warps += bytes([DIRECTIONS.index(facing)])
    dialogs = bytearray()
    for text, choice in world.dialogs.values():
        pages = paginate(text)
        address = append("".join(pages).encode("ascii"))
        dialogs += bytes([len(pages), int(choice)]) + struct.pack("<H", address)
    start, x, y = world.start
    header = bytearray(HEADER_SIZE)
    header[:4] = MAGIC
    header[H_VERSION:H_START_ROOM] = bytes(
        [FORMAT_VERSION, len(world.rooms), len(world.warps), len(world.dialogs)]
    )
    header[H_START_ROOM:H_ROOM_TABLE] = bytes(
        [index[start], x * 16 + 8, y * 16 + 8, world.shop_price]
    )
    for offset, table in ((H_ROOM_TABLE, room_table), (H_WARP_TABLE, warp_table),
                          (H_DIALOG_TABLE, dialog_table)):  # fmt: skip
        header[offset : offset + 2] = struct.pack("<H", REGION_ADDRESS + table)
    region = bytes(header + rooms + warps + dialogs + tail)
    if len(region) > REGION_SIZE:
        raise WorldError(f"the world takes {len(region)} bytes; the region holds {REGION_SIZE}")
    return region


def install_world(engine_rom: bytes, region: bytes) -> bytes:
    """`engine_rom` with its world region replaced by `region` and its checksums fixed."""
    if len(engine_rom) != ROM_SIZE:
        raise WorldError(f"an engine ROM is {ROM_SIZE} bytes, not {len(engine_rom)}")
    if len(region) > REGION_SIZE:
        raise WorldError(f"a world region holds at most {REGION_SIZE} bytes, not {len(region)}")
    rom = bytearray(engine_rom)
    rom[REGION_ADDRESS : REGION_ADDRESS + REGION_SIZE] = region.ljust(REGION_SIZE, b"\xff")
    return fix_checksums(bytes(rom))


def fix_checksums(rom: bytes) -> bytes:
    """Recompute the header checksum (0x14D) and the global checksum (0x14E-0x14F)."""
    data = bytearray(rom)
    header = 0
    for byte in data[0x134:0x14D]:
        header = (header - byte - 1) & 0xFF
    data[0x14D] = header
    data[0x14E:0x150] = b"\0\0"
    data[0x14E:0x150] = struct.pack(">H", sum(data) & 0xFFFF)
    return bytes(data)


def region_of(rom: bytes) -> bytes:
    """The world region of a cartridge ROM; WorldError when it holds none."""
    region = rom[REGION_ADDRESS : REGION_ADDRESS + REGION_SIZE]
    if len(region) < HEADER_SIZE or region[:4] != MAGIC or region[H_VERSION] != FORMAT_VERSION:
        raise WorldError("this ROM has no Koholint world region (not an engine cartridge)")
    return region


def c_header() -> str:
    """The region's layout as C #defines, for the engine (cartridge/src/rooms.h)."""
    values = {
        "WORLD_ADDRESS": f"0x{REGION_ADDRESS:04X}", "H_ROOMS": H_ROOMS, "H_WARPS": H_WARPS,
        "H_START_ROOM": H_START_ROOM, "H_START_X": H_START_X, "H_START_Y": H_START_Y,
        "H_SHOP_PRICE": H_SHOP_PRICE, "H_ROOM_TABLE": H_ROOM_TABLE, "H_WARP_TABLE": H_WARP_TABLE,
        "H_DIALOG_TABLE": H_DIALOG_TABLE, "R_ID": R_ID, "R_INDOOR": R_INDOOR, "R_MAP": R_MAP,
        "R_EXITS": R_EXITS, "R_SPAWNS": R_SPAWNS, "R_TILES": R_TILES,
        "ROOM_RECORD_SIZE": ROOM_RECORD_SIZE, "WARP_RECORD_SIZE": WARP_RECORD_SIZE,
        "D_PAGES": D_PAGES, "D_CHOICE": D_CHOICE, "D_TEXT": D_TEXT,
        "DIALOG_RECORD_SIZE": DIALOG_RECORD_SIZE, "NO_EXIT": f"0x{NO_EXIT:02X}",
        "DIALOG_PAGE_CHARS": PAGE_CHARS, "DIALOG_COLUMNS": TEXT_COLUMNS,
    }  # fmt: skip
    lines = [f"#define {name} {value}" for name, value in values.items()]
    lines += [
        f"#define ENTITY_{name.upper()} 0x{value:02X}" for name, value in ENTITY_TYPES.items()
    ]
    lines += [f"#define {name} {i}" for i, name in enumerate(DIALOG_NAMES)]
    return "\n".join(lines) + "\n"


def decode_world(region: bytes) -> World:
    """The World a region holds (rooms named room_0, room_1, ... in region order): what the
    engine will play, read back from a ROM's bytes (`region_of`)."""
    if region[:4] != MAGIC or region[H_VERSION] != FORMAT_VERSION:
        raise WorldError("not a Koholint world region")
    characters = {value: char for char, value in METATILES.items()}
    types = {value: kind for kind, value in ENTITY_TYPES.items()}

    def at(address: int) -> int:
        return address - REGION_ADDRESS

    def word(offset: int) -> int:
        return int(struct.unpack_from("<H", region, offset)[0])

    count, rooms_at = region[H_ROOMS], at(word(H_ROOM_TABLE))
    names = [f"room_{i}" for i in range(count)]
    rooms = []
    for i in range(count):
        record = region[rooms_at + i * ROOM_RECORD_SIZE : rooms_at + (i + 1) * ROOM_RECORD_SIZE]
        tiles = record[R_TILES:]
        rows = [
            "".join(characters[t] for t in tiles[y * WIDTH : (y + 1) * WIDTH])
            for y in range(HEIGHT)
        ]
        exits = {
            d: names[record[R_EXITS + k]]
            for k, d in enumerate(DIRECTIONS)
            if record[R_EXITS + k] != NO_EXIT
        }
        spawns, cursor = [], at(word(rooms_at + i * ROOM_RECORD_SIZE + R_SPAWNS))
        while region[cursor]:
            kind, x, y = types[region[cursor]], region[cursor + 1], region[cursor + 2]
            if kind != "block":
                spawns.append((kind, x, y))
            cursor += 3
        rooms.append(
            Room(names[i], record[R_ID], record[R_INDOOR], record[R_MAP], rows, exits, spawns)
        )
    warps = []
    warps_at = at(word(H_WARP_TABLE))
    for i in range(region[H_WARPS]):
        src, cell, dst, x, y, facing = region[
            warps_at + i * WARP_RECORD_SIZE : warps_at + (i + 1) * WARP_RECORD_SIZE
        ]
        warps.append(
            Warp(
                (names[src], cell & 15, cell >> 4),
                (names[dst], x // 16, y // 16, DIRECTIONS[facing]),
            )
        )
    dialogs_at = at(word(H_DIALOG_TABLE))
    dialogs = {}
    for i, name in enumerate(DIALOG_NAMES[: region[H_DIALOGS]]):
        pages, choice = region[
            dialogs_at + i * DIALOG_RECORD_SIZE : dialogs_at + i * DIALOG_RECORD_SIZE + 2
        ]
        text = region[at(word(dialogs_at + i * DIALOG_RECORD_SIZE + D_TEXT)) :][
            : pages * PAGE_CHARS
        ]
        dialogs[name] = (" ".join(text.decode("ascii").split()), bool(choice))
    start = (names[region[H_START_ROOM]], region[H_START_X] // 16, region[H_START_Y] // 16)
    return World(
        rooms=rooms, start=start, warps=warps, dialogs=dialogs, shop_price=region[H_SHOP_PRICE]
    )
