"""Headless PyBoy behind a small adapter: ROM checks, held buttons, states as bytes.

Shaped like PyBoy itself: keyword-only construction, ``tick(frames)`` that renders
only the last frame and only when asked, and sub-objects (``ram``, ``memory``).

>>> with GameBoy() as gameboy:
...     gameboy.tick(120)
...     gameboy.ram.byte(0xDB95)  # the cartridge waits on its title screen
0
"""

from __future__ import annotations

import logging
from enum import IntFlag
from pathlib import Path
from types import TracebackType
from typing import Protocol, runtime_checkable

from pyboy import PyBoy  # pysdl2's notice at import is filtered in koholint.game

from koholint.game import fastpath
from koholint.game.ram import RamReader
from koholint.game.rom import RomInfo, default_rom, read_rom
from koholint.game.savestate import pack_state, unpack_state


class Button(IntFlag):
    """Joypad bits, in the order of LADX's hJoypadState."""

    NONE = 0
    RIGHT = 0x01
    LEFT = 0x02
    UP = 0x04
    DOWN = 0x08
    A = 0x10
    B = 0x20
    SELECT = 0x40
    START = 0x80


_PYBOY_NAMES = (
    (int(Button.RIGHT), "right"),
    (int(Button.LEFT), "left"),
    (int(Button.UP), "up"),
    (int(Button.DOWN), "down"),
    (int(Button.A), "a"),
    (int(Button.B), "b"),
    (int(Button.SELECT), "select"),
    (int(Button.START), "start"),
)
MAX_FRAMES_PER_TICK = 60 * 60 * 10
MAX_READ_BYTES = 0x10000


@runtime_checkable
class Emulator(Protocol):
    """What game-driving code needs: the local GameBoy, an env-sim session client and the
    macro executor's target all provide it."""

    @property
    def frame(self) -> int: ...

    def hold(self, buttons: int) -> None: ...

    def tick(self, frames: int = 1, *, render: bool = False) -> None: ...

    def read_memory(self, address: int, count: int = 1) -> bytes: ...

    def save_state(self) -> bytes: ...

    def load_state(self, blob: bytes) -> None: ...


class GameBoy:
    """One headless emulator running one ROM (by default the process's world: $KOHOLINT_ROM, or
    the bundled cartridge)."""

    frames_emulated = 0
    """Frames every GameBoy of this process has run: the emulator's work, whoever asked for it
    (a run counts its teachers' walks as the change across them)."""

    def __init__(self, *, rom: str | Path | None = None) -> None:
        self.rom: RomInfo = read_rom(rom if rom is not None else default_rom())
        self._pyboy = PyBoy(
            str(self.rom.path), window="null", sound_emulated=False, log_level="ERROR"
        )
        logging.getLogger("pyboy").setLevel(logging.ERROR)
        self._pyboy.set_emulation_speed(0)
        self.memory = self._pyboy.memory
        self.ram = RamReader(self.memory, banked=self.rom.cgb)
        self.held = Button.NONE
        self._frame = 0

    @property
    def frame(self) -> int:
        """Frames run since power-on (or since the emulator was made)."""
        return self._frame

    def reset(self, state: str | bytes) -> None:
        """Start from a named save state of the bundled cartridge, or from state bytes (any
        world's named states: ``koholint.game.opening.named_state``)."""
        if isinstance(state, str):
            from koholint.game.states import load_named_state

            state = load_named_state(state)
        self.load_state(state)

    def read_memory(self, address: int, count: int = 1) -> bytes:
        """`count` bytes from `address` as the CPU sees them (D000-DFFF in bank 1 on colour ROMs)."""
        if not (address >= 0 and count >= 1 and address + count <= MAX_READ_BYTES):
            raise ValueError(
                f"read of {count} bytes at 0x{address:04X} leaves the 16-bit address space"
            )
        end = address + count
        if self.rom.cgb and address < 0xE000 and end > 0xD000:
            return bytes(self.ram.byte(address + offset) for offset in range(count))
        return bytes(self.memory[address:end])  # one slice: fast enough to read per frame

    def hold(self, buttons: int) -> None:
        """Hold exactly `buttons` (a Button mask) from the next frame on."""
        if buttons != self.held:
            self._press(int(buttons) & 0xFF, changed_only=True)

    def _press(self, wanted: int, *, changed_only: bool) -> None:
        held = int(self.held)
        for bit, name in _PYBOY_NAMES:
            if changed_only and (wanted & bit) == (held & bit):
                continue
            if wanted & bit:
                self._pyboy.button_press(name)
            else:
                self._pyboy.button_release(name)
        self.held = Button(wanted)

    def tick(self, frames: int = 1, *, render: bool = False) -> None:
        """Run `frames` frames with the held buttons; render only the last, and only if asked."""
        if not 1 <= frames <= MAX_FRAMES_PER_TICK:
            raise ValueError(f"frames must be 1..{MAX_FRAMES_PER_TICK}, got {frames}")
        if render:
            if frames > 1:
                self._pyboy.tick(frames - 1, False)
            self._pyboy.tick(1, True)
        else:
            self._pyboy.tick(frames, False)
        self._frame += frames
        GameBoy.frames_emulated += frames

    def screen_rgb(self):  # type: ignore[no-untyped-def]
        """The last rendered frame as a (144, 160, 3) uint8 array (tick with render=True first)."""
        return self._pyboy.screen.ndarray[:, :, :3].copy()

    def screen_rgba(self):  # type: ignore[no-untyped-def]
        """The last rendered frame as PyBoy keeps it, (144, 160, 4) uint8, copied in one block
        (cheaper than dropping the alpha: for a caller that encodes it later)."""
        return self._pyboy.screen.ndarray.copy()

    def render_now(self):  # type: ignore[no-untyped-def]
        """The screen as it stands, without advancing the game: render the next frame from a
        copy of the state, then put the state (and the frame count) back."""
        saved, frame = self.save_state(), self._frame
        self.tick(1, render=True)
        image = self.screen_rgb()
        self.load_state(saved)
        self._frame = frame
        return image

    def save_state(self) -> bytes:
        """The emulator's state as bytes (with the ROM's hash and the held buttons). PyBoy
        writes ~150 KB a byte at a time; the compiled fast path takes ~0.5 ms for it instead
        of ~15-20 ms through a Python file object, with the same bytes."""
        payload = fastpath.save_state(self._pyboy)
        return pack_state(self.rom.sha256, payload, held_buttons=int(self.held))

    def load_state(self, blob: bytes) -> None:
        """Restore a state made from this ROM; refuse others before touching the emulator."""
        state = unpack_state(blob, expected_rom_sha256=self.rom.sha256)
        fastpath.load_state(self._pyboy, state.payload)
        # PyBoy applies presses at the next tick, so its own state may lag: set every button.
        self._press(state.held_buttons, changed_only=False)

    def close(self) -> None:
        self._pyboy.stop(save=False)

    def __enter__(self) -> GameBoy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
