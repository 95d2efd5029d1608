"""Generated worlds: the cartridge's mechanics composed anew from a seed, proven winnable.

:func:`generate` draws a world of a size (``small`` about the default's 13 rooms, ``medium``
24 rooms with 2 keys and 2 puzzles, ``large`` 54 rooms with 3 keys and 3 puzzles): an
overworld of screens on a grid joined as a random tree, the start with the elder, the sword's
chest, a shop, block puzzles whose gates close the way on, a cave mouth whose stairs lead to
a dungeon, itself a random tree of rooms with locked doors on the way to the instrument and
a key for each before its door (shown once its room's enemies are beaten). Room shapes,
obstacles, enemies, rupees and hearts are drawn per room. The same seed and size give the
same world, in pure Python, well under a second.

:func:`solve` searches the world's graph (rooms, exits, gates, doors, keys, the sword,
stairs) for the shortest route to the instrument; every generated world is checked with it.
:func:`write_world` puts the world into the engine ROM's region and writes its card.

>>> world = generate(0, "small")
>>> solve(world.world)[-1].action
'instrument'
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from koholint.game.rom import WORLD_ROM_NAME
from koholint.game.worlds import (
    ENEMIES,
    OPPOSITE,
    SOLID,
    STEP,
    Room,
    Warp,
    World,
    WorldError,
    default_dialogs,
    encode_world,
    install_world,
)

CARD_SCHEMA_VERSION = 1
Cell = tuple[int, int]
# The two cells of each edge's opening, and the cells just inside them.
OPENINGS: dict[str, tuple[Cell, Cell]] = {
    "north": ((4, 0), (5, 0)), "south": ((4, 7), (5, 7)),
    "west": ((0, 3), (0, 4)), "east": ((9, 3), (9, 4)),
}  # fmt: skip
INSIDE: dict[str, tuple[Cell, Cell]] = {
    "north": ((4, 1), (5, 1)), "south": ((4, 6), (5, 6)),
    "west": ((1, 3), (1, 4)), "east": ((8, 3), (8, 4)),
}  # fmt: skip
INTERIOR = [(x, y) for y in range(1, 7) for x in range(1, 9)]


@dataclass(frozen=True)
class WorldSize:
    overworld: Cell  # grid columns, rows
    overworld_rooms: int
    dungeon: Cell
    dungeon_rooms: int
    keys: int
    puzzles: int


SIZES = {
    "small": WorldSize((3, 3), 9, (3, 3), 4, 1, 1),
    "medium": WorldSize((4, 4), 14, (4, 4), 10, 2, 2),
    "large": WorldSize((7, 6), 34, (5, 5), 20, 3, 3),
}


@dataclass(frozen=True)
class Step:
    """One move of a route: leave a room by an exit or stairs, or act in it."""

    action: str  # "exit", "stairs", "sword", "puzzle", "key", "door", "instrument"
    room: str
    direction: str = ""


@dataclass
class GeneratedWorld:
    seed: int
    size: str
    world: World
    items: dict[str, list[tuple[str, Cell]]] = field(default_factory=dict)
    route: list[Step] = field(default_factory=list)


class _Retry(Exception):
    pass


# -- the world's graph ------------------------------------------------------------------------


def _grow_tree(rng: random.Random, grid: Cell, count: int, root: Cell) -> dict[Cell, Cell | None]:
    """A random tree of `count` grid cells from `root` (randomised Prim): cell -> parent."""
    columns, rows = grid
    parents: dict[Cell, Cell | None] = {root: None}
    frontier = [(root, cell) for cell in _neighbours(root, columns, rows)]
    while len(parents) < count and frontier:
        parent, cell = frontier.pop(rng.randrange(len(frontier)))
        if cell in parents:
            continue
        parents[cell] = parent
        frontier += [(cell, n) for n in _neighbours(cell, columns, rows) if n not in parents]
    if len(parents) < count:
        raise _Retry
    return parents


def _neighbours(cell: Cell, columns: int, rows: int) -> list[Cell]:
    x, y = cell
    around = ((x + 1, y), (x - 1, y), (x, y - 1), (x, y + 1))
    return [(a, b) for a, b in around if 0 <= a < columns and 0 <= b < rows]


def _direction(a: Cell, b: Cell) -> str:
    step = (b[0] - a[0], b[1] - a[1])
    return next(d for d, s in STEP.items() if s == step)


def _path_to_deepest(parents: dict[Cell, Cell | None]) -> list[Cell]:
    def depth(cell: Cell) -> int:
        steps = 0
        while parents[cell] is not None:
            cell = parents[cell]  # type: ignore[assignment]
            steps += 1
        return steps

    deepest = max(parents, key=lambda cell: (depth(cell), cell))
    path = [deepest]
    while parents[path[-1]] is not None:
        path.append(parents[path[-1]])  # type: ignore[arg-type]
    return path[::-1]


def _region(parents: dict[Cell, Cell | None], root: Cell, cut: set[tuple[Cell, Cell]]) -> set[Cell]:
    """Cells reachable from `root` over tree edges, none of the (parent, child) edges in `cut`."""
    children: dict[Cell, list[Cell]] = {}
    for child, parent in parents.items():
        if parent is not None:
            children.setdefault(parent, []).append(child)
    seen, todo = {root}, [root]
    while todo:
        cell = todo.pop()
        for child in children.get(cell, []):
            if (cell, child) not in cut and child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


# -- rooms ------------------------------------------------------------------------------------


@dataclass
class _Plan:
    """What one room must hold, before its shape is drawn."""

    name: str
    cell: Cell
    indoor: int
    exits: dict[str, str] = field(default_factory=dict)  # direction -> neighbour name
    closed: dict[str, str] = field(default_factory=dict)  # direction -> "G" or "L"
    features: list[str] = field(default_factory=list)
    enemies: int = 0


def _layout(
    rng: random.Random, plan: _Plan
) -> tuple[list[str], list[tuple[str, int, int]], dict[str, Cell]]:
    """Draw the room: walls with the exits' openings, the features, obstacles, spawns."""
    for _ in range(40):
        try:
            return _try_layout(rng, plan, obstacles=True)
        except _Retry:
            continue
    return _try_layout(rng, plan, obstacles=False)


