"""The ``koholint`` command: every way of running the project goes through it."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from koholint.explore.command import register as add_explore
from koholint.fsck import register as add_store
from koholint.game.rom import ROM_ENV_VARIABLE, InvalidRomError, read_rom
from koholint.teachers import shorten_win

if TYPE_CHECKING:
    from koholint.baselines.episode import PlayedEpisode

POLICIES = ("noop", "random", "walkthrough", "explorer")
CHECKPOINT_PREFIX = "checkpoint:"
MAX_EPISODES = 100
MAX_STEPS = 10_000_000
BASELINE_STEPS = 25_000
_ROW = "{:<12}{:<18}{:>5}{:>7}{:>7}{:>9}{:>8}{:>5}"


def _rom_argument(value: str | None) -> Path | None:
    chosen = value or os.environ.get(ROM_ENV_VARIABLE)
    return Path(chosen) if chosen else None


# -- play ---------------------------------------------------------------------
def _starts(args: argparse.Namespace, rom: Path | None) -> list[str]:
    from koholint.game.states import STATE_NAMES, UnknownStateError

    if rom is not None:
        return ["power_on"]  # named states belong to the cartridge
    if args.start == "power-on":
        return ["power_on"]
    if args.start == "all":
        return list(STATE_NAMES)
    if args.start != "power_on" and args.start not in STATE_NAMES:
        raise UnknownStateError(
            f"unknown start {args.start!r}; choose power_on, all or one of {', '.join(STATE_NAMES)}"
        )
    return [args.start]


def cmd_play(args: argparse.Namespace) -> int:
    from koholint.baselines.play import run_episode

    rom = _rom_argument(args.rom)
    policies = args.policy or ["walkthrough", "random"]
    trained = [policy for policy in policies if policy.startswith(CHECKPOINT_PREFIX)]
    if trained:
        return _play_trained(args, policies, rom)
    if any(getattr(args, name) is not None for name in _TRAINED_ONLY):
        flags = ", ".join("--" + name for name in _TRAINED_ONLY)
        print(f"koholint play: {flags} apply to --policy checkpoint:PATH only", file=sys.stderr)
        return 2
    if rom is not None and "walkthrough" in policies:
        print(
            "koholint play: the walkthrough plays only the bundled cartridge; choose another --policy",
            file=sys.stderr,
        )
        return 2
    starts = _starts(args, rom)
    results = []
    print(_ROW.format("policy", "start", "seed", "rooms", "cells", "return", "steps", "won"))
    for policy in policies:
        for start in ["power_on"] if policy == "walkthrough" else starts:
            for seed in range(args.seed, args.seed + args.episodes):
                result = run_episode(
                    policy,
                    seed=seed,
                    start=None if start == "power_on" else start,
                    max_steps=args.max_steps or BASELINE_STEPS,
                    rom=str(rom) if rom else None,
                    trajectory=Path(args.out) / f"{policy}-{start}-seed{seed}.jsonl",
                )
                results.append(result)
                print(
                    _ROW.format(
                        policy,
                        result.start,
                        seed,
                        result.rooms,
                        result.cells,
                        f"{result.episode_return:.2f}",
                        result.steps,
                        "yes" if result.won else "no",
                    )  # fmt: skip
                )
    if len(results) > 1:
        _print_summary(results)
    print(f"trajectories in {args.out}/")
    return 0


_TRAINED_ONLY = ("sticky", "planner", "export", "greedy", "workers")


def _play_trained(args: argparse.Namespace, policies: list[str], rom: Path | None) -> int:
    """`--policy checkpoint:PATH`: one trained policy, in the env settings it trained with."""
    from koholint.baselines.play import play_checkpoint

    if len(policies) > 1:
        print("koholint play: play a checkpoint: policy on its own (one --policy)", file=sys.stderr)
        return 2
    if rom is not None:
        print("koholint play: a trained policy plays the cartridge it trained on; drop --rom "
              f"(and {ROM_ENV_VARIABLE})", file=sys.stderr)  # fmt: skip
        return 2
    report = play_checkpoint(
        Path(policies[0].removeprefix(CHECKPOINT_PREFIX)), start=args.start,
        episodes=args.episodes, seed=args.seed, sticky=args.sticky, planner=args.planner,
        max_steps=args.max_steps, greedy=bool(args.greedy),
        workers=1 if args.workers is None else args.workers,
        export=Path(args.export) if args.export else None,
    )  # fmt: skip
    return 0 if report.episodes else 1


def _print_summary(results: list[PlayedEpisode]) -> None:
    groups: dict[tuple[str, str], list[PlayedEpisode]] = {}
    for result in results:
        groups.setdefault((result.policy, result.start), []).append(result)
    print("\nsummary (mean over seeds)")
    print(_ROW.format("policy", "start", "eps", "rooms", "cells", "return", "steps", "wins"))
    for (policy, start), group in groups.items():
        count = len(group)
        print(
            _ROW.format(
                policy,
                start,
                count,
                f"{sum(r.rooms for r in group) / count:.1f}",
                f"{sum(r.cells for r in group) / count:.0f}",
                f"{sum(r.episode_return for r in group) / count:.2f}",
                f"{sum(r.steps for r in group) / count:.0f}",
                sum(r.won for r in group),
            )  # fmt: skip
        )


# -- other commands -------------------------------------------------------------
def cmd_replay(args: argparse.Namespace) -> int:
    from koholint.trajectory.jsonl import replay

    result = replay(Path(args.file))
    if result.ok:
        print(f"replay OK: {result.steps} steps, RAM identical at every step")
        return 0
    print(
        f"replay MISMATCH at step {result.first_mismatch}: RAM hash {result.actual} "
        f"!= recorded {result.expected}"
    )
    return 1


def cmd_rom_info(args: argparse.Namespace) -> int:
    from koholint.game.rom import bundled_cartridge

    info = read_rom(_rom_argument(args.path) or bundled_cartridge())
    print(
        f"path      {info.path}\ntitle     {info.title}\nsha256    {info.sha256}\n"
        f"size      {info.size}\ntype      0x{info.cartridge_type:02X}\ncolor     {info.cgb}\n"
        f"bundled   {info.is_bundled_cartridge}"
    )
    return 0


def cmd_cartridge_record(args: argparse.Namespace) -> int:
    from koholint.baselines.recorder import record
    from koholint.game.emulator import GameBoy
    from koholint.game.states import STATE_NAMES, states_dir
    from koholint.game.walkthrough import walkthrough_path

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


def cmd_schemas_export(args: argparse.Namespace) -> int:
    from koholint.game.state import game_state_schema_json, schema_path
    from koholint.schemas.evaluator import schema_files as score_schema_files
    from koholint.schemas.positions import schema_files as position_schema_files

    stale = 0
    files = [
        (schema_path(), game_state_schema_json()),
        *score_schema_files(),
        *position_schema_files(),
    ]
    for path, text in files:
        if not args.check:
            path.write_text(text)
            print(f"wrote {path}")
        elif not path.is_file() or path.read_text() != text:
            print(f"{path} is stale: run `koholint schemas export`", file=sys.stderr)
            stale += 1
        else:
            print(f"{path} is up to date")
    return 1 if stale else 0


SERVICE_GROUP = "koholint.services"
"""Entry points naming each service's uvicorn factory (``name = "package.app:main_app"``)."""
COMMAND_GROUP = "koholint.commands"
"""Entry points naming functions that add a service's own commands (train, evaluate, ...) and
the orchestrator's (loop)."""


