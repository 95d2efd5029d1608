"""Generate the cartridge's world data (rooms, exits, warps, spawns, dialogs) as C.

The world is authored here as text so it can be read at a glance and checked:
every room is 10x8 metatiles, every open edge cell must meet an open cell of the
neighbouring room, and every warp and spawn must stand on a walkable tile.

Run: python3 cartridge/tools/rooms.py  (writes cartridge/src/rooms.c and rooms.h)
"""

from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
WIDTH, HEIGHT = 10, 8
TEXT_COLUMNS, LINES_PER_PAGE = 16, 2

# Metatile ids: the contract with tools/gfx.py (gfx.h MT_* names, same order).
METATILES = {
    ".": ("MT_FLOOR", 0),
    "#": ("MT_WALL", 1),
    "T": ("MT_TREE", 2),
    "C": ("MT_CHEST", 3),
    "B": ("MT_BLOCK", 5),
    "P": ("MT_PLATE", 6),
    "G": ("MT_GATE", 8),
    "L": ("MT_LOCKED", 9),
    "K": ("MT_KEY", 10),
    "$": ("MT_RUPEE", 11),
    "h": ("MT_HEART", 12),
    "v": ("MT_STAIRS_DOWN", 13),
    "^": ("MT_STAIRS_UP", 14),
    "I": ("MT_INSTRUMENT", 15),
    ",": ("MT_DFLOOR", 16),
    "%": ("MT_DWALL", 17),
    "~": ("MT_WATER", 18),
}
SOLID = set("#TCBGL%~")
# Cells that count as an opening on a room edge (walkable, or a gate/door that opens).
OPENABLE = set("GL")

# Entity types: LADX ids where the game has the same creature, cartridge ids otherwise.
ENTITY_TYPES = {"octorok": 0x09, "keese": 0x19, "elder": 0xE0, "shopkeeper": 0xE1, "block": 0xE2}

# Direction order matches hLinkDirection: 0 right, 1 left, 2 up, 3 down.
DIRECTIONS = ("east", "west", "north", "south")
OPPOSITE = {"east": "west", "west": "east", "north": "south", "south": "north"}


@dataclass
class Room:
    name: str
    room_id: int
    indoor: int
    map_id: int
    rows: list[str]
    exits: dict[str, str] = field(default_factory=dict)
    spawns: list[tuple[str, int, int]] = field(default_factory=list)


