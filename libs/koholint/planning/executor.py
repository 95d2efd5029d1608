"""Runs macros frame by frame on any ``Emulator``; every macro ends with a ``MacroResult``.

Preconditions are checked before anything is pressed (a target in a wall, an item not held,
no question on screen): those macros come back ``refused`` with zero frames used. Every
macro has a timeout in frames; running out returns ``ok=False`` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable

from koholint.game.emulator import Button, Emulator
from koholint.game.navigation import (
    DIRECTION_BUTTONS,
    FACING,
    STEPS,
    Cell,
    NoPathError,
    find_path,
    steer,
    tile_center,
)
from koholint.game.opening import opening_press
from koholint.game.ram import DialogState, GameplayType, MotionState, RamReader
from koholint.game.tiles import WALKABLE, Metatile
from koholint.planning.macros import (
    ITEM_IDS,
    AdvanceDialog,
    Choose,
    Interact,
    Macro,
    MacroResult,
    MoveTo,
    PushBlock,
    StartGame,
    UseItem,
)
from koholint.planning.puzzle import find_tiles, push_problem, tile_name
from koholint.planning.view import View, read_view

# Link walks 1 px a frame: hold a direction at most this many frames between reads.
MAX_WALK_CHUNK = 8
DIALOG_MACROS = ("ADVANCE_DIALOG", "CHOOSE")
# Frames between START presses on the title: a menu that missed one press sees the next.
START_PRESS_GAP = 8
# Frames after a press on the file select or the name entry: the cursor moves on the next.
MENU_PRESS_GAP = 1


class _OutOfFrames(Exception):
    pass


class MacroExecutor:
    """Executes macros on one emulator. Not thread-safe: one macro at a time."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator
        self._left = 0
        self._used = 0
        self._last_wait_reason = ""

    # -- entry point ----------------------------------------------------------
    def execute(self, macro: Macro) -> MacroResult:
        view = read_view(self.emulator)
        problem = self.refusal(macro, view)
        if problem is not None:
            return MacroResult(kind=macro.kind, ok=False, refused=True, frames=0, reason=problem)
        runners: dict[type, Callable[..., tuple[bool, str]]] = {
            MoveTo: self._move_to,
            PushBlock: self._push_block,
            UseItem: self._use_item,
            AdvanceDialog: self._advance_dialog,
            Choose: self._choose,
            Interact: self._interact,
            StartGame: self._start_game,
        }
        self._left, self._used = macro.timeout_frames, 0
        try:
            ok, reason = runners[type(macro)](macro, view)
        except _OutOfFrames:
            ok, reason = False, f"timed out after {macro.timeout_frames} frames"
            if self._last_wait_reason:
                reason += f": {self._last_wait_reason}"
        finally:
            self.emulator.hold(Button.NONE)
        return MacroResult(kind=macro.kind, ok=ok, frames=self._used, reason=reason[:300])

    def refusal(self, macro: Macro, view: View) -> str | None:
        """Why `macro` cannot start from `view`, or None. Nothing has been pressed yet."""
        self._last_wait_reason = ""
        if isinstance(macro, StartGame):
            if view.raw.gameplay_type == GameplayType.CREDITS:
                return "the game is over (credits)"
            return "the game is already in play" if view.in_play else None
        if not view.in_world:
            return "the game is not in play (title screen or credits): START_GAME first"
        dialog = view.dialog
        if macro.kind in DIALOG_MACROS:
            if not dialog:
                return "no dialog is open"
            if isinstance(macro, Choose) and dialog != DialogState.CHOICE:
                return "no question is on screen: ADVANCE_DIALOG first"
            return None
        if dialog:
            return "a dialog is open: ADVANCE_DIALOG or CHOOSE first"
        if isinstance(macro, MoveTo):
            tile = view.tiles[macro.y][macro.x]
            if tile not in WALKABLE:
                return f"tile ({macro.x}, {macro.y}) is {tile_name(tile)}, not walkable"
        elif isinstance(macro, PushBlock):
            block = self._nearest_block(view)
            if block is None:
                return "there is no pushable block in this room"
            return push_problem(view.tiles, _link_cell(view), block, macro.direction)
        elif isinstance(macro, UseItem):
            b_slot, a_slot = view.raw.inventory
            if ITEM_IDS[macro.item] not in (b_slot, a_slot):
                return f"{macro.item} is not held in the A or B slot"
        return None

    # -- frame control ----------------------------------------------------------
    def _press(self, buttons: int, frames: int = 1) -> None:
        if self._left <= 0:
            raise _OutOfFrames
        frames = max(1, min(frames, self._left))
        self.emulator.hold(buttons)
        self.emulator.tick(frames)
        self._left -= frames
        self._used += frames

    def _tap(self, buttons: int) -> None:
        """Press for one frame and release for one, so the game sees a new press."""
        self._press(buttons)
        self._press(Button.NONE)

    def _wait(self, frames: int, why: str) -> None:
        self._last_wait_reason = why
        self._press(Button.NONE, frames)

    def _read(self) -> View:
        return read_view(self.emulator)

    # -- macros -----------------------------------------------------------------
    def _move_to(self, macro: MoveTo, view: View) -> tuple[bool, str]:
        return self._walk_to((macro.x, macro.y), view)

    def _walk_to(self, goal: Cell, view: View) -> tuple[bool, str]:
        room = view.raw.room_key
        target = (tile_center(goal[0]), tile_center(goal[1]))
        while True:
            raw = view.raw
            if raw.room_key != room:
                return False, f"left the room for {raw.room_key}"
            if view.dialog:
                return False, "a dialog opened on the way"
            position = (raw.x, raw.y)
            if position == target:
                return True, f"reached tile {goal}"
            if raw.transition or raw.motion != MotionState.NORMAL:
                self._wait(1, "Link could not move")
            else:
                self._walk_chunk(view, position, goal, target)
            view = self._read()

    def _walk_chunk(self, view: View, position: Cell, goal: Cell, target: Cell) -> None:
        here = (position[0] // 16, position[1] // 16)
        try:
            path = find_path(view.tiles, here, goal)
        except NoPathError:
            self._wait(4, f"no walkable path from {here} to {goal}")
            return
        if len(path) == 1:
            aim = target
            button = steer(position, aim, "x")
        else:
            nxt = path[1]
            aim = (tile_center(nxt[0]), tile_center(nxt[1]))
            button = steer(position, aim, "x" if nxt[1] == here[1] else "y")
        horizontal = button in (Button.LEFT, Button.RIGHT)
        distance = abs(aim[0] - position[0]) if horizontal else abs(aim[1] - position[1])
        self._last_wait_reason = f"walking toward {goal}"
        self._press(button, min(max(distance, 1), MAX_WALK_CHUNK))

    def _nearest_block(self, view: View) -> Cell | None:
        blocks = find_tiles(view.tiles, Metatile.BLOCK)
        if not blocks:
            return None
        lx, ly = _link_cell(view)
        return min(blocks, key=lambda cell: abs(cell[0] - lx) + abs(cell[1] - ly))

    def _push_block(self, macro: PushBlock, view: View) -> tuple[bool, str]:
        block = self._nearest_block(view)
        assert block is not None  # refusal() checked
        dx, dy = STEPS[macro.direction]
        behind, dest = (block[0] - dx, block[1] - dy), (block[0] + dx, block[1] + dy)
        reached, why = self._walk_to(behind, view)
        if not reached:
            return False, f"could not get behind the block: {why}"
        before = self._read().tiles
        button = DIRECTION_BUTTONS[macro.direction]
        while True:
            self._last_wait_reason = f"the block at {block} did not move {macro.direction}"
            self._press(button, 4)
            after = self._read()
            if after.tiles != before:
                self._press(Button.NONE)
                if after.tiles[dest[1]][dest[0]] != before[dest[1]][dest[0]]:
                    return True, f"pushed the block from {block} to {dest}"
                return False, "the room changed but the block did not reach its destination"

    def _use_item(self, macro: UseItem, view: View) -> tuple[bool, str]:
        b_slot, _ = view.raw.inventory
        button = Button.B if b_slot == ITEM_IDS[macro.item] else Button.A
        self._tap(button)
        self._wait(min(12, self._left), "the item's animation")
        return True, f"used the {macro.item} ({button.name} slot)"

    def _advance_dialog(self, macro: AdvanceDialog, view: View) -> tuple[bool, str]:
        while True:
            dialog = view.dialog
            if not dialog:
                return True, "the dialog closed"
            if dialog == DialogState.CHOICE:
                return True, "a question is on screen: CHOOSE an option"
            if dialog in (DialogState.WAIT_FOR_A, DialogState.END):
                self._last_wait_reason = "the dialog did not close"
                self._tap(Button.A)
            else:
                self._wait(2, "the dialog did not close")
            view = self._read()

    def _start_game(self, macro: StartGame, view: View) -> tuple[bool, str]:
        ram = RamReader(view.memory)
        while True:
            try:
                press = opening_press(ram)
            except ValueError as error:
                return False, str(error)
            if press is None:
                return True, "in play"
            if press.button == Button.NONE:
                self._wait(1, press.why)
            else:
                self._tap(press.button)
                gap = START_PRESS_GAP if press.button == Button.START else MENU_PRESS_GAP
                self._wait(
                    gap, f"the screen did not take {Button(press.button).name} ({press.why})"
                )
            ram = RamReader(self._read().memory)

    def _choose(self, macro: Choose, view: View) -> tuple[bool, str]:
        while view.raw.selection != macro.option:
            self._last_wait_reason = f"the cursor did not reach option {macro.option}"
            self._tap(Button.RIGHT if view.raw.selection < macro.option else Button.LEFT)
            view = self._read()
        self._tap(Button.A)
        view = self._read()
        while view.dialog == DialogState.CHOICE:
            self._wait(1, "the answer was not taken")
            view = self._read()
        return True, f"chose option {macro.option}"

    def _interact(self, macro: Interact, view: View) -> tuple[bool, str]:
        if view.raw.direction != FACING[macro.direction]:
            self._tap(DIRECTION_BUTTONS[macro.direction])
        before = self._read().tiles
        self._tap(Button.A)
        for _ in range(4):
            after = self._read()
            if after.dialog:
                return True, "a dialog opened"
            if after.tiles != before:
                return True, "the room changed"
            self._wait(1, "waiting for a response")
        return False, f"nothing to interact with {macro.direction} of Link"


def _link_cell(view: View) -> Cell:
    return view.raw.x // 16, view.raw.y // 16
