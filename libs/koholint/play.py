"""Play the cartridge headless with a named player and report what it reached.

Two players exist so far: ``walkthrough`` replays the scripted walkthrough from
power-on, and ``random`` holds a uniformly random button for 4 frames at a time.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

from koholint.emulator import Button, GameBoy
from koholint.progress import Progress
from koholint.ram import CARTRIDGE_SEED_ADDRESS, GameplayType, RamAddress
from koholint.states import load_named_state
from koholint.walkthrough import WalkthroughPlayer, load_walkthrough

PLAYERS = ("walkthrough", "random")
RANDOM_ACTIONS = (
    Button.NONE,
    Button.UP,
    Button.DOWN,
    Button.LEFT,
    Button.RIGHT,
    Button.A,
    Button.B,
    Button.START,
    Button.SELECT,
)
RANDOM_HOLD_FRAMES = 4
MAX_PLAY_FRAMES = 10_000_000


@dataclass(frozen=True)
class PlayResult:
    player: str
    seed: int
    frames: int
    seconds: float
    progress: Progress


def play_walkthrough(*, rom: Path | None = None) -> PlayResult:
    """Replay the scripted walkthrough from power-on (the bundled cartridge only)."""
    walkthrough = load_walkthrough()
    started = time.perf_counter()
    with GameBoy(rom=rom) as gameboy:
        WalkthroughPlayer(gameboy, walkthrough).play_to_end()
        progress = Progress.read(gameboy.ram)
        frames = gameboy.frame
    return PlayResult("walkthrough", 0, frames, time.perf_counter() - started, progress)


def play_random(
    *, seed: int, frames: int, rom: Path | None = None, start_state: str | None = "start_of_play"
) -> PlayResult:
    """Hold random buttons for `frames` frames, from a named state or from power-on."""
    if not 1 <= frames <= MAX_PLAY_FRAMES:
        raise ValueError(f"frames must be 1..{MAX_PLAY_FRAMES}, got {frames}")
    rng = random.Random(seed)
    started = time.perf_counter()
    with GameBoy(rom=rom) as gameboy:
        if start_state is not None:
            gameboy.load_state(load_named_state(start_state))
        if gameboy.rom.is_bundled_cartridge:
            gameboy.memory[CARTRIDGE_SEED_ADDRESS] = seed & 0xFF
        played = 0
        while played < frames:
            gameboy.hold(rng.choice(RANDOM_ACTIONS))
            step = min(RANDOM_HOLD_FRAMES, frames - played)
            gameboy.tick(step)
            played += step
            if gameboy.ram.byte(RamAddress.GAMEPLAY_TYPE) == GameplayType.CREDITS:
                break
        progress = Progress.read(gameboy.ram)
    return PlayResult("random", seed, played, time.perf_counter() - started, progress)
