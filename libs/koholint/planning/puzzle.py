"""The block puzzle as a search problem: legal pushes and the shortest push sequence.

Rules (the cartridge's ``push_block``): Link pushes the block one tile by walking into it
from the opposite side; the block moves only onto floor or the plate, and never onto the
room's outer ring (x 1..8, y 1..6). Link must be able to walk to the cell behind it.
"""

from __future__ import annotations

from collections import deque

from koholint.game.navigation import STEPS, Cell, NoPathError, find_path
from koholint.game.tiles import WALKABLE, Metatile
from koholint.schemas.planner import Tiles

BLOCK_AREA = (range(1, 9), range(1, 7))
_DESTINATIONS = frozenset({Metatile.FLOOR, Metatile.DUNGEON_FLOOR, Metatile.PLATE})


def tile_name(tile: int) -> str:
    return (
        Metatile(tile).name.lower() if tile in Metatile._value2member_map_ else f"tile 0x{tile:02X}"
    )


def find_tiles(tiles: Tiles, kind: int) -> list[Cell]:
    return [(x, y) for y, row in enumerate(tiles) for x, tile in enumerate(row) if tile == kind]


def _with(tiles: Tiles, changes: dict[Cell, int]) -> Tiles:
    return tuple(
        tuple(changes.get((x, y), tile) for x, tile in enumerate(row))
        for y, row in enumerate(tiles)
    )


def _reachable(tiles: Tiles, start: Cell, goal: Cell) -> bool:
    if tiles[goal[1]][goal[0]] not in WALKABLE:
        return False
    try:
        find_path(tiles, start, goal)
    except NoPathError:
        return False
    return True


def push_problem(tiles: Tiles, link: Cell, block: Cell, direction: str) -> str | None:
    """Why pushing `block` in `direction` cannot work from here, or None when it can."""
    dx, dy = STEPS[direction]
    dest = (block[0] + dx, block[1] + dy)
    behind = (block[0] - dx, block[1] - dy)
    if dest[0] not in BLOCK_AREA[0] or dest[1] not in BLOCK_AREA[1]:
        return f"the block at {block} cannot move {direction}: the room's edge"
    if tiles[dest[1]][dest[0]] not in _DESTINATIONS:
        return f"the block at {block} cannot move {direction}: {tile_name(tiles[dest[1]][dest[0]])} at {dest}"
    if not (0 <= behind[0] < len(tiles[0]) and 0 <= behind[1] < len(tiles)):
        return f"nowhere to stand behind the block at {block} to push {direction}"
    if link != behind and not _reachable(tiles, link, behind):
        return f"Link cannot reach {behind} to push the block {direction}"
    return None


def legal_pushes(tiles: Tiles, link: Cell, block: Cell) -> list[str]:
    return [d for d in STEPS if push_problem(tiles, link, block, d) is None]


def solve(tiles: Tiles, link: Cell) -> list[str] | None:
    """The fewest pushes that put the room's block on its plate ([] when already there),
    or None when no sequence does (a block stuck in a corner)."""
    blocks, plates = find_tiles(tiles, Metatile.BLOCK), find_tiles(tiles, Metatile.PLATE)
    if not plates:
        return []
    if len(blocks) != 1:
        return None
    block = blocks[0]
    base = _with(tiles, {block: Metatile.FLOOR})
    plate_set = set(plates)
    start = (block, link)
    previous: dict[tuple[Cell, Cell], tuple[tuple[Cell, Cell], str] | None] = {start: None}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        where, standing = state
        if where in plate_set:
            moves: list[str] = []
            while (step := previous[state]) is not None:
                state, direction = step
                moves.append(direction)
            return moves[::-1]
        room = _with(base, {where: Metatile.BLOCK})
        for direction, (dx, dy) in STEPS.items():
            if push_problem(room, standing, where, direction) is None:
                following = ((where[0] + dx, where[1] + dy), where)
                if following not in previous:
                    previous[following] = (state, direction)
                    queue.append(following)
    return None


def after_push(tiles: Tiles, block: Cell, direction: str) -> tuple[Tiles, Cell]:
    """The room after pushing `block` one tile, and where Link then stands (the block's cell)."""
    dx, dy = STEPS[direction]
    dest = (block[0] + dx, block[1] + dy)
    moved = Metatile.BLOCK_ON_PLATE if tiles[dest[1]][dest[0]] == Metatile.PLATE else Metatile.BLOCK
    return _with(tiles, {block: Metatile.FLOOR, dest: moved}), block


def safe_pushes(tiles: Tiles, link: Cell, block: Cell) -> list[str]:
    """Legal pushes after which the puzzle can still be solved (no dead ends)."""
    safe = []
    for direction in legal_pushes(tiles, link, block):
        room, standing = after_push(tiles, block, direction)
        if not find_tiles(room, Metatile.BLOCK) or solve(room, standing) is not None:
            safe.append(direction)
    return safe