def _try_layout(
    rng: random.Random, plan: _Plan, *, obstacles: bool
) -> tuple[list[str], list[tuple[str, int, int]], dict[str, Cell]]:
    wall, floor = ("%", ",") if plan.indoor else ("#", ".")
    grid = [[wall] * 10 for _ in range(8)]
    for x, y in INTERIOR:
        grid[y][x] = floor
    reserved: set[Cell] = set()
    for direction in plan.exits:
        for x, y in OPENINGS[direction]:
            grid[y][x] = plan.closed.get(direction, floor)
        reserved.update(INSIDE[direction])
    spawns: list[tuple[str, int, int]] = []
    places: dict[str, Cell] = {}
    free = [cell for cell in INTERIOR if cell not in reserved]
    rng.shuffle(free)
    for feature in plan.features:
        _place(rng, feature, grid, reserved, free, spawns, places, floor)
    targets = set(reserved)
    if obstacles:
        blockers = "%" if plan.indoor else "T~"
        for cell in free:
            if cell not in reserved and rng.random() < 0.16:
                grid[cell[1]][cell[0]] = rng.choice(blockers)
    entries = [cell for d in plan.exits for cell in INSIDE[d]] or sorted(targets)
    near_entry = {(x + dx, y + dy) for x, y in entries for dx in (-1, 0, 1) for dy in (-1, 0, 1)}
    floor_cells = [
        c for c in INTERIOR if grid[c[1]][c[0]] == floor and c not in reserved | near_entry
    ]
    rng.shuffle(floor_cells)
    for cell in floor_cells[: plan.enemies]:
        spawns.append((rng.choice(sorted(ENEMIES)), cell[0], cell[1]))
        targets.add(cell)
    _check_connected(grid, spawns, targets, places)
    return ["".join(row) for row in grid], spawns, places


