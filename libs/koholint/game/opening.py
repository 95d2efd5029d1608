"""From power-on to play, read from RAM: the title, the file select and the name entry.

LA DX's opening (and the cartridge's, which mirrors it): START leaves the title for the file
select (``wGameplayType`` 02); A or START on an empty slot opens the name entry (03), where
the cursor (``wNameEntryCurrentChar``) walks a 16 x 4 grid of letters, A writes one at
``wSaveSlotNameCharIndex`` and START keeps the name and returns to the file select; A or
START on a named slot starts the game. START is pressed wherever it does the job (A only
writes letters), so play begins with START as the last button, as it did from the title. :func:`opening_press` says which button comes next from what RAM
shows, so the planner's ``START_GAME`` and the walkthrough's recorder drive the same screens
the same way.

>>> letter_cell("L")
20
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from koholint.game.emulator import Button, GameBoy
from koholint.game.ram import (
    COMMAND_SAVE_SLOT,
    FILE_NEW_SUBTYPE_INTERACTIVE,
    FILE_SELECT_SUBTYPE_INTERACTIVE,
    GAMEPLAY_SUBTYPE_INTERACTIVE,
    NAME_ENTRY_COLUMNS,
    NAME_ENTRY_GRID,
    NAME_LENGTH,
    SAVE_SLOTS,
    GameplayType,
    RamAddress,
    RamReader,
)
from koholint.game.rom import RomInfo
from koholint.game.states import OPENING_STATES, UnknownStateError, state_path

PLAYER_NAME = "LINK"
"""The name typed on a new file: letters of the grid, at most NAME_LENGTH."""
TITLE_WAIT_FRAMES = 100
"""Frames from power-on to the ``title`` mark: the title screen is up and takes START."""
START_OF_PLAY_FRAME_COUNTER = 0x1C
"""``hFrameCounter`` at the ``start_of_play`` mark: play starts at the phase of the recordings
made before the file select existed, so the committed demonstrations replay unchanged."""
OPENING_FRAME_LIMIT = 1200


class OpeningError(RuntimeError):
    """The opening did not reach play within its frame budget; the message says where."""


@dataclass(frozen=True)
class OpeningPress:
    """The next input of the opening: tap `button` (NONE: wait a frame), and why."""

    button: int
    why: str


def letter_cell(letter: str) -> int:
    """The grid cell (wNameEntryCurrentChar) that writes `letter`."""
    cell = NAME_ENTRY_GRID.find(letter)
    if cell < 0:
        raise ValueError(f"{letter!r} is not on the name entry grid: use capitals A-Z")
    return cell


def slot_named(ram: RamReader, slot: int) -> bool:
    """Whether save slot `slot` holds a file (any letter of its name written)."""
    return any(ram.bytes(RamAddress.SAVE_SLOT_NAMES + slot * NAME_LENGTH, NAME_LENGTH))


def opening_press(ram: RamReader) -> OpeningPress | None:
    """What to press next on the way to play, or None once the world takes input."""
    gameplay_type = ram.byte(RamAddress.GAMEPLAY_TYPE)
    subtype = ram.byte(RamAddress.GAMEPLAY_SUBTYPE)
    if gameplay_type == GameplayType.WORLD:
        if subtype == GAMEPLAY_SUBTYPE_INTERACTIVE:
            return None
        return OpeningPress(Button.NONE, "the first room is loading")
    if gameplay_type == GameplayType.TITLE:
        return OpeningPress(Button.START, "the title screen: START")
    if gameplay_type == GameplayType.FILE_SELECT:
        if subtype != FILE_SELECT_SUBTYPE_INTERACTIVE:
            return OpeningPress(Button.NONE, "the file select is loading")
        return _file_select_press(ram)
    if gameplay_type == GameplayType.FILE_NEW:
        if subtype != FILE_NEW_SUBTYPE_INTERACTIVE:
            return OpeningPress(Button.NONE, "the name entry is loading")
        return _name_entry_press(ram)
    raise ValueError(
        f"gameplay type {gameplay_type:#04x} is not on the way from power-on to play "
        "(title 0x00, file select 0x02, name entry 0x03, world 0x0B)"
    )


def _file_select_press(ram: RamReader) -> OpeningPress:
    """Move the cursor to the first file (or the first slot when there is none) and choose it."""
    named = [slot for slot in range(SAVE_SLOTS) if slot_named(ram, slot)]
    target = named[0] if named else 0
    cursor = ram.byte(RamAddress.SAVE_SLOT)
    if cursor == COMMAND_SAVE_SLOT or cursor > target:
        return OpeningPress(Button.UP, f"the file select: cursor on {cursor}, up to slot {target}")
    if cursor < target:
        return OpeningPress(Button.DOWN, f"the file select: cursor on {cursor}, down to {target}")
    what = "start its game" if named else "name a new file"
    return OpeningPress(Button.START, f"the file select: slot {target}, START to {what}")


def _name_entry_press(ram: RamReader) -> OpeningPress:
    """Type PLAYER_NAME letter by letter (from wSaveSlotNameCharIndex on), then START."""
    index = ram.byte(RamAddress.SAVE_SLOT_NAME_CHAR_INDEX)
    if index >= len(PLAYER_NAME):
        return OpeningPress(Button.START, f"the name entry: {PLAYER_NAME} typed, START")
    goal = letter_cell(PLAYER_NAME[index])
    cursor = ram.byte(RamAddress.NAME_ENTRY_CURRENT_CHAR)
    row, column = divmod(cursor, NAME_ENTRY_COLUMNS)
    goal_row, goal_column = divmod(goal, NAME_ENTRY_COLUMNS)
    letter = PLAYER_NAME[index]
    if row != goal_row:
        button = Button.DOWN if row < goal_row else Button.UP
    elif column != goal_column:
        button = Button.RIGHT if column < goal_column else Button.LEFT
    else:
        return OpeningPress(Button.A, f"the name entry: A writes {letter!r}")
    return OpeningPress(button, f"the name entry: cursor on {cursor}, toward {letter!r} ({goal})")


Press = Callable[[int, int], None]
"""``press(buttons, frames)``: hold `buttons` for `frames` frames (and record them, if asked)."""


def play_opening(press: Press, ram: RamReader, mark: Callable[[str], None]) -> None:
    """From power-on to the first frame of play, marking ``title`` and ``start_of_play``: the
    walkthrough's recorder and every world's derived start states go through here."""
    press(Button.NONE, TITLE_WAIT_FRAMES)
    mark("title")
    for _ in range(OPENING_FRAME_LIMIT):
        step = opening_press(ram)
        if step is None:
            break
        press(step.button, 1)
        if step.button != Button.NONE:
            press(Button.NONE, 1)  # released for a frame, so the next press is new
    else:
        raise OpeningError(f"not in play {OPENING_FRAME_LIMIT} frames after the title")
    press(Button.NONE, 4)
    for _ in range(256):
        if ram.byte(RamAddress.FRAME_COUNTER) == START_OF_PLAY_FRAME_COUNTER:
            mark("start_of_play")
            return
        press(Button.NONE, 1)
    raise OpeningError("the frame counter never reached the start-of-play phase in 256 frames")


_derived: dict[tuple[str, str], bytes] = {}


def check_named_state(name: str, rom: RomInfo) -> None:
    """UnknownStateError, naming what `rom` has, unless it has state `name`: every state on the
    bundled cartridge, the opening's on another engine world, none on any other ROM."""
    state_path(name)
    if rom.is_bundled_cartridge:
        return
    if not rom.engine:
        raise UnknownStateError(
            f"{rom.path} is not one of the engine's worlds: it has no named states; start it "
            "from power-on"
        )
    if name not in OPENING_STATES:
        raise UnknownStateError(
            f"save state {name!r} marks the default world's route; {rom.path} has "
            f"{' and '.join(OPENING_STATES)} (or start from power-on)"
        )


def named_state(name: str, rom: RomInfo | None = None) -> bytes:
    """State `name` of `rom` (None: the bundled cartridge): the recorded file on the cartridge;
    on any other engine world the opening's (``OPENING_STATES``), played from power-on once
    per ROM and process (a fraction of a second)."""
    path = state_path(name)
    if rom is None or rom.is_bundled_cartridge:
        return path.read_bytes()
    check_named_state(name, rom)
    if (rom.sha256, name) not in _derived:
        for mark, state in opening_states(rom.path).items():
            _derived[rom.sha256, mark] = state
    return _derived[rom.sha256, name]


def opening_states(rom: str | Path) -> dict[str, bytes]:
    """``title`` and ``start_of_play`` of `rom`, played from power-on."""
    states: dict[str, bytes] = {}
    with GameBoy(rom=rom) as gameboy:

        def press(buttons: int, frames: int) -> None:
            gameboy.hold(buttons)
            gameboy.tick(frames)

        def mark(name: str) -> None:
            states[name] = gameboy.save_state()

        play_opening(press, gameboy.ram, mark)
    return states
