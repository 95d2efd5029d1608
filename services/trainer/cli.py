"""`koholint train`: the trainer's command, added to the CLI through an entry point.

Its flags are derived from the settings' models (trainer/ppo/config.py, trainer/config.py): a
field's docstring is its help, a flag beats the field's environment variable, which beats the
default.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from koholint import flags
from koholint.flags import set_path

# At import, not inside register(): an image without the trainer's dependencies then fails
# to load this module, and the CLI lists `train` as not installed instead of failing.
from trainer.config import Deployment
from trainer.ppo.config import TrainConfig, TrainConfigError, environment_variable

SHORT_FLAGS = {
    "total_env_steps": ["--steps"],
    "num_env_runners": ["--workers"],
    "envs_per_env_runner": ["--envs"],
    "resume_from": ["--resume"],
    "env.max_episode_steps": ["--episode-length"],
    "train_batch_size": ["--batch"],
    "minibatch_size": ["--minibatch"],
    "store_url": ["--store"],
    "reward.shaping_scale": ["--shaping-scale"],
    "curriculum.swarm_share": ["--swarm-share"],
}
"""Flags the README and the seed's users know, besides the generated --path-of-the-field."""
DEPLOYMENT = "deployment."
LEAVES = ("reward_weights",)
"""nested models set whole (as JSON), not field by field"""