def installed_services() -> dict[str, str]:
    """Service name -> its app factory, from the installed packages' entry points."""
    from importlib.metadata import entry_points

    return {point.name: point.value for point in entry_points(group=SERVICE_GROUP)}


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    services = installed_services()
    if args.service not in services:
        print(
            f"koholint serve: no service {args.service!r} is installed "
            f"(installed: {', '.join(sorted(services)) or 'none'}); "
            f"pip install 'koholint[{args.service}]'",
            file=sys.stderr,
        )
        return 2
    # The service's settings learn the address it listens on (e.g. to require a token
    # for control beyond loopback); an explicit setting in the environment wins.
    os.environ.setdefault(f"KOHOLINT_{args.service.upper().replace('-', '_')}_HOST", args.host)
    # Forwarded headers are read by koholint.web.auth from the configured proxies only;
    # uvicorn's own handling would believe them from any loopback peer.
    uvicorn.run(
        services[args.service], factory=True, host=args.host, port=args.port, log_level="info",
        proxy_headers=False, forwarded_allow_ips="",
    )  # fmt: skip
    return 0


def _add_service_commands(commands: argparse._SubParsersAction) -> None:
    """Commands that services and the orchestrator add (``koholint train`` from the trainer,
    ``koholint loop`` from the orchestrator, ...)."""
    from importlib.metadata import entry_points

    for point in sorted(entry_points(group=COMMAND_GROUP), key=lambda point: point.name):
        try:
            register = point.load()
        except ImportError as error:  # the service's extra is not installed
            missing = commands.add_parser(point.name, help=f"(not installed: {error.name})")
            missing.set_defaults(handler=_not_installed(point.name, str(error)))
            continue
        register(commands)


def _not_installed(command: str, reason: str) -> Any:
    def handler(args: argparse.Namespace) -> int:
        print(f"koholint {command}: not installed ({reason})", file=sys.stderr)
        return 2

    return handler


# -- parser ---------------------------------------------------------------------
def _policy_argument(value: str) -> str:
    if value in POLICIES or (
        value.startswith(CHECKPOINT_PREFIX) and len(value) > len(CHECKPOINT_PREFIX)
    ):
        return value
    raise argparse.ArgumentTypeError(
        f"{value!r}: choose {', '.join(POLICIES)} or checkpoint:PATH (a trainer checkpoint "
        "folder or a policy folder)"
    )


def _sticky_argument(value: str) -> float:
    try:
        probability = float(value)
    except ValueError:
        probability = -1.0
    if not 0.0 <= probability < 1.0:
        raise argparse.ArgumentTypeError(
            f"{value!r}: a probability, 0 <= p < 1 (training uses 0.25)"
        )
    return probability


