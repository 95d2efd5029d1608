#!/usr/bin/env python3
"""Generate the game's graphics: src/gfx.h and src/gfx.c (tiles + metatiles).

Usage:
    python3 tools/gfx.py                      # write src/gfx.h and src/gfx.c
    python3 tools/gfx.py --preview sheet.png  # ... and also a 4x PNG sheet

All art is authored below as pixel strings.  Pixel characters:
    ' ' = colour 0 (white; transparent in sprites)
    '.' = colour 1 (light grey)
    'o' = colour 2 (dark grey)
    '#' = colour 3 (black)
Pictures are written side by side, each one framed by '|' characters.
Font glyphs use '#' for ink and '.' for paper.

Standard library only; output is deterministic.
"""

import argparse
import os
import struct
import zlib

PIX = {" ": 0, ".": 1, "o": 2, "#": 3}


def sheet(width, names, text):
    """Parse pictures drawn side by side between '|' marks -> {name: rows}."""
    names = names.split()
    pics = {n: [] for n in names}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        parts = line.split("|")
        if parts[0] != "" or parts[-1] != "" or len(parts) != len(names) + 2:
            raise ValueError(f"bad line in {names}: {line!r}")
        for name, row in zip(names, parts[1:-1], strict=False):
            if len(row) != width or not set(row) <= set(PIX):
                raise ValueError(f"{name}: bad row {row!r} (len {len(row)})")
            pics[name].append([PIX[c] for c in row])
    for name, rows in pics.items():
        if len(rows) != width:
            raise ValueError(f"{name} has {len(rows)} rows")
    return pics


def hflip(t):
    return [row[::-1] for row in t]


def vflip(t):
    return t[::-1]


def transpose(t):
    return [list(col) for col in zip(*t, strict=False)]


def cut(pic, x, y):
    return [row[x : x + 8] for row in pic[y : y + 8]]


# --------------------------------------------------------------------------
# 0x01..0x0A: dialog box frame, solid tile, choice cursor
# --------------------------------------------------------------------------
UI = sheet(
    8,
    "BOX_TL BOX_T SOLID CURSOR",
    """
    |        |        |########|        |
    |        |        |########| #      |
    |    ####|########|########| ##     |
    |   #####|########|########| ###    |
    |  ##    |        |########| ####   |
    |  ##    |        |########| ###    |
    |  ##    |        |########| ##     |
    |  ##    |        |########| #      |
""",
)
BOX = {
    "BOX_TL": UI["BOX_TL"],
    "BOX_T": UI["BOX_T"],
    "BOX_TR": hflip(UI["BOX_TL"]),
    "BOX_L": transpose(UI["BOX_T"]),
    "BOX_R": hflip(transpose(UI["BOX_T"])),
    "BOX_BL": vflip(UI["BOX_TL"]),
    "BOX_B": vflip(UI["BOX_T"]),
    "BOX_BR": vflip(hflip(UI["BOX_TL"])),
}

# --------------------------------------------------------------------------
# 0x10..0x17: HUD icons (on white)
# --------------------------------------------------------------------------
HUD = sheet(
    8,
    "HEART_FULL HEART_HALF HEART_EMPTY RUPEE KEY SWORD INSTRUMENT DASH",
    """
    | ## ##  | ## ##  | ## ##  |   ##   |  ###   |      ##|   ##   |        |
    |#.##### |#.##  # |#  #  # |  #.o#  | #   #  |     #.#|  #..#  |        |
    |####### |####  # |#     # | #..oo# | #   #  | #  #.# |  #..#  |        |
    |####### |####  # |#     # | #..oo# |  ###   |  ##.#  | #....# | ###### |
    | #####  | ### #  | #   #  | #..oo# |   #    |   ##   | #....# | ###### |
    |  # #   |  ###   |  # #   | #..oo# |   ##   |  ###   |#......#|        |
    |   #    |   #    |   #    |  #.o#  |   #    | #   #  |########|        |
    |        |        |        |   ##   |   ##   |#       |   ##   |        |
""",
)

