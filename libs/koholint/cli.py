"""The ``koholint`` command: every way of running the project goes through it."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from koholint.baselines.settings import CHECKPOINT_PREFIX, PlayCommandSettings
from koholint.explore.command import register as add_explore
from koholint.flags import add_setting_flags, environment_values, flag_errors, setting_values
from koholint.fsck import register as add_store
from koholint.game.rom import ROM_ENV_VARIABLE, InvalidRomError, playing, read_rom, resolve_rom
from koholint.teachers import shorten_win

if TYPE_CHECKING:
    from koholint.baselines.episode import PlayedEpisode

BASELINE_STEPS = 25_000
_ROW = "{:<12}{:<18}{:>5}{:>7}{:>7}{:>9}{:>8}{:>5}"


def _rom_argument(value: str | None) -> Path | None:
    chosen = value or os.environ.get(ROM_ENV_VARIABLE)
    return Path(chosen) if chosen else None


# -- play ---------------------------------------------------------------------
def _starts(settings: PlayCommandSettings, rom: Path | None) -> list[str]:
    from koholint.game.states import OPENING_STATES, STATE_NAMES, UnknownStateError

    if settings.start == "power-on":
        return ["power_on"]
    if settings.start == "all":  # another world has the opening's states alone
        return list(STATE_NAMES) if rom is None else ["power_on", *OPENING_STATES]
    if settings.start != "power_on" and settings.start not in STATE_NAMES:
        raise UnknownStateError(
            f"unknown start {settings.start!r}; choose power_on, all or one of {', '.join(STATE_NAMES)}"
        )
    return [settings.start]


def cmd_play(args: argparse.Namespace) -> int:
    from koholint.baselines.play import run_episode

    try:
        settings = PlayCommandSettings(
            **{**environment_values(PlayCommandSettings, os.environ), **setting_values(args)}
        )
    except ValidationError as error:
        print(f"koholint play: {flag_errors(error)}", file=sys.stderr)
        return 2
    rom = resolve_rom(settings.rom) if settings.rom else None
    policies = settings.policy
    trained = [policy for policy in policies if policy.startswith(CHECKPOINT_PREFIX)]
    if trained:
        return _play_trained(settings, rom)
    if any(getattr(settings, name) is not None for name in settings.trained_only):
        flags = ", ".join("--" + name for name in settings.trained_only)
        print(f"koholint play: {flags} apply to --policy checkpoint:PATH only", file=sys.stderr)
        return 2
    starts = _starts(settings, rom)
    results = []
    print(_ROW.format("policy", "start", "seed", "rooms", "cells", "return", "steps", "won"))
    for policy in policies:
        for start in ["power_on"] if policy == "walkthrough" else starts:
            for seed in range(settings.seed, settings.seed + settings.episodes):
                result = run_episode(
                    policy,
                    seed=seed,
                    start=None if start == "power_on" else start,
                    max_steps=settings.max_steps or BASELINE_STEPS,
                    rom=str(rom) if rom else None,
                    trajectory=Path(settings.out) / f"{policy}-{start}-seed{seed}.jsonl",
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
    print(f"trajectories in {settings.out}/")
    return 0


def _play_trained(settings: PlayCommandSettings, rom: Path | None) -> int:
    """`--policy checkpoint:PATH`: one trained policy, in the env settings it trained with, on
    its world or --rom's (a policy may be played on a world it never saw)."""
    policies = settings.policy
    if len(policies) > 1:
        print("koholint play: play a checkpoint: policy on its own (one --policy)", file=sys.stderr)
        return 2
    with playing(rom):  # the episodes' worker processes inherit the world
        return _play_checkpoint(settings)


