"""The scripted walkthrough: a button sequence from power-on, stored as data, with marks.

A walkthrough is run-length encoded held-button masks, one per frame, plus named
marks (frame numbers) where something happened. Replaying it in PyBoy from
power-on reproduces the recorded game exactly: emulation is deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from koholint.game.emulator import GameBoy

SCHEMA_VERSION = 1
MAX_WALKTHROUGH_FRAMES = 200_000


class WalkthroughError(ValueError):
    """A walkthrough file that cannot be used; the message says why."""


@dataclass
class Walkthrough:
    rom_sha256: str
    inputs: list[tuple[int, int]] = field(default_factory=list)  # (button mask, frames)
    marks: list[tuple[str, int]] = field(default_factory=list)  # (name, frame)

    @property
    def frames(self) -> int:
        return sum(count for _, count in self.inputs)

    def append(self, buttons: int, frames: int) -> None:
        if self.inputs and self.inputs[-1][0] == buttons:
            self.inputs[-1] = (buttons, self.inputs[-1][1] + frames)
        else:
            self.inputs.append((buttons, frames))

    def mark(self, name: str) -> None:
        self.marks.append((name, self.frames))

    def mark_frame(self, name: str) -> int:
        for mark_name, frame in self.marks:
            if mark_name == name:
                return frame
        raise KeyError(f"walkthrough has no mark {name!r}; marks: {[m for m, _ in self.marks]}")

    def to_json(self) -> str:
        document = {
            "schema_version": SCHEMA_VERSION,
            "rom_sha256": self.rom_sha256,
            "frames": self.frames,
            "inputs": [list(run) for run in self.inputs],
            "marks": [{"name": name, "frame": frame} for name, frame in self.marks],
        }
        return json.dumps(document, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Walkthrough:
        try:
            document = json.loads(text)
            if document.get("schema_version") != SCHEMA_VERSION:
                raise WalkthroughError(
                    f"walkthrough schema_version {document.get('schema_version')} is not {SCHEMA_VERSION}"
                )
            walkthrough = cls(
                rom_sha256=str(document["rom_sha256"]),
                inputs=[(int(mask), int(count)) for mask, count in document["inputs"]],
                marks=[(str(mark["name"]), int(mark["frame"])) for mark in document["marks"]],
            )
        except (KeyError, TypeError, ValueError) as error:
            if isinstance(error, WalkthroughError):
                raise
            raise WalkthroughError(f"malformed walkthrough: {error}") from error
        if walkthrough.frames > MAX_WALKTHROUGH_FRAMES:
            raise WalkthroughError(
                f"walkthrough of {walkthrough.frames} frames exceeds {MAX_WALKTHROUGH_FRAMES}"
            )
        return walkthrough


def walkthrough_path() -> Path:
    return Path(str(resources.files("koholint") / "data" / "walkthrough.json"))


def load_walkthrough(path: Path | None = None) -> Walkthrough:
    return Walkthrough.from_json((path or walkthrough_path()).read_text())


class WalkthroughPlayer:
    """Replays a walkthrough on a freshly powered-on GameBoy, stopping at any frame."""

    def __init__(self, gameboy: GameBoy, walkthrough: Walkthrough) -> None:
        if gameboy.rom.sha256 != walkthrough.rom_sha256 or gameboy.frame != 0:
            raise WalkthroughError(
                "a walkthrough replays only on a freshly started emulator running the ROM it was "
                f"recorded on ({walkthrough.rom_sha256[:12]}...)"
            )
        self.gameboy = gameboy
        self.walkthrough = walkthrough
        self._run_index = 0
        self._run_used = 0

    def advance_to(self, frame: int, *, render: bool = False) -> None:
        """Play inputs until the emulator has run `frame` frames; render the last if asked."""
        inputs = self.walkthrough.inputs
        while self.gameboy.frame < frame:
            if self._run_index >= len(inputs):
                raise WalkthroughError(
                    f"walkthrough ends at frame {self.gameboy.frame}, before {frame}"
                )
            buttons, count = inputs[self._run_index]
            take = min(count - self._run_used, frame - self.gameboy.frame)
            self.gameboy.hold(buttons)
            self.gameboy.tick(take, render=render and self.gameboy.frame + take == frame)
            self._run_used += take
            if self._run_used == count:
                self._run_index += 1
                self._run_used = 0

    def marks(self) -> Iterator[str]:
        """Advance to each mark in turn, yielding its name."""
        for name, frame in self.walkthrough.marks:
            self.advance_to(frame)
            yield name

    def play_to_end(self) -> None:
        self.advance_to(self.walkthrough.frames)