# --------------------------------------------------------------------------
# 0x20..0x5F: font, 5x7 glyphs, tile index == ASCII code
# --------------------------------------------------------------------------
FONT = """
..... ..#.. .#.#. .#.#. ..#.. ##... .##.. ..#..
..... ..#.. .#.#. ##### .#### ##..# #..#. ..#..
..... ..#.. ..... .#.#. #.#.. ...#. #.#.. .....
..... ..#.. ..... .#.#. .###. ..#.. .#... .....
..... ..... ..... ##### ..#.# .#... #.#.# .....
..... ..... ..... .#.#. ####. #..## #..#. .....
..... ..#.. ..... ..... ..#.. ...## .##.# .....

...#. .#... ..... ..... ..... ..... ..... .....
..#.. ..#.. ..#.. ..#.. ..... ..... ..... ....#
.#... ...#. #.#.# ..#.. ..... ..... ..... ...#.
.#... ...#. .###. ##### ..... ##### ..... ..#..
.#... ...#. #.#.# ..#.. .##.. ..... ..... .#...
..#.. ..#.. ..#.. ..#.. ..#.. ..... .##.. #....
...#. .#... ..... ..... .#... ..... .##.. .....

.###. ..#.. .###. ##### ...#. ##### ..##. #####
#...# .##.. #...# ...#. ..##. #.... .#... ....#
#..## ..#.. ....# ..#.. .#.#. ####. #.... ...#.
#.#.# ..#.. ...#. ...#. #..#. ....# ####. ..#..
##..# ..#.. ..#.. ....# ##### ....# #...# .#...
#...# ..#.. .#... #...# ...#. #...# #...# .#...
.###. .###. ##### .###. ...#. .###. .###. .#...

.###. .###. ..... ..... ...#. ..... .#... .###.
#...# #...# .##.. .##.. ..#.. ..... ..#.. #...#
#...# #...# .##.. .##.. .#... ##### ...#. ....#
.###. .#### ..... ..... #.... ..... ....# ...#.
#...# ....# .##.. .##.. .#... ##### ...#. ..#..
#...# ...#. .##.. ..#.. ..#.. ..... ..#.. .....
.###. .##.. ..... .#... ...#. ..... .#... ..#..

.###. .###. ####. .###. ###.. ##### ##### .###.
#...# #...# #...# #...# #..#. #.... #.... #...#
....# #...# #...# #.... #...# #.... #.... #....
.##.# ##### ####. #.... #...# ####. ####. #.###
#.#.# #...# #...# #.... #...# #.... #.... #...#
#.#.# #...# #...# #...# #..#. #.... #.... #...#
.###. #...# ####. .###. ###.. ##### #.... .####

#...# .###. ..### #...# #.... #...# #...# .###.
#...# ..#.. ...#. #..#. #.... ##.## #...# #...#
#...# ..#.. ...#. #.#.. #.... #.#.# ##..# #...#
##### ..#.. ...#. ##... #.... #.#.# #.#.# #...#
#...# ..#.. ...#. #.#.. #.... #...# #..## #...#
#...# ..#.. #..#. #..#. #.... #...# #...# #...#
#...# .###. .##.. #...# ##### #...# #...# .###.

####. .###. ####. .#### ##### #...# #...# #...#
#...# #...# #...# #.... ..#.. #...# #...# #...#
#...# #...# #...# #.... ..#.. #...# #...# #...#
####. #...# ####. .###. ..#.. #...# #...# #.#.#
#.... #.#.# #.#.. ....# ..#.. #...# #...# #.#.#
#.... #..#. #..#. ....# ..#.. #...# .#.#. #.#.#
#.... .##.# #...# ####. ..#.. .###. ..#.. .#.#.

#...# #...# ##### .###. ..... .###. ..#.. .....
#...# #...# ....# .#... #.... ...#. .#.#. .....
.#.#. .#.#. ...#. .#... .#... ...#. #...# .....
..#.. ..#.. ..#.. .#... ..#.. ...#. ..... .....
.#.#. ..#.. .#... .#... ...#. ...#. ..... .....
#...# ..#.. #.... .#... ....# ...#. ..... .....
#...# ..#.. ##### .###. ..... .###. ..... #####
"""


def font_tiles():
    """-> list of 64 8x8 tiles for ASCII 0x20..0x5F (glyph at x=1..5, y=0..6)."""
    lines = [ln.split() for ln in FONT.strip().splitlines() if ln.strip()]
    assert len(lines) == 8 * 7
    glyphs = []
    for block in range(8):
        rows = lines[block * 7 : block * 7 + 7]
        for g in range(8):
            tile = [[0] * 8 for _ in range(8)]
            for y in range(7):
                cells = rows[y][g]
                if len(cells) != 5 or not set(cells) <= set("#."):
                    raise ValueError(f"bad glyph row {cells!r}")
                for x, c in enumerate(cells):
                    tile[y][x + 1] = 3 if c == "#" else 0
            glyphs.append(tile)
    return glyphs


# --------------------------------------------------------------------------
# 0x60..0xAF: background metatiles (16x16, cut into TL TR BL BR)
# --------------------------------------------------------------------------
METATILE_NAMES = [
    "MT_FLOOR",
    "MT_WALL",
    "MT_TREE",
    "MT_CHEST",
    "MT_CHEST_OPEN",
    "MT_BLOCK",
    "MT_PLATE",
    "MT_BLOCK_ON_PLATE",
    "MT_GATE",
    "MT_LOCKED",
    "MT_KEY",
    "MT_RUPEE",
    "MT_HEART",
    "MT_STAIRS_DOWN",
    "MT_STAIRS_UP",
    "MT_INSTRUMENT",
    "MT_DFLOOR",
    "MT_DWALL",
    "MT_WATER",
    "MT_SIGN",
]