def _play_checkpoint(settings: PlayCommandSettings) -> int:
    from koholint.baselines.play import play_checkpoint

    policies = settings.policy
    report = play_checkpoint(
        Path(policies[0].removeprefix(CHECKPOINT_PREFIX)), start=settings.start,
        episodes=settings.episodes, seed=settings.seed, sticky=settings.sticky,
        planner=settings.planner, max_steps=settings.max_steps, greedy=bool(settings.greedy),
        workers=1 if settings.workers is None else settings.workers,
        export=Path(settings.export) if settings.export else None,
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

    with playing(args.rom):
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


def cmd_cartridge_generate(args: argparse.Namespace) -> int:
    from koholint.game.rom import bundled_cartridge
    from koholint.game.worldgen import generate, write_world

    world = generate(args.seed, args.size)
    rom, card = write_world(world, bundled_cartridge().read_bytes(), Path(args.out))
    if args.verify:  # play it from power-on with the walkthrough controller, then record
        from koholint.baselines.recorder import RouteError
        from koholint.baselines.world_route import play
        from koholint.game.emulator import GameBoy

        try:
            with GameBoy(rom=rom) as gameboy:
                frames = play(gameboy, world.world).walkthrough.frames
        except RouteError as error:
            print(f"koholint cartridge generate: the walkthrough did not win: {error}")
            return 1
        write_world(world, bundled_cartridge().read_bytes(), Path(args.out), frames)
    print(
        f"world {args.size} seed {args.seed}: {len(world.world.rooms)} rooms, a route of "
        f"{len(world.route)} steps"
        + (f", won from power-on in {frames} frames" if args.verify else "")
        + f" -> {rom}, {card}"
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


class ServeSettings(BaseModel):
    """Where ``koholint serve NAME`` listens (the service's own settings are its
    ``KOHOLINT_<NAME>_*``)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    environment_prefix: ClassVar[str] = "KOHOLINT_SERVE_"

    host: str = Field("127.0.0.1", min_length=1, max_length=255)
    """the address to listen on; the service learns it (its KOHOLINT_<NAME>_HOST, unless set),
    and beyond loopback a service that changes state wants a token"""
    port: int = Field(8000, ge=1, le=65_535)
    """the port to listen on"""


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    try:
        settings = ServeSettings(
            **{**environment_values(ServeSettings, os.environ), **setting_values(args)}
        )
    except ValidationError as error:
        print(f"koholint serve: {flag_errors(error)}", file=sys.stderr)
        return 2
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
    os.environ.setdefault(f"KOHOLINT_{args.service.upper().replace('-', '_')}_HOST", settings.host)
    # Forwarded headers are read by koholint.web.auth from the configured proxies only;
    # uvicorn's own handling would believe them from any loopback peer.
    uvicorn.run(
        services[args.service], factory=True, host=settings.host, port=settings.port, log_level="info",
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
def _add_play(commands: argparse._SubParsersAction) -> None:
    play = commands.add_parser(
        "play",
        help="play episodes with baseline policies or a trained policy; print what each reached",
        description="Every setting: --flag > environment variable > default.",
    )
    add_setting_flags(play, PlayCommandSettings)
    play.set_defaults(handler=cmd_play)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="koholint", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    _add_play(commands)
    add_explore(commands, shorten=shorten_win)
    _add_service_commands(commands)
    add_store(commands)

    serve = commands.add_parser(
        "serve",
        help="run a service over HTTP",
        description="Every setting: --flag > environment variable > default.",
    )
    serve.add_argument("service", help=f"one of: {', '.join(sorted(installed_services()))}")
    add_setting_flags(serve, ServeSettings)
    serve.set_defaults(handler=cmd_serve)

    replay = commands.add_parser(
        "replay", help="re-run a trajectory and check the RAM at every step"
    )
    replay.add_argument("file", help="a JSONL trajectory written by koholint play")
    replay.add_argument(
        "--rom", default=None,
        help=f"the world it was played on: a ROM or a world folder (default: ${ROM_ENV_VARIABLE} "
        "or the cartridge)",
    )  # fmt: skip
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
    cartridge_commands = cartridge.add_subparsers(dest="cartridge_command", required=True)
    record = cartridge_commands.add_parser(
        "record", help="re-record the walkthrough and the named save states"
    )
    record.add_argument("--out", help="write into this folder instead of the package data")
    record.set_defaults(handler=cmd_cartridge_record)
    generate = cartridge_commands.add_parser(
        "generate", help="write a generated world's ROM and card (DIR/cartridge.gb, world.json)"
    )
    generate.add_argument("--seed", type=int, required=True, help="the world's seed")
    generate.add_argument("--size", choices=("small", "medium", "large"), default="small")
    generate.add_argument("--out", required=True, help="the folder to write into")
    generate.add_argument(
        "--verify", action="store_true", help="win it with the walkthrough controller first"
    )
    generate.set_defaults(handler=cmd_cartridge_generate)

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
    try:
        return int(args.handler(args))
    except (InvalidRomError, UnknownStateError, TrajectoryError, PolicyFileError) as error:
        print(f"koholint: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
