"""The scripted walkthrough wins the cartridge; RAM at each named mark shows what happened."""

import pytest

from koholint.game.ram import (
    DIALOG_BOX_AT_BOTTOM,
    DialogState,
    EntityType,
    GameplayType,
    InventoryItem,
    MotionState,
    RamAddress,
    RoomFlag,
)
from koholint.game.states import STATE_NAMES
from koholint.game.walkthrough import Walkthrough, WalkthroughError, WalkthroughPlayer

# Cartridge metatile ids (cartridge/tools/gfx.py).
FLOOR, BLOCK, BLOCK_ON_PLATE, GATE, CHEST_OPEN, DUNGEON_FLOOR = 0, 5, 7, 8, 4, 16
ROUTE_ROOMS = {(0, 0x21), (0, 0x20), (0, 0x11), (0, 0x12), (0, 0x22), (0, 0x01), (0, 0x02),
               (1, 0x10), (1, 0x08), (1, 0x09), (1, 0x01)}  # fmt: skip


@pytest.fixture(scope="module")
def marks(walkthrough_trace):
    return walkthrough_trace.snapshots


def test_every_named_state_is_a_mark(walkthrough_trace):
    names = [name for name, _ in walkthrough_trace.walkthrough.marks]
    assert set(STATE_NAMES) <= set(names)


def test_title_screen_then_start_leaves_it(marks):
    assert marks["title"].ram[RamAddress.GAMEPLAY_TYPE] == GameplayType.TITLE
    assert marks["title"].visited == set()
    start = marks["start_of_play"]
    assert start.ram[RamAddress.GAMEPLAY_TYPE] == GameplayType.WORLD
    assert start.ram[RamAddress.GAMEPLAY_SUBTYPE] == 0x07
    assert start.room_key == (0, 0, 0x21)
    assert start.ram[RamAddress.HEALTH] == 3 * 8
    assert start.ram[RamAddress.MAX_HEARTS] == 3


def test_npc_dialog_opens_pages_and_closes(marks, walkthrough_trace):
    assert marks["before_npc"].ram[RamAddress.DIALOG_STATE] == 0
    assert EntityType.ELDER in {kind for _, kind, _, _ in marks["before_npc"].entities}
    opened = marks["npc_dialog_open"].ram[RamAddress.DIALOG_STATE]
    assert opened & DIALOG_BOX_AT_BOTTOM
    assert opened & 0x7F
    assert marks["npc_dialog_closed"].ram[RamAddress.DIALOG_STATE] == 0
    start, end = (
        walkthrough_trace.walkthrough.mark_frame(n)
        for n in ("npc_dialog_open", "npc_dialog_closed")
    )
    states = walkthrough_trace.per_frame[RamAddress.DIALOG_STATE][start:end]
    waits = sum(
        1
        for a, b in zip(states, states[1:], strict=False)
        if b & 0x7F == DialogState.WAIT_FOR_A and a != b
    )
    assert waits >= 3  # a multi-page dialog waits for A between pages


def test_chest_gives_the_sword(marks):
    sword = marks["sword_obtained"]
    assert sword.ram[RamAddress.INVENTORY] == InventoryItem.SWORD
    assert (0, 0x20) in sword.visited
    assert sword.room_objects[2][4] == CHEST_OPEN


def test_damage_taken_and_enemies_killed(marks, walkthrough_trace):
    assert marks["damage_taken"].ram[RamAddress.HEALTH] < 3 * 8
    assert marks["enemy_killed"].ram[RamAddress.KILL_COUNT] >= 1
    assert {EntityType.OCTOROK, EntityType.KEESE} <= walkthrough_trace.dying_types


def test_yes_no_choice_is_made_and_bought_a_heart(marks, walkthrough_trace):
    choice = marks["choice_made"]
    assert choice.ram[RamAddress.DIALOG_STATE] & 0x7F == DialogState.CHOICE
    assert choice.ram[RamAddress.DIALOG_ASK_SELECTION] == 0
    assert choice.rupees >= 10
    selections = walkthrough_trace.per_frame[RamAddress.DIALOG_ASK_SELECTION]
    assert 1 in selections  # the cursor moved to NO and back
    bought = marks["heart_bought"]
    assert bought.ram[RamAddress.MAX_HEARTS] == 4
    assert bought.rupees == choice.rupees - 10


def test_block_on_plate_opens_the_gate(marks):
    before = marks["before_puzzle"]
    assert before.room_key == (0, 0, 0x01)
    assert before.room_objects[2][3] == BLOCK
    assert before.room_objects[3][9] == GATE
    assert before.room_objects[4][9] == GATE
    solved = marks["puzzle_solved"]
    assert solved.room_objects[5][5] == BLOCK_ON_PLATE
    assert solved.room_objects[3][9] == FLOOR
    assert solved.room_objects[4][9] == FLOOR
    assert solved.ram[RamAddress.ROOM_STATUS] & RoomFlag.PUZZLE_SOLVED
    assert (EntityType.BLOCK, 5 * 16 + 8, 5 * 16 + 8) in {
        (k, x, y) for _, k, x, y in solved.entities
    }


def test_dungeon_key_and_locked_door(marks):
    entrance = marks["dungeon_entrance"]
    assert entrance.room_key == (1, 0, 0x10)
    assert entrance.ram[RamAddress.LINK_MOTION_STATE] == MotionState.NORMAL
    key = marks["key_taken"]
    assert key.ram[RamAddress.DUNGEON_SMALL_KEYS] == 1
    door = marks["door_unlocked"]
    assert door.ram[RamAddress.DUNGEON_SMALL_KEYS] == 0
    assert door.room_objects[0][4] == DUNGEON_FLOOR
    assert door.room_objects[0][5] == DUNGEON_FLOOR
    assert door.ram[RamAddress.ROOM_STATUS] & RoomFlag.DOOR_OPEN


def test_instrument_taken_is_the_win(marks):
    assert marks["last_room"].room_key == (1, 0, 0x01)
    assert not marks["last_room"].ram[RamAddress.HAS_INSTRUMENT_1]
    won = marks["won"]
    assert won.ram[RamAddress.HAS_INSTRUMENT_1] & 0x02
    assert won.ram[RamAddress.GAMEPLAY_TYPE] == GameplayType.CREDITS
    assert won.visited >= ROUTE_ROOMS


def test_room_transitions_pass_through_states_one_to_five(walkthrough_trace):
    seen = set(walkthrough_trace.per_frame[RamAddress.ROOM_TRANSITION_STATE])
    assert {1, 2, 3, 4, 5} <= seen


def test_stairs_fade_out_and_in(walkthrough_trace):
    seen = set(walkthrough_trace.per_frame[RamAddress.LINK_MOTION_STATE])
    assert {MotionState.MAP_FADE_OUT, MotionState.MAP_FADE_IN} <= seen


def test_replay_needs_a_fresh_emulator_of_the_same_rom():
    from koholint.game.emulator import GameBoy

    with GameBoy() as gameboy:
        gameboy.tick(1)
        with pytest.raises(WalkthroughError, match="freshly started"):
            WalkthroughPlayer(gameboy, Walkthrough(rom_sha256=gameboy.rom.sha256))


def test_malformed_walkthrough_is_refused():
    with pytest.raises(WalkthroughError, match="schema_version"):
        Walkthrough.from_json('{"schema_version": 99}')
    with pytest.raises(WalkthroughError, match="malformed"):
        Walkthrough.from_json('{"schema_version": 1, "inputs": []}')
