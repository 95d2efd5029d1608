"""The small policy file (``koholint.baselines.trained``) from a trainer checkpoint.

Every checkpoint the trainer saves carries one in its ``policy/`` folder (run.py writes it
from the checkpoint it just saved), so ``koholint play --policy checkpoint:FOLDER`` plays it
without RLlib or Ray. ``koholint export-policy CHECKPOINT OUT`` writes one from any
checkpoint, older ones included: from a folder, a checkpoint name in the store's ledger, or
a run name (its latest checkpoint).

What it reads from the checkpoint: the RLModule's state (RLlib pickles it as numpy arrays:
``encoder.actor_encoder.net.mlp.<i>`` and ``pi.net.mlp.<i>``; the value network is left out)
and the run's settings (``koholint_run.json``'s ``config``, or for checkpoints saved before
it held them, the TrainConfig inside RLlib's pickled algorithm config).
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from koholint import ENV_ID
from koholint.baselines.trained import PolicyFileError, write_policy
from koholint.env.encoding import encoding_size
from koholint.env.zelda import Action
from koholint.game.rom import InvalidRomError, default_rom, read_rom, resolve_rom
from koholint.schemas.trainer import CHECKPOINT_NAME_PATTERN
from koholint.store import StoreError, open_store
from trainer.ledger import (
    RUN_STATE_FILE,
    CheckpointLedger,
    UnknownCheckpointError,
    checkpoint_owner,
)

MODULE_STATE = Path("learner_group/learner/rl_module/default_policy/module_state.pkl")
ALGORITHM_ARGUMENTS = "class_and_ctor_args.pkl"
_ACTOR_PREFIXES = ("encoder.actor_encoder.net.mlp.", "pi.net.mlp.")


class ExportError(ValueError):
    """A checkpoint the policy file cannot be made from; the message names why and the fix."""


def export_policy(
    checkpoint: Path,
    out: Path,
    config: Mapping[str, Any] | None = None,
    env_steps: int | None = None,
) -> Path:
    """Write the policy file of the checkpoint folder `checkpoint` into `out`."""
    state = _module_state(checkpoint)
    config = dict(config) if config is not None else trained_config(checkpoint)
    if env_steps is None:
        curve = _run_state(checkpoint).get("curve") or [{}]
        env_steps = curve[-1].get("env_steps")
    return policy_from_state(state, out, config, env_steps, where=f"checkpoint {checkpoint}",
                             checkpoint_name=checkpoint.name)  # fmt: skip


def policy_from_state(
    state: Mapping[str, Any],
    out: Path,
    config: Mapping[str, Any],
    env_steps: int | None,
    *,
    where: str,
    checkpoint_name: str = "",
    extra_source: Mapping[str, Any] | None = None,
) -> Path:
    """Write the policy file of a module state (`where` names it in errors) into `out`, with
    the run's settings `config` and `extra_source` in its metadata."""
    layers = actor_layers(state)
    inputs, outputs = layers[0][0].shape[1], layers[-1][0].shape[0]
    env = {key: value for key, value in config["env"].items() if key != "rom"}
    size = encoding_size(env.get("observation", "observation"))
    if (inputs, outputs) != (size, len(Action)):
        raise ExportError(
            f"{where}: its policy takes {inputs} observations and gives {outputs} "
            f"actions; {ENV_ID} with its run's env settings has {size} and {len(Action)}: it "
            "was trained on another env config; retrain it on this env (koholint train)"
        )
    run = config.get("run", "")
    source = {
        "run": run, "env_steps": env_steps,
        "checkpoint": f"{run}-step{env_steps:012d}" if run and env_steps is not None else checkpoint_name,
        "phase": config.get("phase", "train"), "hidden_sizes": config.get("hidden_sizes"),
        "curriculum_trajectory": _nested(config, "curriculum", "trajectory", ""),
        "sil_weight": _nested(config, "sil", "weight", 0.0), "seed": config.get("seed", 0),
        "world_sha256": _world_sha256(str(config.get("rom") or "")), **(extra_source or {}),
    }  # fmt: skip
    try:
        return write_policy(
            out, layers, env=env, planner=config.get("planner", "off"), source=source
        )
    except PolicyFileError as error:
        raise ExportError(f"{where}: {error}") from None


def _world_sha256(rom: str) -> str | None:
    """The sha256 of the world a run played (its rom, or the process's world); None when the
    file is no longer there."""
    try:
        return read_rom(resolve_rom(rom) if rom else default_rom()).sha256
    except InvalidRomError:
        return None


def _nested(config: Mapping[str, Any], group: str, name: str, default: Any) -> Any:
    """A run's nested setting; checkpoints written before settings were nested have it flat."""
    if isinstance(config.get(group), Mapping):
        return config[group].get(name, default)
    return config.get(f"{group}_{name}", default)


