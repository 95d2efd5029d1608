"""Benchmark the open test cartridge against a trivial ROM, and the random-policy baseline.

    .venv/bin/python benchmarks/bench_cartridge.py [--frames 60000] [--seeds 5]

Everything runs in this one process, pinned to one core, render off. Prints frames/s
for a trivial ROM (halts every frame: the emulator's ceiling), for the cartridge in
several situations and as a ratio of the trivial ROM; then the random policy's rooms
reached in 100,000 frames for each seed (it must never win).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from koholint.baselines.play import run_episode
from koholint.baselines.recorder import Route
from koholint.game.emulator import GameBoy
from koholint.game.rom import HEADER_CHECKSUM, header_checksum
from koholint.game.states import load_named_state
from koholint.game.walkthrough import WalkthroughPlayer, load_walkthrough

CHUNK = 1000


def trivial_rom() -> bytes:
    """32 KiB ROM: enable the VBlank interrupt and halt forever (reti at 0x40)."""
    rom = bytearray(32 * 1024)
    rom[0x40] = 0xD9  # reti
    rom[0x100:0x104] = bytes([0x00, 0xC3, 0x50, 0x01])  # nop; jp 0x150
    program = [
        0x3E,
        0x01,
        0xE0,
        0xFF,
        0xFB,
        0x76,
        0x18,
        0xFD,
    ]  # ld a,1; ldh (IE),a; ei; halt; jr -3
    rom[0x150 : 0x150 + len(program)] = bytes(program)
    rom[0x134:0x13C] = b"TRIVIAL\x00"
    rom[HEADER_CHECKSUM] = header_checksum(bytes(rom))
    return bytes(rom)


def frames_per_second(gameboy: GameBoy, frames: int) -> float:
    started = time.perf_counter()
    for _ in range(frames // CHUNK):
        gameboy.tick(CHUNK)
    return (frames // CHUNK) * CHUNK / (time.perf_counter() - started)


def bench_trivial(frames: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trivial.gb"
        path.write_bytes(trivial_rom())
        with GameBoy(rom=path) as gameboy:
            gameboy.tick(200)
            return frames_per_second(gameboy, frames)


def bench_state(name: str, frames: int, room_up: bool = False) -> float:
    with GameBoy() as gameboy:
        gameboy.load_state(load_named_state(name))
        if room_up:
            Route(gameboy).leave("up")  # into a room with enemies walking about
        return frames_per_second(gameboy, frames)


def bench_walkthrough() -> float:
    walkthrough = load_walkthrough()
    with GameBoy() as gameboy:
        started = time.perf_counter()
        WalkthroughPlayer(gameboy, walkthrough).play_to_end()
        return walkthrough.frames / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=60_000, help="frames per speed measurement")
    parser.add_argument("--seeds", type=int, default=5, help="random-policy seeds")
    parser.add_argument("--random-steps", type=int, default=25_000, help="4 frames per step")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    trivial = bench_trivial(args.frames)
    rows = [
        ("trivial ROM (halt loop)", trivial),
        ("cartridge: title screen", bench_state("title", args.frames)),
        ("cartridge: village, idle", bench_state("start_of_play", args.frames)),
        ("cartridge: room with enemies", bench_state("start_of_play", args.frames, room_up=True)),
        (
            "cartridge: dungeon, 3 enemies",
            bench_state("dungeon_entrance", args.frames, room_up=True),
        ),
        ("cartridge: walkthrough replay", bench_walkthrough()),
    ]
    print(f"emulation speed, render off, one core ({args.frames} frames each)")
    print(f"{'workload':<32}{'frames/s':>10}{'vs trivial':>12}")
    for name, fps in rows:
        print(f"{name:<32}{fps:>10.0f}{fps / trivial:>12.2f}")

    print(
        f"\nrandom policy in koholint/Zelda-v1 from start_of_play, {args.random_steps} steps "
        f"x 4 frames per seed"
    )
    print(f"{'seed':>4}{'rooms':>7}{'cells':>7}{'kills':>7}{'deaths':>8}{'won':>5}{'steps/s':>9}")
    rooms = []
    for seed in range(args.seeds):
        result = run_episode("random", seed=seed, max_steps=args.random_steps)
        rooms.append(result.rooms)
        print(
            f"{seed:>4}{result.rooms:>7}{result.cells:>7}{result.kills:>7}{result.deaths:>8}"
            f"{'yes' if result.won else 'no':>5}{result.steps / result.seconds:>9.0f}"
        )
    print(
        f"rooms reached: mean {statistics.mean(rooms):.1f}, min {min(rooms)}, max {max(rooms)} (of 13)"
    )


if __name__ == "__main__":
    main()