ROOMS = [
    Room(
        "grove",
        0x00,
        0,
        0x00,
        [
            "##########",
            "#T....T..#",
            "#..~~....#",
            "#..~~$....",
            "#...h.....",
            "#T.......#",
            "#....T..T#",
            "####..####",
        ],
        {"east": "puzzle", "south": "west_field"},
        [("octorok", 6, 5)],
    ),
    Room(
        "puzzle",
        0x01,
        0,
        0x00,
        [
            "##########",
            "#........#",
            "#..B.....#",
            "...T.....G",
            ".........G",
            "#....P...#",
            "#........#",
            "####..####",
        ],
        {"west": "grove", "east": "cave_mouth", "south": "crossroads"},
        [],
    ),
    Room(
        "cave_mouth",
        0x02,
        0,
        0x00,
        [
            "##########",
            "#TT....TT#",
            "#T......T#",
            ".....v...#",
            ".........#",
            "#T......T#",
            "#TT....TT#",
            "##########",
        ],
        {"west": "puzzle"},
        [],
    ),
    Room(
        "west_field",
        0x10,
        0,
        0x00,
        [
            "####..####",
            "#........#",
            "#.T....T.#",
            "#.........",
            "#....$....",
            "#.T....T.#",
            "#........#",
            "##########",
        ],
        {"north": "grove", "east": "crossroads"},
        [("keese", 2, 6), ("octorok", 7, 3)],
    ),
    Room(
        "crossroads",
        0x11,
        0,
        0x00,
        [
            "####..####",
            "#........#",
            "#.TT..TT.#",
            "..........",
            "..........",
            "#.TT..TT.#",
            "#........#",
            "####..####",
        ],
        {"north": "puzzle", "west": "west_field", "east": "lake", "south": "village"},
        [("octorok", 1, 1), ("octorok", 8, 6)],
    ),
    Room(
        "lake",
        0x12,
        0,
        0x00,
        [
            "##########",
            "#...~~~..#",
            "#...~~~..#",
            ".........#",
            "....$....#",
            "#T......T#",
            "#........#",
            "####..####",
        ],
        {"west": "crossroads", "south": "shop"},
        [("octorok", 7, 2)],
    ),
    Room(
        "sword_glade",
        0x20,
        0,
        0x00,
        [
            "##########",
            "#TT....TT#",
            "#T..C...T#",
            "#.........",
            "#.........",
            "#T......T#",
            "#TT....TT#",
            "##########",
        ],
        {"east": "village"},
        [],
    ),
    Room(
        "village",
        0x21,
        0,
        0x00,
        [
            "####..####",
            "#T......T#",
            "#........#",
            "..........",
            "..........",
            "#........#",
            "#T......T#",
            "##########",
        ],
        {"north": "crossroads", "west": "sword_glade", "east": "shop"},
        [("elder", 6, 2)],
    ),
    Room(
        "shop",
        0x22,
        0,
        0x00,
        [
            "####..####",
            "#........#",
            "#..T..T..#",
            ".........#",
            ".....$...#",
            "#........#",
            "#T......T#",
            "##########",
        ],
        {"west": "village", "north": "lake"},
        [("shopkeeper", 4, 2)],
    ),
    Room(
        "dungeon_entrance",
        0x10,
        1,
        0x00,
        [
            "%%%%,,%%%%",
            "%,,,,,,,,%",
            "%,,,^,,,,%",
            "%,,,,,,,,%",
            "%,,,,,,,,%",
            "%,,,,,,,,%",
            "%,,,,,,,,%",
            "%%%%%%%%%%",
        ],
        {"north": "key_hall"},
        [],
    ),
    Room(
        "key_hall",
        0x08,
        1,
        0x00,
        [
            "%%%%%%%%%%",
            "%,,,,,,,,%",
            "%,%,,,,%,%",
            "%,,,,,,,,,",
            "%,,,,K,,,,",
            "%,%,,,,%,%",
            "%,,,,,,,,%",
            "%%%%,,%%%%",
        ],
        {"south": "dungeon_entrance", "east": "lock_hall"},
        [("keese", 2, 1), ("keese", 7, 6), ("octorok", 7, 1)],
    ),
    Room(
        "lock_hall",
        0x09,
        1,
        0x00,
        [
            "%%%%LL%%%%",
            "%,,,,,,,,%",
            "%,,,,,,,,%",
            ",,,,,,,,,%",
            ",,,,,,,,,%",
            "%,,,,,,,,%",
            "%,,h,,,,,%",
            "%%%%%%%%%%",
        ],
        {"west": "key_hall", "north": "instrument_room"},
        [("octorok", 2, 1), ("octorok", 7, 5)],
    ),
    Room(
        "instrument_room",
        0x01,
        1,
        0x00,
        [
            "%%%%%%%%%%",
            "%,,,,,,,,%",
            "%,,,,I,,,%",
            "%,,,,,,,,%",
            "%,,,,,,,,%",
            "%,,,,,,,,%",
            "%,,,,,,,,%",
            "%%%%,,%%%%",
        ],
        {"south": "lock_hall"},
        [],
    ),
]

START = ("village", 4, 5)
# Stairs: (room, tile x, tile y) -> (room, arrival tile x, arrival tile y, facing).
WARPS = [
    (("cave_mouth", 5, 3), ("dungeon_entrance", 4, 4, "north")),
    (("dungeon_entrance", 4, 2), ("cave_mouth", 5, 4, "south")),
]

DIALOGS = {
    "DLG_ELDER": (
        "WELCOME TO KOHOLINT, YOUNG ONE. A SWORD RESTS IN A CHEST IN THE GLADE TO THE WEST. "
        "PUSH THE STONE ONTO THE PLATE IN THE NORTH AND THE GATE WILL OPEN. "
        "BEYOND IT, A CAVE HIDES THE INSTRUMENT OF THE SIREN. GO NOW!",
        False,
    ),
    "DLG_SWORD": ("YOU GOT A SWORD! PRESS B TO SWING IT. SELECT SWAPS A AND B.", False),
    "DLG_SHOP": ("A HEART CONTAINER FOR 10 RUPEES. WILL YOU BUY IT?", True),
    "DLG_SHOP_THANKS": ("THANK YOU! YOUR LIFE GROWS STRONGER.", False),
    "DLG_SHOP_POOR": ("YOU NEED 10 RUPEES. COME BACK LATER!", False),
    "DLG_SHOP_NO": ("SUIT YOURSELF.", False),
    "DLG_SHOP_SOLD": ("THAT WAS MY LAST ONE. SAFE TRAVELS!", False),
}


