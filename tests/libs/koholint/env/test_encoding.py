"""The 128-float observation: every documented slot moves when its RAM source does."""

from __future__ import annotations

import numpy as np
import pytest

from koholint.env.encoding import (
    EVENT_BITS,
    FLAG_SLOTS,
    FLAGS_SIZE,
    LOCAL_SIZE,
    LOCAL_SLOTS,
    MEMORY_SIZE,
    MEMORY_SLOTS,
    OBSERVATION_SIZE,
    SLOTS,
    encode,
    encode_memory,
    encoder,
    encoder_version,
    encoding_size,
)
from koholint.game.emulator import GameBoy
from koholint.game.ram import RamAddress as R
from koholint.game.state import RawState
from koholint.game.states import load_named_state
from koholint.game.tiles import SOLID as SOLID_TILES

# start_of_play: the village, Link at (72, 88) = tile (4, 5) facing up, the elder in slot 0.
LINK_TILE = (4, 5)
NEIGHBOURS = {"n": (0, -1), "ne": (1, -1), "e": (1, 0), "se": (1, 1), "s": (0, 1), "sw": (-1, 1), "w": (-1, 0), "nw": (-1, -1)}  # fmt: skip
FRONT = R.ROOM_OBJECTS + ((LINK_TILE[1] - 1) << 4) + LINK_TILE[0]  # Link faces up


def neighbour_address(name: str) -> int:
    dx, dy = NEIGHBOURS[name]
    return R.ROOM_OBJECTS + ((LINK_TILE[1] + dy) << 4) + LINK_TILE[0] + dx


Pokes = list[tuple[int, int]]
ENEMY_SLOT_5: Pokes = [(R.ENTITIES_STATUS + 5, 5), (R.ENTITIES_TYPE + 5, 0x09), (R.ENTITIES_X + 5, 90), (R.ENTITIES_Y + 5, 80)]  # fmt: skip