MT = {}
MT.update(
    sheet(
        16,
        "MT_FLOOR MT_WALL MT_TREE MT_CHEST",
        """
    |                |.........#.....#|     ######     |                |
    |   .            |.oooooooo#.oooo#|   ##. ...o##   |                |
    |                |.oo.ooooo#.oooo#|  #.  ..oo.oo#  |  ############  |
    |          .     |.oooooo.o#.oo.o#| #. ..o..oo..o# | #..o......o..# |
    |                |.oooo.ooo#.oooo#| #..oo..o...oo# | #..o......o..# |
    |                |.oooooooo#.oooo#|#..o...oo.o..oo#| #oooo#..#oooo# |
    |     .          |##########.o.oo#|#.o..o...oo..oo#| ######..###### |
    |              . |....#....#.oooo#|#..oo..oo..o.oo#| #..o.#o.#.o..# |
    |                |.ooo#.ooo#.oooo#|#o...oo...o.ooo#| #..o.####.o..# |
    |  .             |.o.o#.ooo#######| #oo...o.o.ooo# | #..o......o..# |
    |         .      |.ooo#.o.o#.....#| #o.oo..oooooo# | #..o......o..# |
    |                |.ooo#.ooo#.oo.o#|  ##oooooooo##  | #..o......o..# |
    |                |.ooo#.ooo#.oooo#|    ###oo###    | #oooooooooooo# |
    |             .  |.o.o#.oo.#.o.oo#|      #oo#      |  ############  |
    |     .          |.ooo#.ooo#.oooo#|     #oooo#     |  ............  |
    |                |################|     ######     |                |
""",
    )
)
MT.update(
    sheet(
        16,
        "MT_CHEST_OPEN MT_BLOCK MT_PLATE MT_BLOCK_ON_PLATE",
        """
    |                |################|oooooooooooooooo|oooooooooooooooo|
    |  ############  |#             o#|o..............o|o..............o|
    | #..o......o..# |#            oo#|o.############.o|o.############.o|
    | #..o......o..# |#  ..........oo#|o.#          #.o|o.#         o#.o|
    | #oooooooooooo# |#  ..........oo#|o.#          #.o|o.#        oo#.o|
    | ############## |#  ..........oo#|o.#          #.o|o.#  ......oo#.o|
    | #oooooooooooo# |#  ..........oo#|o.#          #.o|o.#  ......oo#.o|
    | #o##########o# |#  ..........oo#|o.#          #.o|o.#  ......oo#.o|
    | ############## |#  ..........oo#|o.#          #.o|o.#  ......oo#.o|
    | #..o......o..# |#  ..........oo#|o.#          #.o|o.#  ......oo#.o|
    | #..o......o..# |#  ..........oo#|o.#          #.o|o.#  ......oo#.o|
    | #..o......o..# |#  ..........oo#|o.#          #.o|o.# ooooooooo#.o|
    | #oooooooooooo# |#  ..........oo#|o.#          #.o|o.#oooooooooo#.o|
    |  ############  |# ooooooooooooo#|o.############.o|o.############.o|
    |  ............  |#oooooooooooooo#|o..............o|o..............o|
    |                |################|oooooooooooooooo|oooooooooooooooo|
""",
    )
)
MT.update(
    sheet(
        16,
        "MT_GATE MT_LOCKED MT_KEY MT_RUPEE",
        """
    |o#.#o#.#o#.#o#.#|################|                |                |
    |o#.#o#.#o#.#o#.#|#oooooooooooooo#|      ####      |       ##       |
    |################|#o############o#|     #..oo#     |      #.o#      |
    |................|#o#..o....o..#o#|     #.  o#     |     # ..o#     |
    |################|#o#.########.#o#|     #.  o#     |    #  ..oo#    |
    |o#.#o#.#o#.#o#.#|#o#.#      #.#o#|     #..oo#     |    #  ..oo#    |
    |o#.#o#.#o#.#o#.#|#o#.#  ##  #.#o#|      #.o#      |    #  ..oo#    |
    |o#.#o#.#o#.#o#.#|#o#.# #### #.#o#|      #.o#      |    #  ..oo#    |
    |o#.#o#.#o#.#o#.#|#o#.#  ##  #.#o#|      #.o#      |    #  ..oo#    |
    |o#.#o#.#o#.#o#.#|#o#.#  ##  #.#o#|      #.o###    |    #  ..oo#    |
    |o#.#o#.#o#.#o#.#|#o#.# #### #.#o#|      #.o.o#    |    #  ..oo#    |
    |################|#o#.#      #.#o#|      #.o###    |    #  ..oo#    |
    |................|#o#.########.#o#|      #.o#      |     # ..o#     |
    |################|#o#..o....o..#o#|      #.o.o#    |      #.o#      |
    |o#.#o#.#o#.#o#.#|#o#..o....o..#o#|      ######    |       ##       |
    |o#.#o#.#o#.#o#.#|#o#..o....o..#o#|                |                |
""",
    )
)
MT.update(
    sheet(
        16,
        "MT_HEART MT_STAIRS_DOWN MT_STAIRS_UP MT_INSTRUMENT",
        """
    |                |################|#o            o#|       ##       |
    |                |#..............#|#o            o#|  #   #oo#      |
    |                |#..............#|#o############o#| ### ######     |
    |   ###    ###   |#oooooooooooooo#|#o            o#|  # #.  ..o#    |
    |  #  .#  #ooo#  |##............##|#o            o#|    #.  ..o#  # |
    | # .ooo##ooooo# |##oooooooooooo##|#o############o#|    #.  ..o# ###|
    | #.ooooooooooo# |###..........###|#o............o#|   #.  ...oo# # |
    | #oooooooooooo# |###oooooooooo###|#o............o#|  #.  ....ooo#  |
    |  #oooooooooo#  |####........####|#o############o#|  ############  |
    |   #oooooooo#   |####oooooooo####|#o............o#|       ##       |
    |    #oooooo#    |################|#o............o#| ############## |
    |     #oooo#     |################|#o############o#| #............# |
    |      #oo#      |################|#oooooooooooooo#| #oooooooooooo# |
    |       ##       |################|#oooooooooooooo#|  #..........#  |
    |                |################|#o############o#|  #..........#  |
    |                |################|#oooooooooooooo#|  ############  |
""",
    )
)
MT.update(
    sheet(
        16,
        "MT_DFLOOR MT_DWALL MT_WATER MT_SIGN",
        """
    |       o       o|#.......#.......|................|                |
    | ......o ......o|#ooooooo#ooooooo|..oo............|                |
    | ......o ......o|#ooooooo#ooooooo|.o..o..o........| ############## |
    | ......o ......o|################|.....oo.........|#..............#|
    | ......o ......o|....#.......#...|................|#.oooo.ooo.oo..#|
    | ......o ......o|oooo#ooooooo#ooo|................|#..............#|
    | ......o ......o|oooo#ooooooo#ooo|..........oo....|#.ooo.oooo.ooo.#|
    |oooooooooooooooo|################|.........o..o..o|#..............#|
    |       o       o|#.......#.......|.............oo.|#oooooooooooooo#|
    | ......o ......o|#ooooooo#ooooooo|................| ############## |
    | ......o ......o|#ooooooo#ooooooo|................|      #.o#      |
    | ......o ......o|################|....oo..........|      #.o#      |
    | ......o ......o|....#.......#...|...o..o..o......|      #.o#      |
    | ......o ......o|oooo#ooooooo#ooo|.......oo.......|      #.o#      |
    | ......o ......o|oooo#ooooooo#ooo|................|     ##.o##     |
    |oooooooooooooooo|################|................|                |
""",
    )
)
assert sorted(MT) == sorted(METATILE_NAMES)