def paginate(text: str) -> list[str]:
    """Wrap text into pages of LINES_PER_PAGE lines of TEXT_COLUMNS, padded with spaces."""
    lines = textwrap.wrap(text, TEXT_COLUMNS)
    while len(lines) % LINES_PER_PAGE:
        lines.append("")
    pages = []
    for start in range(0, len(lines), LINES_PER_PAGE):
        page = lines[start : start + LINES_PER_PAGE]
        pages.append("".join(line.ljust(TEXT_COLUMNS) for line in page))
    return pages


def edge_cells(room: Room, direction: str) -> list[tuple[int, int]]:
    if direction == "north":
        return [(x, 0) for x in range(WIDTH)]
    if direction == "south":
        return [(x, HEIGHT - 1) for x in range(WIDTH)]
    if direction == "west":
        return [(0, y) for y in range(HEIGHT)]
    return [(WIDTH - 1, y) for y in range(HEIGHT)]


def is_open(cell: str) -> bool:
    return cell not in SOLID or cell in OPENABLE


def validate(rooms: dict[str, Room]) -> None:
    """Fail with a message naming the room and cell when the world does not fit together."""
    keys = set()
    for room in rooms.values():
        key = (room.indoor, room.map_id, room.room_id)
        if key in keys:
            raise SystemExit(f"room {room.name}: duplicate room key {key}")
        keys.add(key)
        if len(room.rows) != HEIGHT or any(len(row) != WIDTH for row in room.rows):
            raise SystemExit(f"room {room.name}: layout must be {WIDTH}x{HEIGHT}")
        for row in room.rows:
            for cell in row:
                if cell not in METATILES:
                    raise SystemExit(f"room {room.name}: unknown cell {cell!r}")
        for direction in DIRECTIONS:
            cells = [room.rows[y][x] for x, y in edge_cells(room, direction)]
            neighbour_name = room.exits.get(direction)
            if neighbour_name is None:
                if any(is_open(cell) for cell in cells):
                    raise SystemExit(f"room {room.name}: {direction} edge open with no exit")
                continue
            neighbour = rooms[neighbour_name]
            if neighbour.exits.get(OPPOSITE[direction]) != room.name:
                raise SystemExit(f"room {room.name}: exit {direction} is not mirrored")
            theirs = [neighbour.rows[y][x] for x, y in edge_cells(neighbour, OPPOSITE[direction])]
            if [is_open(c) for c in cells] != [is_open(c) for c in theirs]:
                raise SystemExit(
                    f"room {room.name}: {direction} opening differs from {neighbour_name}"
                )
        for kind, x, y in room.spawns:
            if room.rows[y][x] in SOLID:
                raise SystemExit(f"room {room.name}: {kind} spawns in a solid cell ({x},{y})")
        for marker in "$hKC":
            if sum(row.count(marker) for row in room.rows) > 1:
                raise SystemExit(f"room {room.name}: at most one {marker!r} per room")


def c_array(values: list[int]) -> str:
    return ", ".join(f"0x{v:02X}" for v in values)