def _place(
    rng: random.Random,
    feature: str,
    grid: list[list[str]],
    reserved: set[Cell],
    free: list[Cell],
    spawns: list[tuple[str, int, int]],
    places: dict[str, Cell],
    floor: str,
) -> None:
    """Put one feature on free interior cells, reserving what reaching it needs."""
    if feature == "puzzle":
        _place_puzzle(rng, grid, reserved, places, floor)
        return
    below = {"elder": 1, "shopkeeper": 1, "chest": 1, "stairs_down": 1, "stairs_up": 2}.get(
        feature, 0
    )
    for x, y in list(free):
        cells = [(x, y + offset) for offset in range(below + 1)]
        if all(c in free and c not in reserved and 1 <= c[1] <= 6 for c in cells):
            break
    else:
        raise _Retry
    reserved.update(cells)
    marker = {"chest": "C", "stairs_down": "v", "stairs_up": "^", "key": "K", "instrument": "I",
              "rupee": "$", "heart": "h"}.get(feature)  # fmt: skip
    if marker:
        grid[y][x] = marker
    elif feature in ("elder", "shopkeeper"):
        spawns.append((feature, x, y))
    places[feature] = (x, y)
    if below:
        places[f"{feature}_front"] = (x, y + below)


def _place_puzzle(
    rng: random.Random,
    grid: list[list[str]],
    reserved: set[Cell],
    places: dict[str, Cell],
    floor: str,
) -> None:
    """A block pushed `across` tiles sideways, then `down` tiles up or down, onto the plate."""
    for _ in range(60):
        side, vertical = rng.choice((-1, 1)), rng.choice((-1, 1))
        across, down = rng.randint(1, 2), rng.randint(1, 3)
        bx, by = rng.randint(2, 7), rng.randint(2, 5)
        px, py = bx + side * across, by + vertical * down
        stand = [(bx - side, by), (px, by - vertical)]
        cells = [(x, by) for x in range(min(bx, px), max(bx, px) + 1)]
        cells += [(px, y) for y in range(min(by, py), max(by, py) + 1)] + stand
        if not (2 <= px <= 7 and 2 <= py <= 5) or any(c in reserved for c in cells):
            continue
        if any(not (1 <= x <= 8 and 1 <= y <= 6) for x, y in stand):
            continue
        box = {(x, y) for x in range(min(bx, px) - 1, max(bx, px) + 2)
               for y in range(min(by, py) - 1, max(by, py) + 2) if 1 <= x <= 8 and 1 <= y <= 6}  # fmt: skip
        reserved.update(box)
        grid[by][bx], grid[py][px] = "B", "P"
        places["block"], places["plate"] = (bx, by), (px, py)
        return
    raise _Retry


def _check_connected(
    grid: list[list[str]],
    spawns: list[tuple[str, int, int]],
    targets: set[Cell],
    places: dict[str, Cell],
) -> None:
    """Every target cell is reachable on foot from every other (NPCs stand in the way)."""
    npcs = {(x, y) for kind, x, y in spawns if kind not in ENEMIES}
    goals = {c for c in targets if c not in npcs and grid[c[1]][c[0]] not in SOLID}
    goals |= {places[k] for k in places if k.endswith("_front")}
    if not goals:
        return
    start = min(goals)
    seen, todo = {start}, deque([start])
    passable = set(".,P$hK")
    while todo:
        x, y = todo.popleft()
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            cell = (x + dx, y + dy)
            if cell in seen or not (0 <= cell[0] < 10 and 0 <= cell[1] < 8) or cell in npcs:
                continue
            if grid[cell[1]][cell[0]] in passable or cell in goals:
                seen.add(cell)
                if grid[cell[1]][cell[0]] in passable:
                    todo.append(cell)
    if not goals <= seen:
        raise _Retry


# -- a whole world ----------------------------------------------------------------------------


def generate(seed: int, size: str = "small") -> GeneratedWorld:
    """The world of `seed` and `size`; the same arguments give the same world."""
    if size not in SIZES:
        raise WorldError(f"size {size!r}: choose one of {', '.join(SIZES)}")
    rng = random.Random(f"koholint-world-{size}-{seed}")
    for _ in range(200):
        try:
            generated = _attempt(rng, seed, size, SIZES[size])
        except _Retry:
            continue
        generated.route = solve(generated.world)
        return generated
    raise WorldError(f"no world found for seed {seed}, size {size}")  # pragma: no cover