def _workers_argument(value: str) -> int:
    from koholint.baselines.trained import MAX_WORKERS

    if not value.isdigit() or not 1 <= int(value) <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"{value!r}: use 1..{MAX_WORKERS} processes")
    return int(value)


def _add_play(commands: argparse._SubParsersAction) -> None:
    play = commands.add_parser(
        "play",
        help="play episodes with baseline policies or a trained policy; print what each reached",
    )
    play.add_argument("--policy", action="append", type=_policy_argument, metavar="POLICY",
                      help=f"who plays: {', '.join(POLICIES)} (repeatable; default: walkthrough "
                      "and random), or checkpoint:PATH, a trained policy (a trainer checkpoint "
                      "folder, or a folder from koholint export-policy)")  # fmt: skip
    play.add_argument(
        "--episodes", type=int, default=1, help="episodes per policy and start, one seed each"
    )
    play.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    play.add_argument("--start", default="start_of_play",
                      help="a named save state, 'power_on' (or power-on), or 'all' for every "
                      "named state; a trained policy also takes demo:<trajectory.actions>@<step>")  # fmt: skip
    play.add_argument("--max-steps", type=int, default=None,
                      help="steps per episode (default 25000 = 100000 frames at frame skip 4; "
                      "a trained policy: its training episode length)")  # fmt: skip
    play.add_argument("--sticky", type=_sticky_argument, default=None, metavar="P",
                      help="trained policy: sticky-action probability (default: as trained)")  # fmt: skip
    play.add_argument("--planner", choices=("rules", "off"), default=None,
                      help="trained policy: hybrid control (default: as trained)")  # fmt: skip
    play.add_argument("--export", metavar="DIR", default=None,
                      help="trained policy: write each episode as a GIF, and play.json, into DIR")  # fmt: skip
    play.add_argument("--greedy", action="store_true", default=None,
                      help="trained policy: take the most likely action (default: sample, as in training)")  # fmt: skip
    play.add_argument("--workers", type=_workers_argument, default=None, metavar="N",
                      help="trained policy: processes playing episodes side by side (default 1; "
                      "each episode's seed fixes it, so the results are the same)")  # fmt: skip
    play.add_argument(
        "--out", default="runs/play", help="folder for the baselines' JSONL trajectories"
    )
    play.add_argument(
        "--rom", help=f"a Game Boy ROM instead of the cartridge (or set {ROM_ENV_VARIABLE})"
    )
    play.set_defaults(handler=cmd_play)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="koholint", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    _add_play(commands)
    add_explore(commands, shorten=shorten_win)
    _add_service_commands(commands)
    add_store(commands)

    serve = commands.add_parser("serve", help="run a service over HTTP")
    serve.add_argument("service", help=f"one of: {', '.join(sorted(installed_services()))}")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.set_defaults(handler=cmd_serve)

    replay = commands.add_parser(
        "replay", help="re-run a trajectory and check the RAM at every step"
    )
    replay.add_argument("file", help="a JSONL trajectory written by koholint play")
    replay.set_defaults(handler=cmd_replay)

    rom = commands.add_parser("rom", help="ROM files")
    info = rom.add_subparsers(dest="rom_command", required=True).add_parser(
        "info", help="check a ROM's header and print its identity"
    )
    info.add_argument(
        "path", nargs="?", help=f"ROM path (default: ${ROM_ENV_VARIABLE} or the cartridge)"
    )
    info.set_defaults(handler=cmd_rom_info)

    cartridge = commands.add_parser("cartridge", help="the open test cartridge")
    record = cartridge.add_subparsers(dest="cartridge_command", required=True).add_parser(
        "record", help="re-record the walkthrough and the named save states"
    )
    record.add_argument("--out", help="write into this folder instead of the package data")
    record.set_defaults(handler=cmd_cartridge_record)

    schemas = commands.add_parser("schemas", help="JSON Schemas of the wire contracts")
    export = schemas.add_subparsers(dest="schemas_command", required=True).add_parser(
        "export", help="write the JSON Schemas (GameState, score records) into the package"
    )
    export.add_argument(
        "--check", action="store_true", help="fail if the checked-in schema is stale"
    )
    export.set_defaults(handler=cmd_schemas_export)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from koholint.baselines.trained import PolicyFileError
    from koholint.game.states import UnknownStateError
    from koholint.trajectory.jsonl import TrajectoryError

    args = build_parser().parse_args(argv)
    if args.command == "play" and not (
        1 <= args.episodes <= MAX_EPISODES
        and (args.max_steps is None or 1 <= args.max_steps <= MAX_STEPS)
    ):
        print(
            f"koholint play: --episodes must be 1..{MAX_EPISODES} and --max-steps 1..{MAX_STEPS}",
            file=sys.stderr,
        )
        return 2
    try:
        return int(args.handler(args))
    except (InvalidRomError, UnknownStateError, TrajectoryError, PolicyFileError) as error:
        print(f"koholint: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
