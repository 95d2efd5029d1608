"""`koholint train`: the trainer's command, added to the CLI through an entry point."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def cmd_train(args: argparse.Namespace) -> int:
    """Train on embedded defaults (or RAY_ADDRESS etc.); progress bar, summary, learning curve."""
    from trainer.ppo.config import TrainConfig, TrainConfigError
    from trainer.ppo.run import RunStatus, TrainingRun

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


def register(commands: argparse._SubParsersAction) -> None:
    """Add `koholint train` (the CLI finds this through the koholint.commands entry point)."""
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