# --------------------------------------------------------------------------
# 0xB0..0xFF: 16x16 sprites for 8x16 mode (cut in column order)
# --------------------------------------------------------------------------
SPRITE_NAMES = [
    "SPR_LINK_DOWN",
    "SPR_LINK_UP",
    "SPR_LINK_RIGHT",
    "SPR_LINK_DOWN2",
    "SPR_LINK_UP2",
    "SPR_LINK_RIGHT2",
    "SPR_SWORD_V",
    "SPR_SWORD_H",
    "SPR_OCTOROK",
    "SPR_OCTOROK2",
    "SPR_KEESE",
    "SPR_KEESE2",
    "SPR_ELDER",
    "SPR_SHOPKEEPER",
    "SPR_POOF",
    "SPR_LINK_HURT",
    "SPR_LINK_PASSOUT",
    "SPR_LINK_HOLD",
]

SPR = {}
SPR.update(
    sheet(
        16,
        "SPR_LINK_DOWN SPR_LINK_DOWN2 SPR_LINK_UP SPR_LINK_UP2",
        """
    |       ##       |       ##       |       ##       |       ##       |
    |      #oo#      |      #oo#      |      #oo#      |      #oo#      |
    |     #oooo#     |     #oooo#     |     #oooo#     |     #oooo#     |
    |    #oooooo#    |    #oooooo#    |    #oooooo#    |    #oooooo#    |
    |   #oooooooo#   |   #oooooooo#   |   #oooooooo#   |   #oooooooo#   |
    |  #oooooooooo#  |  #oooooooooo#  |  #oooooooooo#  |  #oooooooooo#  |
    |  #oo.o..o.oo#  |  #oo.o..o.oo#  |  #oooooooooo#  |  #oooooooooo#  |
    | #.#........#.# | #.#........#.# | #.#oooooooo#.# | #.#oooooooo#.# |
    | #.#..#..#..#.# | #.#..#..#..#.# | #.#oooooooo#.# | #.#oooooooo#.# |
    |  ###......###  |  ###......###  |  ###oooooo###  |  ###oooooo###  |
    |  #.##oooo##.#  |  #.##oooo##.#  |  #.##oooo##.#  |  #.##oooo##.#  |
    |  #.#oooooo#.#  |  #.#oooooo#.#  |  #.#oooooo#.#  |  #.#oooooo#.#  |
    |   ##o####o##   |   ##o####o##   |   ##o####o##   |   ##o####o##   |
    |    #oo##oo#    |    #oo##oo#    |    #oo##oo#    |    #oo##oo#    |
    |    #..# ###    |    ### #..#    |    #..# ###    |    ### #..#    |
    |    ####        |        ####    |    ####        |        ####    |
""",
    )
)
SPR.update(
    sheet(
        16,
        "SPR_LINK_RIGHT SPR_LINK_RIGHT2 SPR_SWORD_V SPR_SWORD_H",
        """
    |      ####      |      ####      |       ##       |                |
    |    ##oooo#     |    ##oooo#     |      #..#      |                |
    |   #ooooooo#    |   #ooooooo#    |      #.o#      |                |
    |  #ooooooooo#   |  #ooooooooo#   |      #.o#      |                |
    | #ooooo######   | #ooooo######   |      #.o#      |   ###          |
    | #oo#oo#.....#  | #oo#oo#.....#  |      #.o#      |   #o#          |
    |  ## #o#...#.#  |  ## #o#...#.#  |      #.o#      | ############## |
    |     #oo......# |     #oo......# |      #.o#      |#oo#o#.........#|
    |      ##.....#  |      ##.....#  |      #.o#      |#oo#o#oooooooo.#|
    |     #oooooo#   |     #oooooo#   |      #.o#      | ############## |
    |    #o#oooo#.#  |    #.#oooo#    |    ########    |   #o#          |
    |    ##o####o##  |    ##o####o#   |    #o#oo#o#    |   ###          |
    |     #oooooo#   |     #oooooo#   |    ########    |                |
    |     #ooo#oo#   |      #oooo#    |      #oo#      |                |
    |    #..# #..#   |      #...o#    |      #oo#      |                |
    |    ###   ###   |      ######    |       ##       |                |
""",
    )
)
SPR.update(
    sheet(
        16,
        "SPR_OCTOROK SPR_OCTOROK2 SPR_KEESE SPR_KEESE2",
        """
    |                |                |                |                |
    |     ######     |     ######     |#              #|                |
    |   ##oooooo##   |   ##oooooo##   |##            ##|                |
    |  #o..ooooooo#  |  #o..ooooooo#  |#o#          #o#|      #  #      |
    | #o.oooooooooo# | #o.oooooooooo# |#oo#  #  #  #oo#|     #oooo#     |
    | #oo..oooo..oo# | #oo..oooo..oo# |#ooo# #### #ooo#|   ###.oo.###   |
    | #oo.#oooo#.oo# | #oo.#oooo#.oo# |#oooo#oooo#oooo#| ##oo#oooo#oo## |
    | #oooooooooooo# | #oooooooooooo# | #ooo#.oo.#ooo# |#oooo#oooo#oooo#|
    | #oooo####oooo# | #oooo####oooo# |  #oo#oooo#oo#  |#ooo#o#oo#o#ooo#|
    | #oooo#..#oooo# | #oooo#..#oooo# |   #o##oo##o#   |#oo#  #oo#  #oo#|
    |  #ooo####ooo#  |  #ooo####ooo#  |    # #oo# #    |#o#    ##    #o#|
    |   ##########   |   ##########   |       ##       |##            ##|
    |  #o# #oo# #o#  |   #o##oo##o#   |                |#              #|
    | #o#  #oo#  #o# |   #o##oo##o#   |                |                |
    | ##    ##    ## |   ##  ##  ##   |                |                |
    |                |                |                |                |
""",
    )
)
SPR.update(
    sheet(
        16,
        "SPR_ELDER SPR_SHOPKEEPER",
        """
    |                |    ########    |
    |     ######     |    #oooooo#    |
    |    #......#    |    #oooooo#    |
    |   #........#   | ############## |
    |   #.##..##.#   |   #........#   |
    |   #..#..#..#   |   #.#....#.#   |
    |  #o#......#o#  |   #........#   |
    |  #o#.####.#o#  |    #.####.#    |
    | #oo#......#oo# |  ##o#....#o##  |
    |#ooo#......#ooo#| #ooo######ooo# |
    |#.oo#......#oo.#| #.#o#....#o#.# |
    |#.oo##....##oo.#| #.#o#....#o#.# |
    |#ooooo#..#ooooo#| ###o#....#o### |
    | #ooooo##ooooo# |   #o#....#o#   |
    | #oooooooooooo# |   #o######o#   |
    | ############## |   ####  ####   |
""",
    )
)
SPR.update(
    sheet(
        16,
        "SPR_LINK_PASSOUT SPR_LINK_HOLD SPR_POOF SPR_LINK_HURT",
        """
    |                | ###        ### |#      ##      #|       ##       |
    |                | #..#  ##  #..# | #   ##..##   # |      #oo#      |
    |       ##       | #..# #oo# #..# |    #......#    |     #oooo#     |
    |     ##..###    |  #o##oooo##o#  |  ###.o..o.###  |    #oooooo#    |
    |    #oo###..#   |  #o#oooooo#o#  | #...#....#...# |   #oooooooo#   |
    |   #ooo..###### |  #o#o####o#o#  | #.o..#..#..o.# |  #oooooooooo#  |
    |  #ooo..#.#ooo# |  #o##....##o#  |#....o.  .o....#|  #oo.o..o.oo#  |
    | #ooooo.#.oo#o# |  #o#.#..#.#o#  |#...o.    .o...#| #.#.#....#.#.# |
    |#ooooo....oo##  |  #o#......#o#  |#...o.    .o...#| #.#..#..#..#.# |
    |#ooooo....oo####|  #oo######oo#  |#....o.  .o....#|  ###..##..###  |
    | #ooooo.#.oo#o.#|   #oooooooo#   | #.o..#..#..o.# |  #.##oooo##.#  |
    |  #ooo..#.#ooo.#|   ##o####o##   | #...#....#...# |  #.#oooooo#.#  |
    |   #ooo..#######|    #oooooo#    |  ###.o..o.###  |   ##o####o##   |
    |    #oo###..#   |    #oo##oo#    |    #......#    |   #oo#  #oo#   |
    |     ##..###    |    #..##..#    | #   ##..##   # |  #..#    #..#  |
    |       ##       |    ###  ###    |#      ##      #|  ####    ####  |
""",
    )
)
assert sorted(SPR) == sorted(SPRITE_NAMES)

