"""GameState: the checked-in JSON Schema is current, and the reader agrees with the RAM map."""

import json

from koholint.game.emulator import GameBoy
from koholint.game.state import GameState, game_state_schema_json, read_game_state, schema_path
from koholint.game.states import load_named_state


def test_checked_in_schema_is_current():
    assert schema_path().read_text() == game_state_schema_json(), "run `koholint schemas export`"


def test_schema_is_valid_json_with_a_version():
    schema = json.loads(schema_path().read_text())
    assert schema["properties"]["schema_version"]["const"] == 1


def test_read_game_state_in_the_dungeon():
    with GameBoy() as gameboy:
        gameboy.load_state(load_named_state("dungeon_entrance"))
        state = read_game_state(gameboy.memory)
    assert isinstance(state, GameState)
    assert state.room.indoor
    assert state.room.room == 0x10
    assert state.mode == "world"
    assert state.inventory.b_slot == 1
    assert state.inventory.items == 0b10
    assert state.max_hearts == 4
    assert state.oam.link_visible
    assert state.rooms_visited >= 8
    assert not state.dialog.open
