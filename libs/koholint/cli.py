"""The ``koholint`` command: every way of running the project goes through it."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from koholint.rom import ROM_ENV_VARIABLE, InvalidRomError, read_rom


def _rom_argument(value: str | None) -> Path | None:
    chosen = value or os.environ.get(ROM_ENV_VARIABLE)
    return Path(chosen) if chosen else None


def cmd_play(args: argparse.Namespace) -> int:
    from koholint.play import play_random, play_walkthrough

    rom = _rom_argument(args.rom)
    if rom is not None and "walkthrough" in args.policy:
        print(
            "the walkthrough plays only the bundled cartridge; drop --policy walkthrough",
            file=sys.stderr,
        )
        return 2
    results = []
    for policy in args.policy:
        if policy == "walkthrough":
            results.append(play_walkthrough())
        else:
            start = None if rom is not None else args.start
            for seed in range(args.seed, args.seed + args.episodes):
                results.append(
                    play_random(seed=seed, frames=args.frames, rom=rom, start_state=start)
                )
    print(
        f"{'player':<12}{'seed':>5}{'frames':>9}{'rooms':>7}{'kills':>7}{'deaths':>8}"
        f"{'rupees':>8}{'keys':>6}{'hearts':>8}{'sword':>7}{'won':>5}{'fps':>9}"
    )
    for result in results:
        p = result.progress
        fps = result.frames / result.seconds if result.seconds else 0.0
        print(
            f"{result.player:<12}{result.seed:>5}{result.frames:>9}{p.rooms_visited:>7}{p.kills:>7}"
            f"{p.deaths:>8}{p.rupees:>8}{p.keys:>6}{p.max_hearts:>8}{'yes' if p.has_sword else 'no':>7}"
            f"{'yes' if p.won else 'no':>5}{fps:>9.0f}"
        )
    return 0


def cmd_rom_info(args: argparse.Namespace) -> int:
    from koholint.rom import bundled_cartridge

    path = _rom_argument(args.path) or bundled_cartridge()
    info = read_rom(path)
    print(
        f"path      {info.path}\ntitle     {info.title}\nsha256    {info.sha256}\n"
        f"size      {info.size}\ntype      0x{info.cartridge_type:02X}\ncolor     {info.cgb}\n"
        f"bundled   {info.is_bundled_cartridge}"
    )
    return 0


def cmd_cartridge_record(args: argparse.Namespace) -> int:
    from koholint.emulator import GameBoy
    from koholint.route import record
    from koholint.states import STATE_NAMES, states_dir
    from koholint.walkthrough import walkthrough_path

    with GameBoy() as gameboy:
        route = record(gameboy)
    out_dir = Path(args.out) if args.out else None
    walkthrough_file = (out_dir / "walkthrough.json") if out_dir else walkthrough_path()
    state_dir = (out_dir / "states") if out_dir else states_dir()
    state_dir.mkdir(parents=True, exist_ok=True)
    walkthrough_file.write_text(route.walkthrough.to_json())
    for name in STATE_NAMES:
        (state_dir / f"{name}.state").write_bytes(route.states[name])
    print(
        f"recorded {route.walkthrough.frames} frames, {len(route.walkthrough.marks)} marks "
        f"-> {walkthrough_file}; states -> {state_dir}"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="koholint", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    play = commands.add_parser(
        "play", help="play with the walkthrough and a random agent; print what each reached"
    )
    play.add_argument(
        "--policy",
        action="append",
        choices=("walkthrough", "random"),
        help="who plays (repeatable; default: walkthrough and random)",
    )
    play.add_argument("--seed", type=int, default=0, help="first random seed (default 0)")
    play.add_argument(
        "--episodes", type=int, default=1, help="random episodes, one seed each (default 1)"
    )
    play.add_argument(
        "--frames", type=int, default=100_000, help="frames per random episode (default 100000)"
    )
    play.add_argument(
        "--start", default="start_of_play", help="save state the random agent starts from"
    )
    play.add_argument(
        "--rom", help=f"a Game Boy ROM instead of the cartridge (or set {ROM_ENV_VARIABLE})"
    )
    play.set_defaults(handler=cmd_play)

    rom = commands.add_parser("rom", help="ROM files")
    rom_commands = rom.add_subparsers(dest="rom_command", required=True)
    info = rom_commands.add_parser("info", help="check a ROM's header and print its identity")
    info.add_argument(
        "path", nargs="?", help=f"ROM path (default: ${ROM_ENV_VARIABLE} or the cartridge)"
    )
    info.set_defaults(handler=cmd_rom_info)

    cartridge = commands.add_parser("cartridge", help="the open test cartridge")
    cartridge_commands = cartridge.add_subparsers(dest="cartridge_command", required=True)
    rec = cartridge_commands.add_parser(
        "record", help="re-record the walkthrough and the named save states"
    )
    rec.add_argument("--out", help="write into this folder instead of the package data")
    rec.set_defaults(handler=cmd_cartridge_record)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "policy", None) is None and args.command == "play":
        args.policy = ["walkthrough", "random"]
    if args.command == "play" and not (
        1 <= args.episodes <= 100 and 1 <= args.frames <= 10_000_000
    ):
        print("--episodes must be 1..100 and --frames 1..10000000", file=sys.stderr)
        return 2
    try:
        return int(args.handler(args))
    except InvalidRomError as error:
        print(f"koholint: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