# --------------------------------------------------------------------------
# Tile table
# --------------------------------------------------------------------------
TILE_DEFINES = [  # (name, index) written to gfx.h
    ("TILE_BLANK", 0x00),
    ("TILE_BOX_TL", 0x01),
    ("TILE_BOX_T", 0x02),
    ("TILE_BOX_TR", 0x03),
    ("TILE_BOX_L", 0x04),
    ("TILE_BOX_R", 0x05),
    ("TILE_BOX_BL", 0x06),
    ("TILE_BOX_B", 0x07),
    ("TILE_BOX_BR", 0x08),
    ("TILE_SOLID", 0x09),
    ("TILE_CURSOR", 0x0A),
    ("TILE_HEART_FULL", 0x10),
    ("TILE_HEART_HALF", 0x11),
    ("TILE_HEART_EMPTY", 0x12),
    ("TILE_RUPEE", 0x13),
    ("TILE_KEY", 0x14),
    ("TILE_SWORD", 0x15),
    ("TILE_INSTRUMENT", 0x16),
    ("TILE_DASH", 0x17),
    ("TILE_FONT_FIRST", 0x20),
    ("TILE_FONT_LAST", 0x5F),
    ("TILE_MT_FIRST", 0x60),
]
MT_BASE = 0x60
SPR_BASE = 0xB0


