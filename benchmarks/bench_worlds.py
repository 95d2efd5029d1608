"""Generated worlds: solvability and the walkthrough's length over many seeds of each size.

    .venv/bin/python benchmarks/bench_worlds.py [--worlds 100] [--play 100] [--out FILE]

For each size, generates worlds of seeds 0..worlds-1 (timing the generation), checks each on
its graph (``worldgen.solve``: must be 100%), and plays the first `--play` of them with the
walkthrough controller from power-on on real PyBoy (``baselines.world_route``), reporting
wins and the frames it took. Writes one JSON line per world to --out when given.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from koholint.baselines.recorder import RouteError
from koholint.baselines.world_route import play
from koholint.game.emulator import GameBoy
from koholint.game.rom import bundled_cartridge
from koholint.game.worldgen import SIZES, build_rom, generate
from koholint.game.worlds import WorldError


def bench_size(size: str, worlds: int, played: int, out: Path | None) -> dict[str, object]:
    engine = bundled_cartridge().read_bytes()
    seconds, steps, frames, wins, solved = [], [], [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(worlds):
            started = time.perf_counter()
            try:
                generated = generate(seed, size)
            except WorldError:
                continue
            rom = build_rom(generated, engine)
            seconds.append(time.perf_counter() - started)
            solved += 1
            steps.append(len(generated.route))
            record: dict[str, object] = {"size": size, "seed": seed, "route_steps": steps[-1]}
            if seed < played:
                path = Path(tmp) / f"{size}-{seed}.gb"
                path.write_bytes(rom)
                with GameBoy(rom=path) as gameboy:
                    try:
                        route = play(gameboy, generated.world)
                    except RouteError as error:
                        record["won"], record["error"] = False, str(error)[:200]
                    else:
                        wins += 1
                        frames.append(route.walkthrough.frames)
                        record["won"], record["frames"] = True, frames[-1]
            if out is not None:
                with out.open("a") as handle:
                    handle.write(json.dumps(record) + "\n")
    return {
        "size": size,
        "worlds": worlds,
        "solvable": solved,
        "generate_ms_max": round(1000 * max(seconds), 1),
        "route_steps_median": statistics.median(steps),
        "played": min(played, worlds),
        "won": wins,
        "frames_median": statistics.median(frames) if frames else None,
        "frames_max": max(frames) if frames else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=100)
    parser.add_argument("--play", type=int, default=100, help="how many to play on PyBoy")
    parser.add_argument("--out", type=Path, help="append one JSON line per world here")
    args = parser.parse_args()
    for size in SIZES:
        print(json.dumps(bench_size(size, args.worlds, args.play, args.out)), flush=True)


if __name__ == "__main__":
    main()