def _module_state(checkpoint: Path) -> Mapping[str, Any]:
    path = checkpoint / MODULE_STATE
    if not path.is_file():
        raise ExportError(
            f"{checkpoint} is not a trainer checkpoint (no {MODULE_STATE}); give a folder "
            "<store>/checkpoints/<run>/<step>, a checkpoint name (<run>-step<12 digits>) or a run"
        )
    with path.open("rb") as file:
        state = pickle.load(file)  # RLlib's own format for the module's arrays
    if not isinstance(state, Mapping):
        raise ExportError(
            f"{path}: expected the module's named arrays, found {type(state).__name__}"
        )
    return state


def actor_layers(state: Mapping[str, Any]) -> list[tuple[np.ndarray, np.ndarray]]:
    """The policy network's (weight, bias) layers, input first: the actor encoder, then pi."""
    layers = []
    for prefix in _ACTOR_PREFIXES:
        indices = sorted(
            int(match.group(1))
            for key in state
            if (match := re.fullmatch(re.escape(prefix) + r"(\d+)\.weight", key))
        )
        for index in indices:
            weight, bias = state[f"{prefix}{index}.weight"], state.get(f"{prefix}{index}.bias")
            if bias is None:
                raise ExportError(f"module state: {prefix}{index} has a weight and no bias")
            layers.append((np.asarray(weight, np.float32), np.asarray(bias, np.float32)))
    if not any(key.startswith(_ACTOR_PREFIXES[1]) for key in state):
        raise ExportError(
            "module state: no policy head (pi.net.mlp.*): not a PPO module of this trainer "
            "(separate actor and critic, fully connected)"
        )
    return layers


def trained_config(checkpoint: Path) -> dict[str, Any]:
    """The run's settings as JSON: from koholint_run.json, else from RLlib's algorithm config."""
    state = _run_state(checkpoint)
    if "config" in state:
        return dict(state["config"])
    path = checkpoint / ALGORITHM_ARGUMENTS
    if not path.is_file():
        raise ExportError(
            f"{checkpoint}: neither a run state with its config nor {ALGORITHM_ARGUMENTS}"
        )
    with path.open("rb") as file:
        arguments = pickle.load(file)
    try:
        algorithm_config = arguments["ctor_args_and_kwargs"][0][0]
        wrap = algorithm_config["env_config"]["wrap"]
        return wrap.args[0].model_dump(mode="json")  # type: ignore[no-any-return]
    except (KeyError, IndexError, TypeError, AttributeError) as error:
        raise ExportError(
            f"{path}: no trainer settings found in RLlib's algorithm config ({error!r}); "
            "was it saved by `koholint train`?"
        ) from None


def _run_state(checkpoint: Path) -> dict[str, Any]:
    saved = checkpoint / RUN_STATE_FILE
    return dict(json.loads(saved.read_text())) if saved.is_file() else {}


def checkpoint_folder(name: str, store_url: str, scratch: Path) -> Path:
    """A checkpoint folder from a path, a checkpoint name in the store, or a run (its latest)."""
    if Path(name).exists():
        return Path(name)
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", name):
        raise ExportError(f"{name}: no such folder, and not a checkpoint or run name")
    try:
        is_checkpoint = re.fullmatch(CHECKPOINT_NAME_PATTERN, name) is not None
        ledger = CheckpointLedger(
            open_store(store_url), checkpoint_owner(name) if is_checkpoint else name
        )
        if is_checkpoint:
            record = ledger.get(name)
        elif ledger.records:
            record = max(ledger.records, key=lambda item: item.step)
        else:
            raise ExportError(
                f"{name}: no such folder, and run {name} has no checkpoints in {store_url} (--store)"
            )
        return ledger.download(record, scratch)
    except (UnknownCheckpointError, StoreError) as error:
        raise ExportError(f"{name}: {error}") from None


def cmd_export_policy(args: argparse.Namespace) -> int:
    """Write a checkpoint's policy file; print where and what it holds."""
    try:
        with tempfile.TemporaryDirectory() as scratch:
            folder = checkpoint_folder(args.checkpoint, args.store, Path(scratch))
            out = export_policy(folder, Path(args.out))
    except ExportError as error:
        print(f"koholint export-policy: {error}", file=sys.stderr)
        return 2
    document = json.loads((out / "policy.json").read_text())
    print(f"wrote {out}/policy.json and policy.npz: layers {document['layer_sizes']}, "
          f"planner {document['planner']}, sticky {document['env']['sticky_action_probability']}, "
          f"{document['env']['max_episode_steps']}-step episodes")  # fmt: skip
    print(f"play it: koholint play --policy checkpoint:{out} --start start_of_play --episodes 20")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    """Add `koholint export-policy` (registered with `koholint train`, trainer/cli.py)."""
    export = commands.add_parser(
        "export-policy",
        help="write a checkpoint's small policy file (weights + env settings) for koholint play",
    )
    export.add_argument("checkpoint", help="a checkpoint folder, a checkpoint name "
                        "(<run>-step<12 digits>) or a run name (its latest checkpoint)")  # fmt: skip
    export.add_argument("out", help="folder to write policy.json and policy.npz into")
    export.add_argument("--store", default="runs/store",
                        help="object store holding named checkpoints (default runs/store)")  # fmt: skip
    export.set_defaults(handler=cmd_export_policy)