def build_tiles():
    """-> (tiles, labels): 256 tiles (8 rows of 8 colour indices) + comments."""
    tiles = [[[0] * 8 for _ in range(8)] for _ in range(256)]
    labels = [""] * 256
    labels[0] = "blank"

    def put(index, tile, label):
        assert labels[index] in ("", "blank") or index == 0, hex(index)
        assert len(tile) == 8
        assert all(len(r) == 8 for r in tile)
        tiles[index] = [list(r) for r in tile]
        labels[index] = label

    for name, index in TILE_DEFINES:
        short = name[5:]
        if short in BOX:
            put(index, BOX[short], name)
        elif short in UI:
            put(index, UI[short], name)
        elif short in HUD:
            put(index, HUD[short], name)
    for i, tile in enumerate(font_tiles()):
        put(0x20 + i, tile, f"font {chr(0x20 + i)!r}")
    for m, name in enumerate(METATILE_NAMES):  # row order: TL TR BL BR
        pic = MT[name]
        for k, (x, y) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
            put(
                MT_BASE + 4 * m + k,
                cut(pic, x, y),
                "{} {}".format(name, ("TL", "TR", "BL", "BR")[k]),
            )
    assert MT_BASE + 4 * len(METATILE_NAMES) == SPR_BASE
    for s, name in enumerate(SPRITE_NAMES):  # column order for 8x16 mode
        pic = SPR[name]
        for k, (x, y) in enumerate(((0, 0), (0, 8), (8, 0), (8, 8))):
            put(
                SPR_BASE + 4 * s + k,
                cut(pic, x, y),
                "{} {}".format(name, ("LT", "LB", "RT", "RB")[k]),
            )
    assert SPR_BASE + 4 * len(SPRITE_NAMES) == 0xF8
    return tiles, labels


def encode_tile(tile):
    """8x8 colour indices -> 16 bytes of Game Boy 2bpp."""
    out = []
    for row in tile:
        lo = hi = 0
        for x, c in enumerate(row):
            lo |= (c & 1) << (7 - x)
            hi |= ((c >> 1) & 1) << (7 - x)
        out += [lo, hi]
    return out


HEADER = (
    "/* Generated by tools/gfx.py -- DO NOT EDIT.\n"
    " * Change the art in tools/gfx.py and re-run it instead. */\n"
)


def write_h(path):
    lines = [HEADER, "#ifndef GFX_H", "#define GFX_H", ""]
    lines.append("/* Tile indices (2bpp 8x8 tiles in gfx_tiles). */")
    for name, index in TILE_DEFINES:
        lines.append(f"#define {name:<24} 0x{index:02X}")
    lines += [
        "",
        "/* Background metatiles: metatile m uses tiles TILE_MT_FIRST+4m..+3 */",
        f"#define {'N_METATILES':<24} {len(METATILE_NAMES)}",
    ]
    for m, name in enumerate(METATILE_NAMES):
        lines.append(f"#define {name:<24} {m}")
    lines += [
        "",
        "/* 16x16 sprites for 8x16 OBJ mode: tiles T, T+1 = left column"
        " (top, bottom), T+2, T+3 = right column. */",
    ]
    for s, name in enumerate(SPRITE_NAMES):
        lines.append(f"#define {name:<24} 0x{SPR_BASE + 4 * s:02X}")
    lines += [
        "",
        "extern const unsigned char gfx_tiles[4096];",
        "extern const unsigned char metatile_tiles[N_METATILES][4];",
        "",
        "#endif /* GFX_H */",
        "",
    ]
    write_text(path, "\n".join(lines))