def render(rooms: list[Room]) -> tuple[str, str]:
    index = {room.name: i for i, room in enumerate(rooms)}
    header = [
        "/* Generated by tools/rooms.py - do not edit. */",
        "#ifndef ROOMS_H",
        "#define ROOMS_H",
        f"#define N_ROOMS {len(rooms)}",
        f"#define N_WARPS {len(WARPS)}",
        f"#define N_DIALOGS {len(DIALOGS)}",
        f"#define DIALOG_PAGE_CHARS {TEXT_COLUMNS * LINES_PER_PAGE}",
        f"#define DIALOG_COLUMNS {TEXT_COLUMNS}",
        f"#define START_ROOM {index[START[0]]}",
        f"#define START_X {START[1] * 16 + 8}",
        f"#define START_Y {START[2] * 16 + 8}",
        "#define NO_EXIT 0xFF",
    ]
    header += [f"#define ROOM_{room.name.upper()} {i}" for i, room in enumerate(rooms)]
    header += [
        f"#define ENTITY_{name.upper()} 0x{value:02X}" for name, value in ENTITY_TYPES.items()
    ]
    header += [f"#define {name} {i}" for i, name in enumerate(DIALOGS)]
    header += [
        "extern const unsigned char room_id[N_ROOMS];",
        "extern const unsigned char room_indoor[N_ROOMS];",
        "extern const unsigned char room_map[N_ROOMS];",
        "extern const unsigned char room_exits[N_ROOMS][4];",
        "extern const unsigned char room_tiles[N_ROOMS][80];",
        "extern const unsigned char * const room_spawns[N_ROOMS];",
        "extern const unsigned char warps[N_WARPS][6];",
        "extern const unsigned char dialog_pages[N_DIALOGS];",
        "extern const unsigned char dialog_choice[N_DIALOGS];",
        "extern const char * const dialog_text[N_DIALOGS];",
        "#endif",
    ]
    body = ["/* Generated by tools/rooms.py - do not edit. */", '#include "rooms.h"']
    body.append(
        f"const unsigned char room_id[N_ROOMS] = {{{c_array([r.room_id for r in rooms])}}};"
    )
    body.append(
        f"const unsigned char room_indoor[N_ROOMS] = {{{c_array([r.indoor for r in rooms])}}};"
    )
    body.append(
        f"const unsigned char room_map[N_ROOMS] = {{{c_array([r.map_id for r in rooms])}}};"
    )
    exits = []
    for room in rooms:
        targets = [index.get(room.exits.get(d, ""), 0xFF) for d in DIRECTIONS]
        exits.append(f"    {{{c_array(targets)}}}, /* {room.name} */")
    body += ["const unsigned char room_exits[N_ROOMS][4] = {", *exits, "};"]
    tiles = []
    for room in rooms:
        ids = [METATILES[cell][1] for row in room.rows for cell in row]
        tiles.append(f"    {{{c_array(ids)}}}, /* {room.name} */")
    body += ["const unsigned char room_tiles[N_ROOMS][80] = {", *tiles, "};"]
    for i, room in enumerate(rooms):
        spawns = list(room.spawns)
        spawns += [
            ("block", x, y)
            for y, row in enumerate(room.rows)
            for x, c in enumerate(row)
            if c == "B"
        ]
        values = [v for kind, x, y in spawns for v in (ENTITY_TYPES[kind], x, y)] + [0]
        body.append(f"static const unsigned char spawns_{i}[] = {{{c_array(values)}}};")
    names = ", ".join(f"spawns_{i}" for i in range(len(rooms)))
    body.append(f"const unsigned char * const room_spawns[N_ROOMS] = {{{names}}};")
    warp_rows = []
    for (src, sx, sy), (dst, dx, dy, facing) in WARPS:
        values = [
            index[src],
            sy * 16 + sx,
            index[dst],
            dx * 16 + 8,
            dy * 16 + 8,
            DIRECTIONS.index(facing),
        ]
        warp_rows.append(f"    {{{c_array(values)}}},")
    body += ["const unsigned char warps[N_WARPS][6] = {", *warp_rows, "};"]
    pages = {name: paginate(text) for name, (text, _) in DIALOGS.items()}
    body.append(
        f"const unsigned char dialog_pages[N_DIALOGS] = {{{c_array([len(p) for p in pages.values()])}}};"
    )
    choices = [int(choice) for _, choice in DIALOGS.values()]
    body.append(f"const unsigned char dialog_choice[N_DIALOGS] = {{{c_array(choices)}}};")
    for name, page_list in pages.items():
        literal = "\n    ".join(f'"{page}"' for page in page_list)
        body.append(f"static const char text_{name.lower()}[] =\n    {literal};")
    text_names = ", ".join(f"text_{name.lower()}" for name in pages)
    body.append(f"const char * const dialog_text[N_DIALOGS] = {{{text_names}}};")
    return "\n".join(header) + "\n", "\n".join(body) + "\n"


def main() -> int:
    by_name = {room.name: room for room in ROOMS}
    validate(by_name)
    for (src, sx, sy), (dst, dx, dy, _) in WARPS:
        if by_name[dst].rows[dy][dx] in SOLID or by_name[src].rows[sy][sx] not in "v^":
            raise SystemExit(f"warp {src}->{dst}: bad source or arrival cell")
    header, body = render(ROOMS)
    (SRC / "rooms.h").write_text(header)
    (SRC / "rooms.c").write_text(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
