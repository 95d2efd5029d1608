"""The ``koholint`` command: every way of running the project goes through it."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from koholint.rom import ROM_ENV_VARIABLE, InvalidRomError, read_rom

if TYPE_CHECKING:
    from koholint.play import EpisodeResult

POLICIES = ("noop", "random", "walkthrough", "explorer")
MAX_EPISODES = 100
MAX_STEPS = 10_000_000
_ROW = "{:<12}{:<18}{:>5}{:>7}{:>7}{:>9}{:>8}{:>5}"


def _rom_argument(value: str | None) -> Path | None:
    chosen = value or os.environ.get(ROM_ENV_VARIABLE)
    return Path(chosen) if chosen else None


# -- play ---------------------------------------------------------------------
def _starts(args: argparse.Namespace, rom: Path | None) -> list[str]:
    from koholint.states import STATE_NAMES, UnknownStateError

    if rom is not None:
        return ["power_on"]  # named states belong to the cartridge
    if args.start == "all":
        return list(STATE_NAMES)
    if args.start != "power_on" and args.start not in STATE_NAMES:
        raise UnknownStateError(
            f"unknown start {args.start!r}; choose power_on, all or one of {', '.join(STATE_NAMES)}"
        )
    return [args.start]


def cmd_play(args: argparse.Namespace) -> int:
    from koholint.play import run_episode

    rom = _rom_argument(args.rom)
    policies = args.policy or ["walkthrough", "random"]
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
                    max_steps=args.max_steps,
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


def _print_summary(results: list[EpisodeResult]) -> None:
    groups: dict[tuple[str, str], list[EpisodeResult]] = {}
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
    from koholint.trajectory import replay

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
    from koholint.rom import bundled_cartridge

    info = read_rom(_rom_argument(args.path) or bundled_cartridge())
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


def cmd_schemas_export(args: argparse.Namespace) -> int:
    from koholint.state import game_state_schema_json, schema_path

    path, text = schema_path(), game_state_schema_json()
    if args.check:
        if path.read_text() != text:
            print(f"{path} is stale: run `koholint schemas export`", file=sys.stderr)
            return 1
        print(f"{path} is up to date")
        return 0
    path.write_text(text)
    print(f"wrote {path}")
    return 0


SERVICES = {
    "env-sim": "env_sim.app:main_app",
    "trainer": "trainer.app:main_app",
    "planner": "planner.app:main_app",
    "llm-local": "llm_local.app:main_app",
}


def cmd_serve(args: argparse.Namespace) -> int:
    import importlib.util

    import uvicorn

    module = SERVICES[args.service].split(":")[0]
    if importlib.util.find_spec(module.split(".")[0]) is None:
        extra = {"llm-local": "local-llm"}.get(args.service, args.service)
        print(
            f"koholint serve: {args.service} is not installed; pip install 'koholint[{extra}]'",
            file=sys.stderr,
        )
        return 2
    uvicorn.run(
        SERVICES[args.service], factory=True, host=args.host, port=args.port, log_level="info"
    )
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    """Train on embedded defaults (or RAY_ADDRESS etc.); progress bar, summary, learning curve."""
    try:
        from trainer.config import TrainConfig, TrainConfigError
        from trainer.run import RunStatus, TrainingRun
    except ImportError:
        print(
            "koholint train: the trainer is not installed; pip install 'koholint[trainer]'",
            file=sys.stderr,
        )
        return 2
    settings = {
        name: value
        for name, value in vars(args).items()
        if name in TRAIN_FLAGS and value is not None
    }
    try:
        config = TrainConfig.from_mapping(settings)
    except TrainConfigError as error:
        print(f"koholint train: {error}", file=sys.stderr)
        return 2
    run = TrainingRun(config)

    def progress(status: RunStatus) -> None:
        done = min(status.env_steps / config.total_env_steps, 1.0)
        bar = "#" * int(done * 30)
        print(f"\r[{bar:<30}] {status.env_steps:>8}/{config.total_env_steps} steps  {status.steps_per_second:6.0f}/s  "
              f"rooms {status.rooms_mean or 0:4.1f}  cells {status.cells_mean or 0:5.1f}  archive {status.archive_cells}",
              end="", flush=True)  # fmt: skip

    try:
        status = run.run(on_iteration=progress)
    except TrainConfigError as error:
        print(f"\nkoholint train: {error}", file=sys.stderr)
        return 2
    print(
        f"\nrun {status.run}: {status.state} after {status.env_steps} steps in {status.iterations} iterations"
    )

    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    print(f"  return {shown(status.episode_return_mean)}  rooms {shown(status.rooms_mean)}  "
          f"cells {shown(status.cells_mean)}  win rate {shown(status.win_rate)}  "
          f"archive cells {status.archive_cells}  checkpoints {status.checkpoints}")  # fmt: skip
    print(f"  learning curve: {Path(config.run_dir).resolve() / status.run / 'learning_curve.png'}")
    return 0


TRAIN_FLAGS = ("run", "total_env_steps", "num_env_runners", "envs_per_env_runner", "episode_length",
               "train_batch_size", "minibatch_size", "store_url", "resume_from", "seed", "run_dir")  # fmt: skip


def _add_train(commands: argparse._SubParsersAction) -> None:
    train = commands.add_parser(
        "train", help="train PPO on the cartridge (embedded defaults; RAY_ADDRESS joins a cluster)"
    )
    train.add_argument("--run", help="run name (default: from the time)")
    train.add_argument(
        "--steps", dest="total_env_steps", type=int, help="environment steps (default 20000)"
    )
    train.add_argument(
        "--workers", dest="num_env_runners", type=int, help="env-runner processes (RAY_WORKERS)"
    )
    train.add_argument(
        "--envs", dest="envs_per_env_runner", type=int, help="envs per runner (ENVS_PER_WORKER)"
    )
    train.add_argument(
        "--episode-length",
        dest="episode_length",
        type=int,
        help="steps per episode (EPISODE_LENGTH)",
    )
    train.add_argument(
        "--batch", dest="train_batch_size", type=int, help="steps per update (BATCH_SIZE)"
    )
    train.add_argument("--minibatch", dest="minibatch_size", type=int, help="steps per minibatch")
    train.add_argument("--store", dest="store_url", help="object store URL (KOHOLINT_STORE_URL)")
    train.add_argument(
        "--resume", dest="resume_from", help="a checkpoint name from the run's ledger"
    )
    train.add_argument("--seed", type=int)
    train.add_argument("--run-dir", dest="run_dir", help="local folder for Ray files and the curve")
    train.set_defaults(handler=cmd_train)


# -- parser ---------------------------------------------------------------------
def _add_play(commands: argparse._SubParsersAction) -> None:
    play = commands.add_parser(
        "play", help="play episodes with baseline policies; print what each reached"
    )
    play.add_argument("--policy", action="append", choices=POLICIES,
                      help="who plays (repeatable; default: walkthrough and random)")  # fmt: skip
    play.add_argument(
        "--episodes", type=int, default=1, help="episodes per policy and start, one seed each"
    )
    play.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    play.add_argument("--start", default="start_of_play",
                      help="a named save state, 'power_on', or 'all' for every named state")  # fmt: skip
    play.add_argument("--max-steps", type=int, default=25_000,
                      help="steps per episode (default 25000 = 100000 frames at frame skip 4)")  # fmt: skip
    play.add_argument("--out", default="runs/play", help="folder for the JSONL trajectories")
    play.add_argument(
        "--rom", help=f"a Game Boy ROM instead of the cartridge (or set {ROM_ENV_VARIABLE})"
    )
    play.set_defaults(handler=cmd_play)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="koholint", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    _add_play(commands)
    _add_train(commands)

    serve = commands.add_parser("serve", help="run a service over HTTP")
    serve.add_argument("service", choices=sorted(SERVICES))
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
        "export", help="write the GameState JSON Schema into the package"
    )
    export.add_argument(
        "--check", action="store_true", help="fail if the checked-in schema is stale"
    )
    export.set_defaults(handler=cmd_schemas_export)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from koholint.states import UnknownStateError
    from koholint.trajectory import TrajectoryError

    args = build_parser().parse_args(argv)
    if args.command == "play" and not (
        1 <= args.episodes <= MAX_EPISODES and 1 <= args.max_steps <= MAX_STEPS
    ):
        print(
            f"koholint play: --episodes must be 1..{MAX_EPISODES} and --max-steps 1..{MAX_STEPS}",
            file=sys.stderr,
        )
        return 2
    try:
        return int(args.handler(args))
    except (InvalidRomError, UnknownStateError, TrajectoryError) as error:
        print(f"koholint: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