def write_c(path, tiles, labels):
    lines = [HEADER, '#include "gfx.h"', "", "const unsigned char gfx_tiles[4096] = {"]
    for i, tile in enumerate(tiles):
        data = ",".join(f"0x{b:02X}" for b in encode_tile(tile))
        comment = (f"0x{i:02X} {labels[i]}").rstrip()
        lines.append("    {}, /* {} */".format(data, comment.replace("*/", "* /")))
    lines += ["};", "", "const unsigned char metatile_tiles[N_METATILES][4] = {"]
    for m, name in enumerate(METATILE_NAMES):
        t = MT_BASE + 4 * m
        lines.append(
            f"    {{ 0x{t:02X}, 0x{t + 1:02X}, 0x{t + 2:02X}, 0x{t + 3:02X} }}, /* {name} */"
        )
    lines += ["};", ""]
    write_text(path, "\n".join(lines))


def write_text(path, text):
    with open(path, "w", newline="\n") as f:
        f.write(text)


# --------------------------------------------------------------------------
# Preview PNG (for checking by eye)
# --------------------------------------------------------------------------
SHADES = [(255, 255, 255), (170, 170, 170), (85, 85, 85), (0, 0, 0)]
BG = (200, 215, 230)  # sheet background
CLEAR = (255, 190, 220)  # transparent sprite pixels in the sprite section

SCENES = {
    "map": {
        ".": "MT_FLOOR",
        "W": "MT_WALL",
        "T": "MT_TREE",
        "C": "MT_CHEST",
        "c": "MT_CHEST_OPEN",
        "B": "MT_BLOCK",
        "P": "MT_PLATE",
        "Q": "MT_BLOCK_ON_PLATE",
        "G": "MT_GATE",
        "L": "MT_LOCKED",
        "k": "MT_KEY",
        "r": "MT_RUPEE",
        "h": "MT_HEART",
        "v": "MT_STAIRS_DOWN",
        "^": "MT_STAIRS_UP",
        "I": "MT_INSTRUMENT",
        ",": "MT_DFLOOR",
        "D": "MT_DWALL",
        "~": "MT_WATER",
        "S": "MT_SIGN",
    },
    "overworld": [
        "WWWWWTTTTT",
        "W....T..rT",
        "W.S......T",
        "W....h...~",
        "WT.C...c.~",
        "WT.......~",
        "WTTT.kv.^~",
        "WWWWWWWWWW",
    ],
    "dungeon": [
        "DDDDDDDDDD",
        "D,,,,,,,,D",
        "D,B,P,Q,,D",
        "D,,,,,,,,G",
        "D,I,,,,k,L",
        "D,,,,,,,,D",
        "D,r,h,v^,D",
        "DDDDDDDDDD",
    ],
}


class Canvas:
    def __init__(self, w, h):
        self.w, self.h = w, h
        self.px = bytearray(bytes(BG) * (w * h))

    def rect(self, x, y, w, h, rgb):
        for yy in range(y, y + h):
            i = (yy * self.w + x) * 3
            self.px[i : i + 3 * w] = bytes(rgb) * w

    def tile(self, x, y, tile, scale, transparent=False, xflip=False):
        for ty, row in enumerate(tile):
            for tx, c in enumerate(row[::-1] if xflip else row):
                if c or not transparent:
                    self.rect(x + tx * scale, y + ty * scale, scale, scale, SHADES[c])

    def text(self, x, y, s, tiles, scale=2):
        for i, ch in enumerate(s):
            self.tile(x + i * 8 * scale, y, tiles[ord(ch)], scale)

    def png(self):
        raw = b"".join(
            b"\0" + bytes(self.px[y * self.w * 3 : (y + 1) * self.w * 3]) for y in range(self.h)
        )

        def chunk(kind, data):
            return (
                struct.pack(">I", len(data))
                + kind
                + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
            )

        return (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b"")
        )


def draw_metatile(cv, x, y, tiles, m, scale):
    for k, (dx, dy) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
        cv.tile(x + dx * scale, y + dy * scale, tiles[MT_BASE + 4 * m + k], scale)


def draw_sprite(cv, x, y, tiles, name, scale, transparent=True, xflip=False):
    t = SPR_BASE + 4 * SPRITE_NAMES.index(name)
    for k, (dx, dy) in enumerate(((0, 0), (0, 8), (8, 0), (8, 8))):
        if xflip:
            dx = 8 - dx
        cv.tile(x + dx * scale, y + dy * scale, tiles[t + k], scale, transparent, xflip)


def draw_box(cv, x, y, w, h, lines, tiles, scale):
    """Dialog box of w x h tiles using the frame tiles, with text lines."""

    def put(cx, cy, t):
        cv.tile(x + cx * 8 * scale, y + cy * 8 * scale, tiles[t], scale)

    for cy in range(h):
        for cx in range(w):
            top, bot, lft, rgt = cy == 0, cy == h - 1, cx == 0, cx == w - 1
            t = {
                (1, 0, 1, 0): 0x01,
                (1, 0, 0, 0): 0x02,
                (1, 0, 0, 1): 0x03,
                (0, 0, 1, 0): 0x04,
                (0, 0, 0, 1): 0x05,
                (0, 1, 1, 0): 0x06,
                (0, 1, 0, 0): 0x07,
                (0, 1, 0, 1): 0x08,
            }.get((top, bot, lft, rgt), 0)
            put(cx, cy, t)
    for cy, line in enumerate(lines):
        for cx, ch in enumerate(line):
            put(1 + cx, 1 + cy, 0x0A if ch == "{" else ord(ch))