def _attempt(rng: random.Random, seed: int, size: str, spec: WorldSize) -> GeneratedWorld:
    columns, rows = spec.overworld
    start = (rng.randrange(columns), rng.randrange(rows))
    over = _grow_tree(rng, spec.overworld, spec.overworld_rooms, start)
    path = _path_to_deepest(over)
    if len(path) - 2 < spec.puzzles:
        raise _Retry
    gate_rooms = sorted(rng.sample(range(1, len(path) - 1), spec.puzzles))
    gates = {(path[i], path[i + 1]) for i in gate_rooms}
    zone = _region(over, start, gates) - {start} - {path[i] for i in gate_rooms}
    if not zone:
        raise _Retry
    sword = rng.choice(sorted(zone))
    cave = path[-1]
    spare = sorted(set(over) - {start, sword, cave} - {path[i] for i in gate_rooms})
    shop = rng.choice(spare) if spare else None
    plans = {cell: _Plan(f"field_{cell[0]}_{cell[1]}", cell, 0) for cell in over}
    _join(plans, over, dict.fromkeys(gates, "G"))
    plans[start].features += ["start", "elder"]
    plans[sword].features.append("chest")
    for a, _ in gates:
        plans[a].features.append("puzzle")
    plans[cave].features.append("stairs_down")
    if shop is not None:
        plans[shop].features.append("shopkeeper")
    for _cell, plan in plans.items():
        if not plan.features:
            plan.enemies = rng.randint(0, 2)
            plan.features += [f for f in ("rupee", "heart") if rng.random() < 0.4]
    dungeon_plans, entrance = _dungeon(rng, spec)
    return _assemble(rng, seed, size, plans, dungeon_plans, start, cave, entrance)


def _join(
    plans: dict[Cell, _Plan], parents: dict[Cell, Cell | None], closed: dict[tuple[Cell, Cell], str]
) -> None:
    for child, parent in parents.items():
        if parent is None:
            continue
        direction = _direction(parent, child)
        plans[parent].exits[direction] = plans[child].name
        plans[child].exits[OPPOSITE[direction]] = plans[parent].name
        if (parent, child) in closed:
            plans[parent].closed[direction] = closed[(parent, child)]


def _dungeon(rng: random.Random, spec: WorldSize) -> tuple[dict[Cell, _Plan], Cell]:
    columns, rows = spec.dungeon
    entrance = (rng.randrange(columns), rows - 1)
    tree = _grow_tree(rng, spec.dungeon, spec.dungeon_rooms, entrance)
    path = _path_to_deepest(tree)
    if len(path) - 2 < spec.keys:
        raise _Retry
    door_at = sorted(rng.sample(range(1, len(path) - 1), spec.keys))
    doors = [(path[i], path[i + 1]) for i in door_at]
    plans = {cell: _Plan(f"hall_{cell[0]}_{cell[1]}", cell, 1) for cell in tree}
    _join(plans, tree, dict.fromkeys(doors, "L"))
    opened: set[Cell] = set()
    for index in range(len(doors)):
        region = _region(tree, entrance, set(doors[index:])) - opened
        side = sorted(region - set(path)) or sorted(region - {entrance})
        if not side:
            raise _Retry
        key_room = rng.choice(side)
        plans[key_room].features.append("key")
        plans[key_room].enemies = max(plans[key_room].enemies, rng.randint(1, 3))
        opened |= region
    plans[entrance].features.append("stairs_up")
    plans[path[-1]].features.append("instrument")
    for _cell, plan in plans.items():
        if not plan.features:
            plan.enemies = rng.randint(0, 3)
            plan.features += [f for f in ("heart",) if rng.random() < 0.2]
    return plans, entrance


def _assemble(
    rng: random.Random,
    seed: int,
    size: str,
    plans: dict[Cell, _Plan],
    dungeon: dict[Cell, _Plan],
    start: Cell,
    cave: Cell,
    entrance: Cell,
) -> GeneratedWorld:
    rooms: list[Room] = []
    places: dict[str, dict[str, Cell]] = {}
    for plan in [*plans.values(), *dungeon.values()]:
        rows_, spawns, where = _layout(rng, plan)
        room_id = plan.cell[1] * 16 + plan.cell[0]
        rooms.append(Room(plan.name, room_id, plan.indoor, 0, rows_, dict(plan.exits), spawns))
        places[plan.name] = where
    start_name, cave_name, entrance_name = (
        plans[start].name,
        plans[cave].name,
        dungeon[entrance].name,
    )
    down, up = places[cave_name]["stairs_down"], places[entrance_name]["stairs_up"]
    warps = [
        Warp((cave_name, *down), (entrance_name, up[0], up[1] + 2, "north")),
        Warp((entrance_name, *up), (cave_name, down[0], down[1] + 1, "south")),
    ]
    elder = (
        "WELCOME, HERO. A SWORD RESTS IN A CHEST NEARBY. PUSH EACH STONE ONTO ITS PLATE AND A "
        "GATE WILL OPEN. STAIRS IN A FAR CAVE LEAD DOWN TO THE INSTRUMENT. KEYS OPEN ITS DOORS."
    )
    world = World(
        rooms=rooms,
        start=(start_name, *places[start_name]["start"]),
        warps=warps,
        dialogs=default_dialogs(10, elder),
    )
    items: dict[str, list[tuple[str, Cell]]] = {}
    for name, where in places.items():
        for item in ("chest", "key", "instrument", "puzzle", "block", "stairs_down", "shopkeeper"):
            if item in where:
                items.setdefault(item, []).append((name, where[item]))
    return GeneratedWorld(seed=seed, size=size, world=world, items=items)