def cmd_train(args: argparse.Namespace) -> int:
    """Train on embedded defaults; progress bar, summary, learning curve."""
    from trainer.ppo.run import TrainingRun

    run_flags: dict[str, Any] = {}
    deployment_flags: dict[str, Any] = {}
    for dest, value in vars(args).items():
        if dest.startswith(DEPLOYMENT):
            deployment_flags[dest.removeprefix(DEPLOYMENT)] = value
        elif dest.startswith("setting."):
            set_path(run_flags, dest.removeprefix("setting."), value)
    try:
        config = TrainConfig.load(run_flags, source="flag")
        deployment = Deployment(**deployment_flags)
        run = TrainingRun(config, deployment)
        run.preflight()
    except TrainConfigError as error:
        print(f"koholint train: {error}", file=sys.stderr)
        return 2
    log = Path(deployment.run_dir).resolve() / run.config.run / "ray-driver.log"
    try:
        with stderr_to(log), _stop_on_interrupt(run):
            explore_only = config.phase == "explore"
            total = config.explore.max_env_steps if explore_only else config.total_env_steps
            status = run.run(on_iteration=_progress(total))
    except KeyboardInterrupt:
        print(f"\nkoholint train: aborted; the last checkpoint stands (details: {log})",
              file=sys.stderr)  # fmt: skip
        return 130
    except TrainConfigError as error:
        print(f"\nkoholint train: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        print(f"\nkoholint train: the run failed: {error} (details: {log})", file=sys.stderr)
        return 1
    _summary(status, deployment.run_dir)
    return 0


@contextlib.contextmanager
def _stop_on_interrupt(run: Any) -> Iterator[None]:
    """The first Ctrl-C (SIGINT) stops the run after its iteration, with a checkpoint and the
    summary; a second one aborts at once."""

    def stop(signum: int, frame: Any) -> None:
        # on stdout, beside the progress bar: stderr goes to the run's log while Ray runs
        print("\nkoholint train: stopping after this iteration, with a checkpoint "
              "(Ctrl-C again to abort)", flush=True)  # fmt: skip
        run.stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def stderr_to(path: Path) -> Iterator[None]:
    """Send this process's stderr (file descriptor 2, where Ray's C++ core writes its log
    lines) to `path` while Ray runs, so nothing from Ray comes before the progress bar."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with path.open("ab") as log:
            os.dup2(log.fileno(), 2)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _progress(total: int) -> Any:
    shown = [-1]  # the env steps of the last evaluation printed (the status keeps the last 64)

    def progress(status: Any) -> None:
        steps = status.env_steps_in_all  # what the budget bounds
        bar = "#" * int(min(steps / total, 1.0) * 30)
        print(f"\r[{bar:<30}] {steps:>8}/{total} steps  {status.steps_per_second:6.0f}/s  "
              f"rooms {status.rooms_mean or 0:4.1f}  cells {status.cells_mean or 0:5.1f}  archive {status.archive_cells}"
              f"{_phase_progress(status)}", end="", flush=True)  # fmt: skip
        for evaluation in status.evaluations:  # under the bar, each on a line of its own
            if evaluation.env_steps > shown[0]:
                print(f"\n{_evaluation_line(evaluation)}", flush=True)
                shown[0] = evaluation.env_steps

    return progress


def _evaluation_line(evaluation: Any) -> str:
    low, high = evaluation.interval
    return (f"evaluation at {evaluation.env_steps} steps ({evaluation.total_env_steps} in all): "
            f"{evaluation.wins} of {evaluation.episodes} won from {evaluation.start}, "
            f"{evaluation.win_rate:.2f} ({low:.2f}-{high:.2f})")  # fmt: skip


def _phase_progress(status: Any) -> str:
    """Phase 1: the archive's best level; robustify: where episodes start on the demo."""
    if status.curriculum:
        position = status.curriculum
        walk = f"  pass {position['pass']:.0f}" if position.get("pass", 1) > 1 else ""
        later = (f"  later {position['later_success_rate']:.2f}"
                 if "later_success_rate" in position else "")  # fmt: skip
        return (f"  start {position['start_step']:.0f}/{position['demo_length']:.0f}"
                f"  wins there {position['success_rate']:.2f}{later}{walk}")  # fmt: skip
    if status.explore_milestones:
        return f"  level {status.archive_level}"
    return ""


def _summary(status: Any, run_dir: str) -> None:
    print(
        f"\nrun {status.run}: {status.state} after {status.env_steps} steps in {status.iterations} iterations"
    )

    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    print(f"  return {shown(status.episode_return_mean)}  rooms {shown(status.rooms_mean)}  "
          f"cells {shown(status.cells_mean)}  win rate {shown(status.win_rate)}  "
          f"archive cells {status.archive_cells}  checkpoints {status.checkpoints}")  # fmt: skip
    if status.evaluations:
        print(f"  last {_evaluation_line(status.evaluations[-1])}")
    print(f"  {_work_line(status)}")
    print(f"  learning curve: {Path(run_dir).resolve() / status.run / 'learning_curve.png'}")


def _work_line(status: Any) -> str:
    """The emulator's work in all: what the budget counts and the work beside it."""
    beside = "".join(f" + {name} {steps}" for name, steps in sorted(status.other_work.items()))
    return (f"emulator's work: {status.emulator_steps_in_all} steps in all "
            f"({status.env_steps_in_all} env steps{beside})")  # fmt: skip


def register(commands: argparse._SubParsersAction) -> None:
    """Add `koholint train` (the CLI finds this through the koholint.commands entry point)."""
    train = commands.add_parser(
        "train",
        help="train PPO on the cartridge (embedded defaults; RAY_ADDRESS joins a cluster)",
        description="Every setting: --flag > environment variable > default.",
    )
    add_setting_flags(train)
    train.set_defaults(handler=cmd_train)
    from trainer.policy_export import register as add_export_policy

    add_export_policy(commands)  # a checkpoint's small policy file, for `koholint play`


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per setting, derived from the models (``koholint.flags``): the run's (nested
    ones as --group-field), then the deployment's."""
    run = parser.add_argument_group("run settings (also the body of POST /v1/runs)")
    flags.add_setting_flags(run, TrainConfig, short_flags=SHORT_FLAGS, leaves=LEAVES)
    deployment = parser.add_argument_group("deployment (the service takes these from its settings)")
    for name, field in Deployment.model_fields.items():
        if flags.is_secret(field):  # from the environment alone, never on a command line
            continue
        variable = environment_variable(name) + (" or RAY_ADDRESS" if name == "ray_address" else "")
        flags.add_flag(deployment, name, f"{DEPLOYMENT}{name}", field, variable, field.default,
                       SHORT_FLAGS.get(name, ()), flags.description_at(Deployment, name))  # fmt: skip