def draw_scene(cv, x, y, tiles, rows, scale, sprites, box=None):
    legend = SCENES["map"]
    for my, row in enumerate(rows):
        for mx, ch in enumerate(row):
            draw_metatile(
                cv,
                x + mx * 16 * scale,
                y + my * 16 * scale,
                tiles,
                METATILE_NAMES.index(legend[ch]),
                scale,
            )
    for name, sx, sy, flip in sprites:
        draw_sprite(cv, x + sx * scale, y + sy * scale, tiles, name, scale, True, flip)
    if box:
        draw_box(cv, x, y + 80 * scale, 20, 6, box, tiles, scale)
    hud = [
        [
            0x15,
            0x16,
            0x17,
            0,
            0x13,
            ord("0"),
            ord("4"),
            ord("5"),
            0,
            0x14,
            ord("X"),
            ord("1"),
            0,
            0x10,
            0x10,
            0x10,
            0x11,
            0x12,
            0x12,
            0,
        ],
        [ord(c) for c in " B    A   LEVEL-1   "],
    ]
    for hy, row in enumerate(hud):
        for hx, t in enumerate(row):
            cv.tile(x + hx * 8 * scale, y + (128 + hy * 8) * scale, tiles[t], scale)


def preview(path, tiles):
    S, G = 4, 2  # scale, grid gap
    W = 16 * (8 * S + G) + G  # raw tile grid width
    W = max(W, 10 * (16 * S + 8) + 8, 2 * 320 + 24)
    H = 24 + 16 * (8 * S + G) + G + 2 * (24 + 2 * (16 * S + 8)) + 24 + 288 + 16 + 14 * 16 + 16
    cv = Canvas(W, H)
    y = 4
    cv.text(4, y, "TILES 00-FF", tiles)
    y += 20
    cv.rect(0, y, 16 * (8 * S + G) + G, 16 * (8 * S + G) + G, (90, 120, 160))
    for i in range(256):
        cv.tile(G + (i % 16) * (8 * S + G), y + G + (i // 16) * (8 * S + G), tiles[i], S)
    y += 16 * (8 * S + G) + G + 4
    cv.text(4, y, "METATILES", tiles)
    y += 20
    for m in range(len(METATILE_NAMES)):
        draw_metatile(cv, 8 + (m % 10) * (16 * S + 8), y + (m // 10) * (16 * S + 8), tiles, m, S)
    y += 2 * (16 * S + 8) + 4
    cv.text(4, y, "SPRITES", tiles)
    y += 20
    for s, name in enumerate(SPRITE_NAMES):
        sx, sy = 8 + (s % 10) * (16 * S + 8), y + (s // 10) * (16 * S + 8)
        cv.rect(sx, sy, 16 * S, 16 * S, CLEAR)
        draw_sprite(cv, sx, sy, tiles, name, S)
    y += 2 * (16 * S + 8) + 4
    cv.text(4, y, "SCENES (2X)", tiles)
    y += 20
    draw_scene(
        cv,
        8,
        y,
        tiles,
        SCENES["overworld"],
        2,
        [
            ("SPR_LINK_DOWN", 64, 40, False),
            ("SPR_ELDER", 48, 24, False),
            ("SPR_OCTOROK", 112, 16, False),
            ("SPR_SWORD_V", 64, 24, False),
        ],
        box=["IT'S DANGEROUS TO", "GO ALONE! TAKE IT?", "", "{YES    NO"],
    )
    draw_scene(
        cv,
        8 + 320 + 8,
        y,
        tiles,
        SCENES["dungeon"],
        2,
        [
            ("SPR_LINK_RIGHT", 80, 48, False),
            ("SPR_SWORD_H", 96, 48, False),
            ("SPR_LINK_RIGHT2", 48, 80, True),
            ("SPR_KEESE", 112, 16, False),
            ("SPR_KEESE2", 128, 80, False),
            ("SPR_SHOPKEEPER", 64, 16, False),
            ("SPR_POOF", 96, 96, False),
            ("SPR_LINK_HOLD", 32, 96, False),
            ("SPR_OCTOROK2", 112, 64, False),
            ("SPR_LINK_UP", 16, 48, False),
        ],
    )
    y += 288 + 16
    draw_box(
        cv,
        8,
        y,
        20,
        14,
        [
            "THE QUICK BROWN",
            "FOX JUMPS OVER THE",
            "LAZY DOG.",
            "",
            "0123456789",
            "!\"#$%&'()*+,-./",
            ":;<=>?@[\\]^_",
            "",
            "HEY! YOU'VE GOT 50",
            "RUPEES & 2 KEYS...",
            "(SAVE? Y/N) 3+4=7",
            "{CONTINUE",
        ],
        tiles,
        2,
    )
    with open(path, "wb") as f:
        f.write(cv.png())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preview", metavar="PATH", help="also write a PNG sheet")
    args = ap.parse_args()
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    tiles, labels = build_tiles()
    write_h(os.path.join(src, "gfx.h"))
    write_c(os.path.join(src, "gfx.c"), tiles, labels)
    if args.preview:
        preview(args.preview, tiles)


if __name__ == "__main__":
    main()
