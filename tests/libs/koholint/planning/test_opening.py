"""START_GAME through LA DX's opening on the real cartridge: title, file select, name entry."""

from __future__ import annotations

import pytest

from koholint.game.emulator import Button, GameBoy
from koholint.game.opening import PLAYER_NAME, letter_cell, opening_press
from koholint.game.ram import (
    COMMAND_SAVE_SLOT,
    FILE_NEW_SUBTYPE_INTERACTIVE,
    FILE_SELECT_SUBTYPE_INTERACTIVE,
    NAME_LENGTH,
    GameplayType,
    RamAddress,
)
from koholint.planning.executor import MacroExecutor
from koholint.planning.macros import StartGame
from koholint.planning.view import read_view


@pytest.fixture
def gameboy() -> GameBoy:
    with GameBoy() as gameboy:
        gameboy.reset("title")
        yield gameboy


INTERACTIVE = {
    GameplayType.FILE_SELECT: FILE_SELECT_SUBTYPE_INTERACTIVE,
    GameplayType.FILE_NEW: FILE_NEW_SUBTYPE_INTERACTIVE,
}


def tap(gameboy: GameBoy, button: int, frames_after: int = 2) -> None:
    """Press for a frame, release, and wait until a menu the press opened takes input."""
    gameboy.hold(button)
    gameboy.tick(1)
    gameboy.hold(Button.NONE)
    gameboy.tick(frames_after)
    for _ in range(30):
        kind, subtype = screen(gameboy)
        if kind not in INTERACTIVE or subtype == INTERACTIVE[kind]:
            return
        gameboy.tick(1)


def screen(gameboy: GameBoy) -> tuple[int, int]:
    return gameboy.ram.byte(RamAddress.GAMEPLAY_TYPE), gameboy.ram.byte(RamAddress.GAMEPLAY_SUBTYPE)


def name(gameboy: GameBoy, slot: int) -> bytes:
    return bytes(gameboy.ram.bytes(RamAddress.SAVE_SLOT_NAMES + slot * NAME_LENGTH, NAME_LENGTH))


def open_name_entry(gameboy: GameBoy) -> None:
    tap(gameboy, Button.START)
    tap(gameboy, Button.A)
    assert screen(gameboy) == (GameplayType.FILE_NEW, FILE_NEW_SUBTYPE_INTERACTIVE)


def test_start_on_the_title_opens_the_file_select_with_its_cursor(gameboy: GameBoy) -> None:
    tap(gameboy, Button.START)
    assert screen(gameboy) == (GameplayType.FILE_SELECT, FILE_SELECT_SUBTYPE_INTERACTIVE)
    assert gameboy.ram.byte(RamAddress.SAVE_SLOT) == 0
    cursor = []
    for button in (Button.DOWN, Button.DOWN, Button.DOWN, Button.UP):
        tap(gameboy, button)
        cursor.append(gameboy.ram.byte(RamAddress.SAVE_SLOT))
    assert cursor == [1, 2, 0, 2]  # three empty slots, wrapping; no ERASE/COPY row yet


def test_the_name_entry_cursor_walks_the_grid_and_a_writes_letters(gameboy: GameBoy) -> None:
    open_name_entry(gameboy)
    cells = []
    for button in (Button.RIGHT, Button.DOWN, Button.LEFT, Button.LEFT, Button.UP, Button.UP):
        tap(gameboy, button)
        cells.append(gameboy.ram.byte(RamAddress.NAME_ENTRY_CURRENT_CHAR))
    assert cells == [1, 17, 16, 15, 63, 47]  # +-1 and +-16, wrapping over 64 cells
    tap(gameboy, Button.A)  # 47 is a blank cell: a space, as on LA DX
    assert gameboy.ram.byte(RamAddress.SAVE_SLOT_NAME_CHAR_INDEX) == 1
    tap(gameboy, Button.B)
    assert gameboy.ram.byte(RamAddress.SAVE_SLOT_NAME_CHAR_INDEX) == 0
    for _ in range(3):  # from 47 down to the grid's first row: 'a' is cell 9
        tap(gameboy, Button.DOWN)
    assert gameboy.ram.byte(RamAddress.NAME_ENTRY_CURRENT_CHAR) == 31


