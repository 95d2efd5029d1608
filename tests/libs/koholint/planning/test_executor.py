"""Macros on the real cartridge from its save states."""

from __future__ import annotations

import pytest

from koholint.game.emulator import Button, GameBoy
from koholint.game.ram import RamAddress, RoomFlag
from koholint.game.tiles import Metatile
from koholint.planning.executor import MacroExecutor
from koholint.planning.macros import (
    AdvanceDialog,
    Choose,
    Interact,
    MoveTo,
    PushBlock,
    StartGame,
    UseItem,
)
from koholint.planning.view import read_view


@pytest.fixture
def gameboy() -> GameBoy:
    with GameBoy() as gameboy:
        yield gameboy


def test_move_to_reaches_a_reachable_tile(gameboy: GameBoy) -> None:
    gameboy.reset("start_of_play")
    result = MacroExecutor(gameboy).execute(MoveTo(x=2, y=2))
    assert result.ok
    assert 0 < result.frames < 900
    raw = read_view(gameboy).raw
    assert (raw.x, raw.y) == (2 * 16 + 8, 2 * 16 + 8)


def test_move_to_times_out_on_an_unreachable_tile(gameboy: GameBoy) -> None:
    gameboy.reset("start_of_play")
    # Wall in the floor tile (2, 2) in the room's RAM (the game collides with wRoomObjects).
    for x, y in ((1, 2), (3, 2), (2, 1), (2, 3)):
        gameboy.memory[RamAddress.ROOM_OBJECTS + y * 16 + x] = Metatile.WALL
    assert read_view(gameboy).tiles[2][2] == Metatile.FLOOR
    result = MacroExecutor(gameboy).execute(MoveTo(x=2, y=2, timeout_frames=60))
    assert not result.ok
    assert not result.refused
    assert result.frames == 60
    assert "timed out" in result.reason
    assert "no walkable path" in result.reason


def test_move_to_refuses_solid_targets(gameboy: GameBoy) -> None:
    gameboy.reset("before_puzzle")
    result = MacroExecutor(gameboy).execute(MoveTo(x=9, y=3))
    assert result.refused
    assert "gate" in result.reason


def test_refusals_press_nothing(gameboy: GameBoy) -> None:
    gameboy.reset("start_of_play")
    before = gameboy.frame
    executor = MacroExecutor(gameboy)
    cases = {
        MoveTo(x=0, y=0): "not walkable",
        UseItem(item="sword"): "not held",
        PushBlock(direction="up"): "no pushable block",
        AdvanceDialog(): "no dialog",
        Choose(option=0): "no dialog",
    }
    for macro, reason in cases.items():
        result = executor.execute(macro)
        assert result.refused, result
        assert reason in result.reason
        assert result.frames == 0
    assert gameboy.frame == before


def test_dialog_macros_close_the_elder_dialog(gameboy: GameBoy) -> None:
    gameboy.reset("before_npc")
    executor = MacroExecutor(gameboy)
    assert executor.execute(Interact(direction="up")).reason == "a dialog opened"
    assert executor.execute(Choose(option=0)).refused  # no question on screen
    assert executor.execute(MoveTo(x=2, y=2)).refused  # a dialog is open
    result = executor.execute(AdvanceDialog())
    assert result.ok
    assert result.reason == "the dialog closed"
    assert read_view(gameboy).dialog == 0


@pytest.mark.parametrize(("option", "hearts"), [(0, 4), (1, 3)])
def test_choose_answers_the_shop(gameboy: GameBoy, option: int, hearts: int) -> None:
    gameboy.reset("before_shop")
    executor = MacroExecutor(gameboy)
    executor.execute(Interact(direction="up"))
    assert "question" in executor.execute(AdvanceDialog()).reason
    assert executor.execute(Choose(option=option)).ok
    assert executor.execute(AdvanceDialog()).ok
    state = read_view(gameboy).situation().state
    assert state.max_hearts == hearts
    assert not state.dialog.open


def test_push_block_solves_the_puzzle(gameboy: GameBoy) -> None:
    gameboy.reset("before_puzzle")
    executor = MacroExecutor(gameboy)
    assert executor.execute(PushBlock(direction="down")).refused  # a tree below
    for direction in ("right", "right", "down", "down", "down"):
        result = executor.execute(PushBlock(direction=direction))
        assert result.ok, result
    view = read_view(gameboy)
    assert view.raw.room_status & RoomFlag.PUZZLE_SOLVED
    assert Metatile.GATE not in {t for row in view.tiles for t in row}


def test_use_item_swings_the_sword(gameboy: GameBoy) -> None:
    gameboy.reset("before_puzzle")  # Link holds the sword in the B slot here
    assert read_view(gameboy).raw.inventory[0] == 1
    result = MacroExecutor(gameboy).execute(UseItem(item="sword"))
    assert result.ok
    assert "B slot" in result.reason
    assert result.frames > 2


def test_timeouts_cut_long_macros(gameboy: GameBoy) -> None:
    gameboy.reset("before_npc")
    executor = MacroExecutor(gameboy)
    executor.execute(Interact(direction="up"))
    result = executor.execute(AdvanceDialog(timeout_frames=10))
    assert not result.ok
    assert result.frames == 10
    assert "timed out" in result.reason


def test_start_game_leaves_the_title_from_power_on(gameboy: GameBoy) -> None:
    assert not read_view(gameboy).in_world  # power-on: the boot ROM, then the title screen
    executor = MacroExecutor(gameboy)
    assert executor.execute(MoveTo(x=2, y=2)).reason.endswith("START_GAME first")
    result = executor.execute(StartGame())
    assert result.ok, result
    assert read_view(gameboy).in_play
    assert 0 < result.frames < 1200
    again = executor.execute(StartGame())
    assert again.refused
    assert again.reason == "the game is already in play"


def test_start_game_times_out_when_start_is_ignored(gameboy: GameBoy) -> None:
    class NoStart:  # a controller whose START is broken: the title never leaves
        def __init__(self, inner: GameBoy) -> None:
            self.inner = inner

        def hold(self, buttons: int) -> None:
            self.inner.hold(buttons & ~Button.START)

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

    result = MacroExecutor(NoStart(gameboy)).execute(StartGame(timeout_frames=100))  # type: ignore[arg-type]
    assert not result.ok
    assert result.frames == 100
    assert "did not take START" in result.reason


def test_start_game_stops_on_menus_it_has_no_steps_for(gameboy: GameBoy) -> None:
    gameboy.memory[RamAddress.GAMEPLAY_TYPE] = 0x04  # LA DX's file deletion
    result = MacroExecutor(gameboy).execute(StartGame())
    assert not result.ok
    assert "0x04" in result.reason
    assert result.frames == 0
