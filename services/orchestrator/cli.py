"""``koholint loop``: the orchestrator's command, added to the CLI through an entry point.

Its flags are derived from its settings (orchestrator/config.py, ``koholint.flags``): a field's
docstring is its help, a flag beats the field's environment variable (``KOHOLINT_LOOP_<FIELD>``),
which beats the default. The R_phi flags below them are the trainer's settings, handed to every
``koholint train`` only when given.
"""

from __future__ import annotations

import argparse
import sys
import time

from pydantic import ValidationError

from koholint.flags import add_setting_flags, flag_errors, setting_values
from koholint.game.rom import playing
from orchestrator.config import Settings

TRAINER_FLAGS = {
    "shaping_scale": ("--shaping-scale", float, "KOHOLINT_TRAINER_REWARD__SHAPING_SCALE",
                      "Phi = scale * R_phi (the trainer's reward.shaping_scale)"),
    "mode": ("--reward-mode", str, "KOHOLINT_TRAINER_REWARD__MODE",
             "online: how the trainer uses R_phi, potential or bonus (its reward.mode)"),
    "bonus_coefficient": ("--reward-bonus-coefficient", float,
                          "KOHOLINT_TRAINER_REWARD__BONUS_COEFFICIENT",
                          "online, bonus mode: the weight of the standardised R_phi (the "
                          "trainer's reward.bonus_coefficient)"),
}  # fmt: skip
"""The trainer's settings the loop takes as its own flags: (the trainer's flag, type, its
variable, help). Left out, the trainer's default (or its variable) holds."""
LOOP_FLAGS = {"mode": ["--mode"], "bonus_coefficient": ["--bonus-coefficient"]}
"""The loop's own names for them, kept beside the trainer's."""


def cmd_loop(args: argparse.Namespace) -> int:
    try:
        settings = Settings(**setting_values(args))
    except ValidationError as error:
        print(f"koholint loop: {flag_errors(error)}", file=sys.stderr)
        return 2
    with playing(settings.rom):  # every stage's process inherits the world
        if settings.online:
            return cmd_online(settings, args)
        return cmd_bursts(settings, args)


def cmd_bursts(settings: Settings, args: argparse.Namespace) -> int:
    """Burst after burst: train, judge, fit R_phi, train again with shaping (orchestrator.loop)."""
    from orchestrator.loop import LoopError, LoopPlan, print_table, run_loop

    plan = LoopPlan(
        name=settings.name or time.strftime("loop-%Y%m%d-%H%M%S"), bursts=settings.bursts,
        steps_per_burst=settings.steps_per_burst, store_url=settings.store_url,
        run_dir=settings.run_dir, seed=settings.seed, shaping_scale=args.shaping_scale,
        train_flags=list(settings.train_flag),
    )  # fmt: skip
    try:
        results = run_loop(plan)
    except LoopError as error:
        print(f"koholint loop: {error}", file=sys.stderr)
        return 1
    print_table(results)
    return 0


def cmd_online(settings: Settings, args: argparse.Namespace) -> int:
    """--online: one run, judged and refitted while it trains (orchestrator.online)."""
    from orchestrator.online import OnlineLoop, OnlineLoopError, OnlinePlan, print_online

    train_flags = list(settings.train_flag)
    if args.shaping_scale is not None:
        train_flags.append(f"--shaping-scale={args.shaping_scale}")
    if args.bonus_coefficient is not None:
        train_flags.append(f"--reward-bonus-coefficient={args.bonus_coefficient}")
    plan = OnlinePlan(
        run=settings.name or time.strftime("online-%Y%m%d-%H%M%S"), steps=settings.steps,
        store_url=settings.store_url, run_dir=settings.run_dir, seed=settings.seed,
        mode=args.mode or "", refit_every=settings.refit_every,
        export_every=settings.export_every, train_flags=train_flags,
        evaluate_flags=list(settings.evaluate_flag),
    )  # fmt: skip
    try:
        result = OnlineLoop(plan).run()
    except OnlineLoopError as error:
        print(f"koholint loop --online: {error}", file=sys.stderr)
        return 1
    print_online(result)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    """Add `koholint loop` (found through the koholint.commands entry point)."""
    loop = commands.add_parser(
        "loop",
        help="train, evaluate, fit the reward model, train again with shaping; compare",
        description="Every setting: --flag > environment variable > default. --online: one "
        "run trains while its segments are judged and R_phi refitted.",
    )
    add_setting_flags(loop.add_argument_group("settings"), Settings,
                      short_flags={"store_url": ["--store"]})  # fmt: skip
    trainer = loop.add_argument_group(
        "the trainer's settings", "handed to every koholint train when given"
    )
    for name, (flag, kind, variable, text) in TRAINER_FLAGS.items():
        trainer.add_argument(*LOOP_FLAGS.get(name, []), flag, dest=name, type=kind, default=None,
                             metavar="VALUE", help=f"{text} ({variable}; default the trainer's)")  # fmt: skip
    loop.set_defaults(handler=cmd_loop)