# -- solving ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _RoomFacts:
    gates: frozenset[str]  # exits closed by the room's gate until its puzzle is solved
    locks: frozenset[str]  # exits closed by the room's locked door until it is opened
    puzzle: bool
    chest: bool
    key: bool
    enemies: bool
    instrument: bool


def _facts(room: Room) -> _RoomFacts:
    def closed(marker: str) -> frozenset[str]:
        return frozenset(
            d for d in room.exits if any(room.rows[y][x] == marker for x, y in OPENINGS_ALL[d])
        )

    return _RoomFacts(
        gates=closed("G"),
        locks=closed("L"),
        puzzle=bool(room.cells("B")) and bool(room.cells("P")),
        chest=bool(room.cells("C")),
        key=bool(room.cells("K")),
        enemies=any(kind in ENEMIES for kind, _, _ in room.spawns),
        instrument=bool(room.cells("I")),
    )


# Every edge cell, for reading which exits a room's gates and doors close.
OPENINGS_ALL: dict[str, list[Cell]] = {
    "north": [(x, 0) for x in range(10)], "south": [(x, 7) for x in range(10)],
    "west": [(0, y) for y in range(8)], "east": [(9, y) for y in range(8)],
}  # fmt: skip

_State = tuple[str, bool, int, frozenset[str], frozenset[str], frozenset[str]]


@dataclass(frozen=True)
class Progress:
    """Where Link is and what he has done: the solver's state."""

    room: str
    sword: bool = False
    keys: int = 0
    solved: frozenset[str] = frozenset()  # rooms whose puzzle is solved
    opened: frozenset[str] = frozenset()  # rooms whose locked door is open
    taken: frozenset[str] = frozenset()  # rooms whose key is taken

    def state(self) -> _State:
        return (self.room, self.sword, self.keys, self.solved, self.opened, self.taken)


def solve(world: World, progress: Progress | None = None) -> list[Step]:
    """The shortest route (in exits, stairs and actions) to the instrument, from the start
    or from `progress` (where Link is and what he has done, e.g. read from RAM).

    Taking the sword, a key or solving a room's puzzle never closes a way, so they happen on
    arrival; opening a door spends a key, so it is a choice. WorldError when no route exists.
    """
    facts = {room.name: _facts(room) for room in world.rooms}
    rooms = {room.name: room for room in world.rooms}
    stairs: dict[str, list[str]] = {}
    for warp in world.warps:
        stairs.setdefault(warp.source[0], []).append(warp.target[0])
    progress = progress or Progress(world.start[0])
    first, steps = _arrive(progress.state(), facts)
    parents: dict[_State, tuple[_State | None, list[Step]]] = {first: (None, steps)}
    todo = deque([first])
    while todo:
        state = todo.popleft()
        room = state[0]
        if facts[room].instrument:
            return _route(parents, state) + [Step("instrument", room)]
        for step, after in _moves(state, rooms[room], facts, stairs):
            arrived, found = _arrive(after, facts)
            if arrived not in parents:
                parents[arrived] = (state, [step, *found])
                todo.append(arrived)
    raise WorldError("the world cannot be won: no route from the start reaches the instrument")


