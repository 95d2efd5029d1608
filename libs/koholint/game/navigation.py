"""Walking the cartridge's rooms: metatile ids, walkability, shortest paths, steering, and
the way to what a room holds (its chest, its locked door, its stairs down, a key on the
floor).

Metatile ids are the cartridge's (``cartridge/tools/gfx.py``), read from wRoomObjects.
Used by the walkthrough recorder, the explorer baseline and the scripted teachers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from koholint.game.emulator import Button
from koholint.game.ram import ROOM_HEIGHT, ROOM_WIDTH
from koholint.game.tiles import WALKABLE, Metatile, cells_of

Cell = tuple[int, int]
STEPS: dict[str, Cell] = {"right": (1, 0), "left": (-1, 0), "up": (0, -1), "down": (0, 1)}
DIRECTION_BUTTONS = {
    "right": Button.RIGHT,
    "left": Button.LEFT,
    "up": Button.UP,
    "down": Button.DOWN,
}
FACING = {"right": 0, "left": 1, "up": 2, "down": 3}  # hLinkDirection values
OVERWORLD_STEPS = {"up": -16, "down": 16, "left": -1, "right": 1}
"""room id differences between overworld neighbours (id = row << 4 | column)"""
Room = tuple[int, int, int]
"""(indoor, map id, room id)"""


class NoPathError(RuntimeError):
    """No walkable path joins the two cells."""


def tile_center(tile: int) -> int:
    return tile * 16 + 8


def find_path(
    tiles: Sequence[Sequence[int]], start: Cell, goal: Cell, allow: frozenset[int] = frozenset()
) -> list[Cell]:
    """Breadth-first shortest path over walkable cells (plus `allow`), start and goal included."""
    previous: dict[Cell, Cell | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            break
        for dx, dy in STEPS.values():
            nx, ny = cell[0] + dx, cell[1] + dy
            if not (0 <= nx < ROOM_WIDTH and 0 <= ny < ROOM_HEIGHT) or (nx, ny) in previous:
                continue
            if tiles[ny][nx] in WALKABLE or tiles[ny][nx] in allow or (nx, ny) == goal:
                previous[(nx, ny)] = cell
                queue.append((nx, ny))
    if goal not in previous:
        raise NoPathError(f"no walkable path from {start} to {goal}")
    path = [goal]
    while (step := previous[path[-1]]) is not None:
        path.append(step)
    return path[::-1]


def steer(position: Cell, target: Cell, axis: str, tolerance: int = 0) -> Button:
    """The d-pad button toward `target`: first align the axis other than `axis`.

    `tolerance` is how far from the target counts as there; with several frames per step,
    use half the pixels a step moves, or Link overshoots back and forth."""
    x, y = position
    tx, ty = target
    off_x, off_y = abs(tx - x) > tolerance, abs(ty - y) > tolerance
    if axis == "x" and off_y:
        return Button.DOWN if ty > y else Button.UP
    if axis == "y" and off_x:
        return Button.RIGHT if tx > x else Button.LEFT
    if off_x:
        return Button.RIGHT if tx > x else Button.LEFT
    if off_y:
        return Button.DOWN if ty > y else Button.UP
    return Button.NONE


def next_step(
    tiles: Sequence[Sequence[int]],
    position: Cell,
    goal: Cell,
    allow: frozenset[int] = frozenset(),
    tolerance: int = 0,
) -> Button:
    """The d-pad button along the shortest path from pixel `position` to the centre of `goal`."""
    here = (position[0] // 16, position[1] // 16)
    path = find_path(tiles, here, goal, allow)
    if len(path) == 1:
        return steer(position, (tile_center(goal[0]), tile_center(goal[1])), "x", tolerance)
    nxt = path[1]
    axis = "x" if nxt[1] == here[1] else "y"
    return steer(position, (tile_center(nxt[0]), tile_center(nxt[1])), axis, tolerance)


def neighbour_side(room: Room, other: Room) -> str | None:
    """Which side of overworld `room` leads into `other`, or None when they are not
    overworld neighbours."""
    if room[0] or other[0]:
        return None
    for side, step in OVERWORLD_STEPS.items():
        same_row = side in ("up", "down") or room[2] >> 4 == other[2] >> 4
        if other[2] - room[2] == step and same_row:
            return side
    return None


def edge_cells(tiles: Sequence[Sequence[int]], direction: str) -> list[Cell]:
    """Walkable cells on one edge of the room: where Link can leave in `direction`."""
    if direction in ("left", "right"):
        column = 0 if direction == "left" else ROOM_WIDTH - 1
        return [(column, row) for row in range(ROOM_HEIGHT) if tiles[row][column] in WALKABLE]
    row = 0 if direction == "up" else ROOM_HEIGHT - 1
    return [(column, row) for column in range(ROOM_WIDTH) if tiles[row][column] in WALKABLE]


def nearest_step(
    tiles: Sequence[Sequence[int]], position: Cell, kind: Metatile, tolerance: int = 0
) -> Button | None:
    """The d-pad button toward the room's `kind` tile nearest to pixel `position` (by the
    distance between centres); None when the room has none or no path leads there."""
    found = cells_of(tiles, kind)
    if not found:
        return None
    x, y = position
    goal = min(
        found, key=lambda cell: abs(tile_center(cell[0]) - x) + abs(tile_center(cell[1]) - y)
    )
    try:
        return next_step(tiles, position, goal, tolerance=tolerance)
    except NoPathError:
        return None


def chest_step(
    tiles: Sequence[Sequence[int]], position: Cell, direction: int, tolerance: int = 0
) -> Button | None:
    """The button that opens the room's closed chest from pixel `position`, Link facing
    `direction` (hLinkDirection): toward the tile below it, then up against it, then A (the
    cartridge opens a chest Link faces from below); None without a chest or a path to it."""
    chests = cells_of(tiles, Metatile.CHEST)
    if not chests:
        return None
    button = _approach(tiles, position, (chests[0][0], chests[0][1] + 1), "y", tolerance)
    if button != Button.NONE:
        return button
    return Button.A if direction == FACING["up"] else Button.UP


def _approach(
    tiles: Sequence[Sequence[int]], position: Cell, cell: Cell, axis: str, tolerance: int
) -> Button | None:
    """The button toward `cell`, then to its centre moving along `axis` (Button.NONE there);
    None when no walkable path leads there."""
    try:
        if (position[0] // 16, position[1] // 16) != cell:
            return next_step(tiles, position, cell, tolerance=tolerance)
        centre = (tile_center(cell[0]), tile_center(cell[1]))
        return steer(position, centre, axis, tolerance=tolerance)
    except NoPathError:
        return None


def edge_side(cell: Cell) -> str | None:
    """The side of the room whose edge `cell` lies on (None inside the room)."""
    x, y = cell
    if y in (0, ROOM_HEIGHT - 1):
        return "up" if y == 0 else "down"
    if x in (0, ROOM_WIDTH - 1):
        return "left" if x == 0 else "right"
    return None


def door_step(tiles: Sequence[Sequence[int]], position: Cell, tolerance: int = 0) -> Button | None:
    """The button that opens the room's locked door from pixel `position`: toward the cell
    inside it, centred on it, then into the door (a key opens it as Link walks into it);
    None without a locked door on the room's edge or a path to it."""
    doors = cells_of(tiles, Metatile.LOCKED_DOOR)
    if not doors:
        return None
    side = edge_side(doors[0])
    if side is None:
        return None
    x, y = doors[0]
    inside = (x - STEPS[side][0], y - STEPS[side][1])
    axis = "y" if side in ("up", "down") else "x"
    button = _approach(tiles, position, inside, axis, tolerance)
    return DIRECTION_BUTTONS[side] if button == Button.NONE else button


def stairs_step(
    tiles: Sequence[Sequence[int]], position: Cell, tolerance: int = 0
) -> Button | None:
    """The button toward the room's stairs down from pixel `position` (Button.NONE on them);
    None without stairs or a path to them."""
    stairs = cells_of(tiles, Metatile.STAIRS_DOWN)
    if not stairs:
        return None
    try:
        return next_step(tiles, position, stairs[0], tolerance=tolerance)
    except NoPathError:
        return None