RECIPES: dict[str, tuple[Pokes, Pokes]] = {
    "indoor": ([], [(R.IS_INDOOR, 1)]),
    "map_id": ([(R.IS_INDOOR, 1)], [(R.MAP_ID, 5)]),
    "room_id": ([], [(R.MAP_ROOM, 0x44)]),
    "room_row": ([], [(R.MAP_ROOM, 0x41)]),
    "room_column": ([], [(R.MAP_ROOM, 0x25)]),
    "link_x": ([], [(R.LINK_X, 100)]),
    "link_y": ([], [(R.LINK_Y, 40)]),
    "link_tile_x": ([], [(R.LINK_X, 120)]),
    "link_tile_y": ([], [(R.LINK_Y, 24)]),
    "facing_right": ([], [(R.LINK_DIRECTION, 0)]),
    "facing_left": ([], [(R.LINK_DIRECTION, 1)]),
    "facing_up": ([], [(R.LINK_DIRECTION, 0)]),
    "facing_down": ([], [(R.LINK_DIRECTION, 3)]),
    "motion_normal": ([], [(R.LINK_MOTION_STATE, 7)]),
    "motion_map_fade": ([], [(R.LINK_MOTION_STATE, 3)]),
    "motion_pass_out": ([], [(R.LINK_MOTION_STATE, 7)]),
    "in_transition": ([], [(R.ROOM_TRANSITION_STATE, 2)]),
    "dialog_open": ([], [(R.DIALOG_STATE, 0x89)]),
    "dialog_printing": ([], [(R.DIALOG_STATE, 0x86)]),
    "dialog_waiting": ([], [(R.DIALOG_STATE, 0x89)]),
    "dialog_choice": ([], [(R.DIALOG_STATE, 0x8D)]),
    "dialog_selection": ([], [(R.DIALOG_ASK_SELECTION, 1)]),
    "mode_title": ([], [(R.GAMEPLAY_TYPE, 0x00)]),
    "mode_world": ([], [(R.GAMEPLAY_TYPE, 0x00)]),
    "mode_credits": ([], [(R.GAMEPLAY_TYPE, 0x01)]),
    "health_fraction": ([], [(R.HEALTH, 8)]),
    "max_hearts": ([], [(R.MAX_HEARTS, 5)]),
    "health": ([], [(R.HEALTH, 8)]),
    "invincible": ([], [(R.INVINCIBILITY_COUNTER, 20)]),
    "rupees": ([], [(R.RUPEES_LOW, 0x42)]),
    "keys": ([], [(R.DUNGEON_SMALL_KEYS, 2)]),
    "has_sword": ([], [(R.INVENTORY, 1)]),
    "sword_in_a": ([], [(R.INVENTORY + 1, 1)]),
    "sword_in_b": ([], [(R.INVENTORY, 1)]),
    "has_instrument": ([], [(R.HAS_INSTRUMENT_1, 2)]),
    "kills": ([], [(R.KILL_COUNT, 3)]),
    "deaths": ([], [(R.DEATH_COUNT, 2)]),
    **{f"room_flag_{bit}": ([(R.ROOM_STATUS, 0)], [(R.ROOM_STATUS, 1 << bit)]) for bit in range(8)},
    **{
        f"solid_{name}": ([(neighbour_address(name), 0)], [(neighbour_address(name), 1)])
        for name in NEIGHBOURS
    },
    "enemy_nearby": ([], ENEMY_SLOT_5),
    "nearest_enemy_dx": ([], ENEMY_SLOT_5),
    "nearest_enemy_dy": ([], ENEMY_SLOT_5),
    "enemy_count": ([], ENEMY_SLOT_5),
    "front_npc": ([], [(R.ENTITIES_X, 72), (R.ENTITIES_Y, 68)]),
    "front_chest": ([(FRONT, 0)], [(FRONT, 3)]),
    "front_block": ([(FRONT, 0)], [(FRONT, 5)]),
    "front_locked_door": ([(FRONT, 0)], [(FRONT, 9)]),
    "front_pickup": ([(FRONT, 0)], [(FRONT, 11)]),
    "front_stairs": ([(FRONT, 0)], [(FRONT, 13)]),
    "front_walkable": ([(FRONT, 0)], [(FRONT, 1)]),
}
for _slot in range(16):
    _on = [(R.ENTITIES_STATUS + _slot, 5), (R.ENTITIES_TYPE + _slot, 0xE0)]
    RECIPES[f"entity_{_slot}_active"] = (
        [(R.ENTITIES_STATUS + _slot, 0)],
        [(R.ENTITIES_STATUS + _slot, 5)],
    )
    RECIPES[f"entity_{_slot}_enemy"] = (_on, [(R.ENTITIES_TYPE + _slot, 0x19)])
    RECIPES[f"entity_{_slot}_dx"] = (
        [*_on, (R.ENTITIES_X + _slot, 10)],
        [(R.ENTITIES_X + _slot, 150)],
    )
    RECIPES[f"entity_{_slot}_dy"] = (
        [*_on, (R.ENTITIES_Y + _slot, 10)],
        [(R.ENTITIES_Y + _slot, 120)],
    )


@pytest.fixture(scope="module")
def base_state() -> bytes:
    return load_named_state("start_of_play")


def encoded_after(gameboy: GameBoy, pokes: Pokes) -> np.ndarray:
    for address, value in pokes:
        gameboy.memory[address] = value
    return encode(RawState(gameboy.memory))


def test_every_slot_has_a_recipe_and_the_layout_is_128():
    assert len(SLOTS) == OBSERVATION_SIZE
    assert [slot.position for slot in SLOTS] == list(range(OBSERVATION_SIZE))
    assert {slot.name for slot in SLOTS} == set(RECIPES)


@pytest.mark.parametrize("slot", SLOTS, ids=[slot.name for slot in SLOTS])
def test_slot_changes_when_its_ram_source_does(slot, base_state):
    setup, change = RECIPES[slot.name]
    with GameBoy() as gameboy:
        gameboy.load_state(base_state)
        before = encoded_after(gameboy, setup)
        after = encoded_after(gameboy, change)
    assert before[slot.position] != after[slot.position], (
        f"{slot.name} ({slot.source}) did not move"
    )
    assert np.all(np.abs(after) <= 1.0)