def _arrive(state: _State, facts: dict[str, _RoomFacts]) -> tuple[_State, list[Step]]:
    room, sword, keys, solved, opened, taken = state
    fact, steps = facts[room], []
    if fact.chest and not sword:
        sword = True
        steps.append(Step("sword", room))
    if fact.puzzle and room not in solved:
        solved = solved | {room}
        steps.append(Step("puzzle", room))
    if fact.key and room not in taken and (sword or not fact.enemies):
        keys, taken = keys + 1, taken | {room}
        steps.append(Step("key", room))
    return (room, sword, keys, solved, opened, taken), steps


def _moves(
    state: _State, room: Room, facts: dict[str, _RoomFacts], stairs: dict[str, list[str]]
) -> Iterable[tuple[Step, _State]]:
    name, sword, keys, solved, opened, taken = state
    fact = facts[name]
    if fact.locks and name not in opened and keys:
        yield Step("door", name), (name, sword, keys - 1, solved, opened | {name}, taken)
    for direction, target in room.exits.items():
        if direction in fact.gates and name not in solved:
            continue
        if direction in fact.locks and name not in opened:
            continue
        back, there = OPPOSITE[direction], facts[target]
        if (back in there.gates and target not in solved) or (
            back in there.locks and target not in opened
        ):
            continue  # Link would stand in a closed gate or door
        yield Step("exit", name, direction), (target, sword, keys, solved, opened, taken)
    for target in stairs.get(name, []):
        yield Step("stairs", name), (target, sword, keys, solved, opened, taken)


def _route(parents: dict[_State, tuple[_State | None, list[Step]]], state: _State) -> list[Step]:
    chunks = []
    current: _State | None = state
    while current is not None:
        previous, steps = parents[current]
        chunks.append(steps)
        current = previous
    return [step for chunk in reversed(chunks) for step in chunk]


# -- the ROM and the card ---------------------------------------------------------------------


def card(
    generated: GeneratedWorld, rom: bytes, walkthrough_frames: int | None = None
) -> dict[str, object]:
    """world.json: the rooms, the route's key items and where they lie, the route's length
    (and the frames the walkthrough controller took from power-on, when it was played)."""
    world = generated.world
    return {
        "schema_version": CARD_SCHEMA_VERSION,
        "seed": generated.seed,
        "size": generated.size,
        "rom_sha256": hashlib.sha256(rom).hexdigest(),
        "rooms": [
            {
                "name": r.name,
                "indoor": r.indoor,
                "map": r.map_id,
                "room": r.room_id,
                "exits": r.exits,
                "rows": r.rows,
                "enemies": sum(kind in ENEMIES for kind, _, _ in r.spawns),
            }
            for r in world.rooms
        ],  # fmt: skip
        "start": list(world.start),
        "key_items": {
            item: [{"room": room, "cell": list(cell)} for room, cell in where]
            for item, where in sorted(generated.items.items())
        },
        "counts": {
            "rooms": len(world.rooms),
            "overworld_rooms": sum(not r.indoor for r in world.rooms),
            "dungeon_rooms": sum(r.indoor for r in world.rooms),
            "keys": len(generated.items.get("key", [])),
            "puzzles": len(generated.items.get("block", [])),
            "enemies": sum(kind in ENEMIES for r in world.rooms for kind, _, _ in r.spawns),
        },
        "route": [
            {
                "action": s.action,
                "room": s.room,
                **({"direction": s.direction} if s.direction else {}),
            }
            for s in generated.route
        ],
        "walkthrough_length": {
            "route_steps": len(generated.route),
            "room_moves": sum(s.action in ("exit", "stairs") for s in generated.route),
            "frames_from_power_on": walkthrough_frames,
        },
    }


def build_rom(generated: GeneratedWorld, engine_rom: bytes) -> bytes:
    """The engine ROM carrying the generated world."""
    return install_world(engine_rom, encode_world(generated.world))


def write_world(
    generated: GeneratedWorld, engine_rom: bytes, out: Path, walkthrough_frames: int | None = None
) -> tuple[Path, Path]:
    """Write DIR/cartridge.gb and DIR/world.json; return their paths."""
    rom = build_rom(generated, engine_rom)
    out.mkdir(parents=True, exist_ok=True)
    rom_path, card_path = out / WORLD_ROM_NAME, out / "world.json"
    rom_path.write_bytes(rom)
    document = card(generated, rom, walkthrough_frames)
    card_path.write_text(json.dumps(document, indent=1) + "\n")
    return rom_path, card_path