def test_start_keeps_the_name_and_a_named_slot_starts_the_game(gameboy: GameBoy) -> None:
    open_name_entry(gameboy)
    tap(gameboy, Button.RIGHT)  # 'B'
    tap(gameboy, Button.A)
    tap(gameboy, Button.START)
    assert screen(gameboy) == (GameplayType.FILE_SELECT, FILE_SELECT_SUBTYPE_INTERACTIVE)
    assert name(gameboy, 0) == b"B\0\0\0\0"
    assert gameboy.ram.byte(RamAddress.SAVE_FILES_COUNT) == 0b001
    tap(gameboy, Button.UP)  # a file exists: the ERASE/COPY row joins the cursor's stops
    assert gameboy.ram.byte(RamAddress.SAVE_SLOT) == COMMAND_SAVE_SLOT
    tap(gameboy, Button.RIGHT)
    assert gameboy.ram.byte(RamAddress.FILE_SELECTION_ARROW_SHIFTED) == 1
    tap(gameboy, Button.A)  # ERASE and COPY do nothing on the cartridge
    assert screen(gameboy)[0] == GameplayType.FILE_SELECT
    tap(gameboy, Button.DOWN)
    tap(gameboy, Button.A, frames_after=8)
    assert read_view(gameboy).in_play


def test_opening_press_reads_each_screen(gameboy: GameBoy) -> None:
    assert opening_press(gameboy.ram).button == Button.START  # type: ignore[union-attr]
    tap(gameboy, Button.START)
    assert opening_press(gameboy.ram).button == Button.START  # type: ignore[union-attr]
    tap(gameboy, Button.DOWN)
    assert opening_press(gameboy.ram).button == Button.UP  # type: ignore[union-attr]
    tap(gameboy, Button.UP)
    tap(gameboy, Button.A)
    press = opening_press(gameboy.ram)
    assert press is not None
    assert press.button == Button.DOWN  # 'L' is on the grid's second row
    assert letter_cell("L") == 20


def test_start_game_passes_the_file_select_and_the_name_entry(gameboy: GameBoy) -> None:
    seen = set()

    class Watching:  # records every screen the macro passes through
        def __init__(self, inner: GameBoy) -> None:
            self.inner = inner

        def tick(self, frames: int = 1) -> None:
            for _ in range(frames):
                self.inner.tick(1)
                seen.add(self.inner.ram.byte(RamAddress.GAMEPLAY_TYPE))

        def __getattr__(self, attribute: str) -> object:
            return getattr(self.inner, attribute)

    result = MacroExecutor(Watching(gameboy)).execute(StartGame())  # type: ignore[arg-type]
    assert result.ok, result
    assert read_view(gameboy).in_play
    assert {GameplayType.FILE_SELECT, GameplayType.FILE_NEW} <= seen
    assert name(gameboy, 0) == PLAYER_NAME.encode() + b"\0"
    assert 0 < result.frames < StartGame().timeout_frames


def test_start_game_picks_up_a_half_typed_name(gameboy: GameBoy) -> None:
    open_name_entry(gameboy)
    for button in (Button.DOWN, Button.RIGHT, Button.A, Button.A, Button.A, Button.B):
        tap(gameboy, button)  # "III", the index back on the third letter
    result = MacroExecutor(gameboy).execute(StartGame())
    assert result.ok, result
    assert name(gameboy, 0) == b"IINK\0"  # typed on from wSaveSlotNameCharIndex


def test_start_game_chooses_an_existing_file(gameboy: GameBoy) -> None:
    tap(gameboy, Button.START)
    tap(gameboy, Button.DOWN)
    tap(gameboy, Button.A)  # name slot 1 "A"
    tap(gameboy, Button.A)
    tap(gameboy, Button.START)
    assert gameboy.ram.byte(RamAddress.SAVE_SLOT) == 1
    tap(gameboy, Button.UP)
    result = MacroExecutor(gameboy).execute(StartGame())
    assert result.ok, result
    assert read_view(gameboy).in_play
    assert name(gameboy, 0) == b"\0" * NAME_LENGTH  # slot 1's file was chosen, none made