def test_the_memory_encoding_counts_the_rooms_carrying_each_flag(base_state):
    with GameBoy() as gameboy:
        gameboy.load_state(base_state)
        for table in (R.OVERWORLD_ROOM_STATUS, R.INDOOR_ROOM_STATUS):
            for room in range(256):
                gameboy.memory[table + room] = 0
        for room in range(3):  # three overworld rooms visited, one of them with a door opened
            gameboy.memory[R.OVERWORLD_ROOM_STATUS + room] = 0x80
        gameboy.memory[R.OVERWORLD_ROOM_STATUS + 2] = 0x84
        gameboy.memory[R.INDOOR_ROOM_STATUS + 0x10] = 0x81  # one indoor room: visited, bit 0
        raw = RawState(gameboy.memory)
        memory, whole, plain = encode_memory(raw), encoder("memory")(raw), encode(raw)
    expected = np.zeros(MEMORY_SIZE, np.float32)
    expected[7], expected[2] = np.log2(4) / 8, np.log2(2) / 8
    expected[8 + 7], expected[8 + 0] = np.log2(2) / 8, np.log2(2) / 8
    assert memory == pytest.approx(expected)
    assert whole.shape == (encoding_size("memory"),) == (OBSERVATION_SIZE + MEMORY_SIZE,)
    assert whole[:OBSERVATION_SIZE] == pytest.approx(plain)
    assert [slot.position for slot in MEMORY_SLOTS] == list(
        range(OBSERVATION_SIZE, OBSERVATION_SIZE + MEMORY_SIZE)
    )
    events = encoder("flags")(raw)[OBSERVATION_SIZE:]
    expected_events = np.zeros(FLAGS_SIZE, np.float32)  # bit 7, visited, is left out
    expected_events[2], expected_events[EVENT_BITS + 0] = 0.25, 0.25
    assert events == pytest.approx(expected_events)
    assert encoding_size("flags") == OBSERVATION_SIZE + FLAGS_SIZE == len(SLOTS + FLAG_SLOTS)


def local_view(gameboy: GameBoy) -> dict[str, float]:
    values = encoder("local")(RawState(gameboy.memory))[OBSERVATION_SIZE:]
    return {slot.name: float(values[slot.position - OBSERVATION_SIZE]) for slot in LOCAL_SLOTS}


def test_the_local_encoding_shows_the_walls_around_link_wherever_he_stands(base_state):
    # start_of_play's village: Link at (72, 88), tile (4, 5); row 7 is the room's south wall.
    with GameBoy() as gameboy:
        gameboy.load_state(base_state)
        view = local_view(gameboy)
        assert view["local_solid_+0_+2"] == 1.0  # the wall two tiles below
        assert view["local_solid_+0_+3"] == 1.0  # below the room counts as solid
        assert view["local_solid_+0_-1"] == 0.0
        assert (view["local_offset_x"], view["local_offset_y"]) == pytest.approx((8 / 15, 8 / 15))
        gameboy.memory[R.ROOM_OBJECTS + (4 << 4) + 6] = min(SOLID_TILES)  # a rock 2 right, 1 up
        assert local_view(gameboy)["local_solid_+2_-1"] == 1.0
        gameboy.memory[R.LINK_X], gameboy.memory[R.LINK_Y] = 3, 40  # the west edge, tile (0, 2)
        view = local_view(gameboy)
        assert view["local_solid_-1_+0"] == view["local_solid_-3_-3"] == 1.0  # outside
        assert view["local_offset_x"] == pytest.approx(3 / 15)
        gameboy.memory[R.LINK_X] = 250  # leaving the room: clipped to the last column
        assert len(encoder("local")(RawState(gameboy.memory))) == encoding_size("local")
    assert encoding_size("local") == OBSERVATION_SIZE + LOCAL_SIZE == OBSERVATION_SIZE + 50
    assert [slot.position for slot in LOCAL_SLOTS] == list(
        range(OBSERVATION_SIZE, OBSERVATION_SIZE + LOCAL_SIZE)
    )


def test_each_encoding_has_its_own_version_and_a_wrong_name_names_the_choices():
    assert encoder_version() == encoder_version("observation")
    assert encoder_version("observation").startswith(f"obs{OBSERVATION_SIZE}-")
    assert encoder_version("memory").startswith(f"obs{OBSERVATION_SIZE + MEMORY_SIZE}-")
    assert encoder_version("flags").startswith(f"obs{OBSERVATION_SIZE + FLAGS_SIZE}-")
    assert encoder_version("local").startswith(f"obs{OBSERVATION_SIZE + LOCAL_SIZE}-")
    assert encoder("observation") is encode
    with pytest.raises(ValueError, match="use one of observation, memory"):
        encoder("pixels")
