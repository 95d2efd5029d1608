"""The default world of the cartridge, authored as text, encoded into the ROM's world region.

The engine (``src/*.c``) reads its world from a data region (``koholint.game.worlds``): this
script authors the committed ROM's world with the library's types, checks that it fits
together (every room 10x8, every open edge meeting an open edge of its neighbour, every warp
and spawn on a walkable cell) and writes ``src/rooms.h``, the region's layout for the C code.
``build.py`` encodes :func:`world` into the ROM with ``koholint.game.worlds.encode_world``,
the code ``koholint cartridge generate`` uses for generated worlds.

Run: python3 cartridge/tools/rooms.py  (writes cartridge/src/rooms.h)
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

CARTRIDGE = Path(__file__).resolve().parent.parent
SRC = CARTRIDGE / "src"
WORLDS_MODULE = CARTRIDGE.parent / "libs" / "koholint" / "game" / "worlds.py"


def _load_worlds():  # type: ignore[no-untyped-def]
    """koholint.game.worlds by its path: pure Python, so the build needs no installed package."""
    spec = importlib.util.spec_from_file_location("koholint_worlds", WORLDS_MODULE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


worlds = _load_worlds()
Room, Warp, World = worlds.Room, worlds.Warp, worlds.World

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
    Warp(("cave_mouth", 5, 3), ("dungeon_entrance", 4, 4, "north")),
    Warp(("dungeon_entrance", 4, 2), ("cave_mouth", 5, 4, "south")),
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


def world() -> World:
    """The committed ROM's world."""
    return World(rooms=ROOMS, start=START, warps=WARPS, dialogs=DIALOGS, shop_price=10)


def main() -> int:
    worlds.validate(world())
    header = [
        "/* Generated by tools/rooms.py - do not edit. The world region's layout. */",
        "#ifndef ROOMS_H",
        "#define ROOMS_H",
        worlds.c_header().rstrip("\n"),
        "#endif",
    ]
    (SRC / "rooms.h").write_text("\n".join(header) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
