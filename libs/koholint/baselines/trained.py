"""A trained policy: the small policy file the trainer writes, and playing it in the env it
was trained in (``koholint play --policy checkpoint:PATH``).

A policy file is a folder with two files, written next to every trainer checkpoint (its
``policy/`` folder) or by ``koholint export-policy``:

- ``policy.json``: ``schema_version``, the env id and observation encoder it was trained on,
  the layer sizes, the env settings it was trained with (frame skip, sticky actions,
  episode length, reward mode, ... — the ROM left out), the planner of its hybrid control,
  where it came from (run, step, checkpoint) and the sha256 of the weights file.
- ``policy.npz``: the actor network only (``weight_<i>``, ``bias_<i>``, float32; tanh between
  layers, logits out) — no value network, no optimizer state.

Inference is numpy: no torch, no Ray. Actions are sampled from the logits as in training
(``greedy`` takes the most likely one instead).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from koholint import ENV_ID
from koholint.baselines.episode import PlayedEpisode
from koholint.baselines.settings import MAX_WORKERS
from koholint.env.encoding import ENCODINGS, encoder_version, encoding_size
from koholint.env.zelda import Action, EnvConfig, EnvConfigError, ZeldaEnv, progress_level
from koholint.game.states import STATE_NAMES
from koholint.trajectory.gif import write_gif

POLICY_STREAM = 1  # the second word of the policy's seed: its own stream (policy_rng)

POLICY_SCHEMA_VERSION = 1
POLICY_KIND = "koholint-policy"
POLICY_JSON = "policy.json"
POLICY_WEIGHTS = "policy.npz"
CHECKPOINT_POLICY_FOLDER = "policy"
"""The policy file's folder inside a trainer checkpoint."""
PLAY_PLANNERS = ("rules", "off")
"""Hybrid control that plays in-process: the rules backend, or none."""
MAX_LAYERS = 16
MAX_WIDTH = 4096
MAX_TRAJECTORY_ACTIONS = 1_000_000
GIF_EVERY = 3
"""An exported episode keeps every third screen (the phase-1 GIF's rate)."""
Z_95 = 1.959963984540054


class PolicyFileError(ValueError):
    """A policy path or play setting that cannot work; the message names it and the fix."""


# -- the policy file ---------------------------------------------------------------------
@dataclass(frozen=True)
class TrainedPolicy:
    """An actor network and the env settings it was trained with."""

    layers: list[tuple[np.ndarray, np.ndarray]]
    """(weight (out, in), bias (out,)) per layer; tanh between layers, logits out"""
    env: dict[str, Any]
    """EnvConfig fields as trained (no ROM)"""
    planner: str
    """hybrid control as trained: off, rules, local, llm-d or http"""
    source: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    def logits(self, observation: np.ndarray) -> np.ndarray:
        hidden = np.asarray(observation, np.float32)
        for weight, bias in self.layers[:-1]:
            hidden = np.tanh(weight @ hidden + bias)
        weight, bias = self.layers[-1]
        return weight @ hidden + bias  # type: ignore[no-any-return]

    def act(self, observation: np.ndarray, rng: np.random.Generator, greedy: bool = False) -> int:
        logits = self.logits(observation).astype(np.float64)
        if greedy:
            return int(np.argmax(logits))
        cumulative = np.cumsum(np.exp(logits - logits.max()))
        # What rng.choice(p=...) does, at a third of its cost per step.
        return int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))


def write_policy(
    folder: Path,
    layers: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    env: Mapping[str, Any],
    planner: str,
    source: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``policy.json`` and ``policy.npz`` into `folder`; returns the folder."""
    settings = {key: value for key, value in env.items() if key != "rom"}
    encoding = EnvConfig.parse(settings).observation
    _check_layers([(np.asarray(w), np.asarray(b)) for w, b in layers], "the layers given",
                  encoding_size(encoding))  # fmt: skip
    arrays: dict[str, np.ndarray] = {}
    for index, (weight, bias) in enumerate(layers):
        arrays[f"weight_{index}"] = np.asarray(weight, np.float32)
        arrays[f"bias_{index}"] = np.asarray(bias, np.float32)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    weights = buffer.getvalue()
    document = {
        "schema_version": POLICY_SCHEMA_VERSION, "kind": POLICY_KIND, "env_id": ENV_ID,
        "encoder_version": encoder_version(encoding), "observation_size": encoding_size(encoding),
        "actions": len(Action), "activation": "tanh",
        "layer_sizes": [int(np.shape(layers[0][0])[1])] + [int(np.shape(w)[0]) for w, _ in layers],
        "env": settings, "planner": planner, "source": dict(source or {}),
        "weights_sha256": hashlib.sha256(weights).hexdigest(),
    }  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    (folder / POLICY_WEIGHTS).write_bytes(weights)
    (folder / POLICY_JSON).write_text(json.dumps(document, indent=1) + "\n")
    return folder


def policy_json_path(path: Path) -> Path:
    """The policy.json a ``checkpoint:PATH`` names: the file, a policy folder, or a trainer
    checkpoint folder (its ``policy/``)."""
    if not path.exists():
        raise PolicyFileError(
            f"checkpoint:{path}: no such file or folder; give a trainer checkpoint folder "
            f"(<store>/checkpoints/<run>/<step>) or a policy folder with {POLICY_JSON}"
        )
    if path.is_file():
        return path
    for candidate in (path / POLICY_JSON, path / CHECKPOINT_POLICY_FOLDER / POLICY_JSON):
        if candidate.is_file():
            return candidate
    if (path / "rllib_checkpoint.json").is_file():
        raise PolicyFileError(
            f"checkpoint:{path} is a trainer checkpoint without a policy file (written before "
            f"checkpoints carried one): run `koholint export-policy {path} OUT` and play "
            "checkpoint:OUT"
        )
    raise PolicyFileError(
        f"checkpoint:{path} is not a checkpoint: it holds neither {POLICY_JSON} nor "
        f"{CHECKPOINT_POLICY_FOLDER}/{POLICY_JSON}; give a trainer checkpoint folder "
        "(<store>/checkpoints/<run>/<step>) or a folder written by `koholint export-policy`"
    )


def load_policy(path: Path) -> TrainedPolicy:
    """Read a policy file; refuse one made for another env, encoder or format."""
    document_path = policy_json_path(Path(path))
    try:
        document = json.loads(document_path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PolicyFileError(
            f"{document_path} is not a policy file ({error}); give a policy.json written by "
            "the trainer or `koholint export-policy`"
        ) from None
    if not isinstance(document, dict) or document.get("kind") != POLICY_KIND:
        raise PolicyFileError(
            f'{document_path} is not a policy file (no "kind": "{POLICY_KIND}"); give a '
            "policy.json written by the trainer or `koholint export-policy`"
        )
    _check_trained_here(document, document_path)
    layers = _read_weights(document_path.parent / POLICY_WEIGHTS, document)
    try:
        EnvConfig.parse(document["env"])
    except (EnvConfigError, TypeError) as error:
        raise PolicyFileError(f"{document_path}: its env settings are invalid: {error}") from None
    return TrainedPolicy(layers, dict(document["env"]), str(document["planner"]),
                         dict(document.get("source", {})), document_path.parent)  # fmt: skip


def _check_trained_here(document: dict[str, Any], path: Path) -> None:
    """The policy must have been trained on this env's id, observation layout and actions."""
    if document.get("schema_version") != POLICY_SCHEMA_VERSION:
        raise PolicyFileError(
            f"{path}: policy file schema_version {document.get('schema_version')!r}, this "
            f"koholint reads {POLICY_SCHEMA_VERSION}; export it again with `koholint export-policy`"
        )
    trained = (document.get("env_id"), document.get("encoder_version"),
               document.get("observation_size"), document.get("actions"))  # fmt: skip
    encoding = _encoding(document, path)
    here = (ENV_ID, encoder_version(encoding), encoding_size(encoding), len(Action))
    if trained != here:
        raise PolicyFileError(
            f"{path}: the policy was trained on another env config (env {trained[0]}, encoder "
            f"{trained[1]}, {trained[2]} observations, {trained[3]} actions); this env is "
            f"{here[0]}, encoder {here[1]}, {here[2]} observations, {here[3]} actions: retrain "
            "it on this env (koholint train), or play it with the koholint it was trained with"
        )


def _read_weights(path: Path, document: dict[str, Any]) -> list[tuple[np.ndarray, np.ndarray]]:
    if not path.is_file():
        raise PolicyFileError(
            f"{path}: missing; a policy folder holds {POLICY_JSON} and {POLICY_WEIGHTS}"
        )
    blob = path.read_bytes()
    if hashlib.sha256(blob).hexdigest() != document.get("weights_sha256"):
        raise PolicyFileError(
            f"{path}: its sha256 differs from policy.json's weights_sha256 (corrupt, or from "
            "another export): export the policy again"
        )
    with np.load(io.BytesIO(blob), allow_pickle=False) as arrays:
        count = len(arrays.files) // 2
        layers = [(arrays[f"weight_{i}"], arrays[f"bias_{i}"]) for i in range(count)]
    _check_layers(layers, str(path), int(document["observation_size"]))
    return layers


def _encoding(document: dict[str, Any], path: Path) -> str:
    """The observation encoding the policy's env settings name (older files: the default)."""
    env = document.get("env")
    encoding = env.get("observation", "observation") if isinstance(env, dict) else "observation"
    if encoding not in ENCODINGS:
        raise PolicyFileError(
            f"{path}: its env settings are invalid: observation={encoding!r}: use one of "
            f"{', '.join(ENCODINGS)}"
        )
    return str(encoding)


def _check_layers(layers: list[tuple[np.ndarray, np.ndarray]], where: str, inputs: int) -> None:
    """An MLP from the observation (`inputs` floats) to one logit per action, of a sane size."""
    if not 1 <= len(layers) <= MAX_LAYERS:
        raise PolicyFileError(f"{where}: {len(layers)} layers; a policy has 1..{MAX_LAYERS}")
    width = inputs
    for index, (weight, bias) in enumerate(layers):
        if weight.ndim != 2 or weight.shape[1] != width or bias.shape != (weight.shape[0],):
            raise PolicyFileError(
                f"{where}: layer {index} has weight {weight.shape} and bias {bias.shape}; "
                f"expected (out, {width}) and (out,)"
            )
        if weight.shape[0] > MAX_WIDTH:
            raise PolicyFileError(
                f"{where}: layer {index} is {weight.shape[0]} wide (max {MAX_WIDTH})"
            )
        width = weight.shape[0]
    if width != len(Action):
        raise PolicyFileError(
            f"{where}: the last layer gives {width} logits; this env has {len(Action)} actions"
        )


# -- starts ------------------------------------------------------------------------------
@dataclass(frozen=True)
class StartSpec:
    label: str
    """how results name it: start_of_play, power_on, demo-<file>@<step>"""
    state: str | bytes | None
    """a named state, state bytes, or None for power-on"""


def parse_start(text: str) -> StartSpec:
    """``start_of_play`` (or another named state), ``power-on``, or ``demo:<actions>@<step>``:
    the state `step` actions into a phase-1 trajectory (replayed as it was found)."""
    if text in ("power-on", "power_on"):
        return StartSpec("power_on", None)
    if text in STATE_NAMES:
        return StartSpec(text, text)
    if text.startswith("demo:"):
        path_text, _, step_text = text.removeprefix("demo:").rpartition("@")
        if not path_text or not step_text.isdigit():
            raise PolicyFileError(
                f"--start {text}: write demo:<trajectory.actions>@<step>, e.g. "
                "demo:benchmarks/results/win/explore-seed0.actions@960"
            )
        state = demo_state(Path(path_text), int(step_text))
        return StartSpec(f"demo-{Path(path_text).stem}@{step_text}", state)
    raise PolicyFileError(
        f"--start {text}: choose power-on, demo:<trajectory.actions>@<step> or a named state "
        f"({', '.join(STATE_NAMES)})"
    )


def demo_state(path: Path, step: int) -> bytes:
    """The emulator state after the first `step` actions of a phase-1 trajectory (``koholint
    explore``'s ``.actions``: one action per byte), replayed in the env it was found in."""
    from koholint.explore.runner import exploration_env

    if not path.is_file():
        raise PolicyFileError(
            f"--start demo:{path}@{step}: no such file; `koholint explore` writes one"
        )
    actions = path.read_bytes()
    if not 0 < len(actions) <= MAX_TRAJECTORY_ACTIONS or max(actions) >= len(Action):
        raise PolicyFileError(
            f"--start demo:{path}@{step}: not a trajectory of actions (one byte each, 0..{len(Action) - 1})"
        )
    if step > len(actions):
        raise PolicyFileError(
            f"--start demo:{path}@{step}: the trajectory has {len(actions)} actions; choose a step of 0..{len(actions)}"
        )
    env = exploration_env(start_state="start_of_play", max_episode_steps=2 * len(actions) + 2)
    zelda: ZeldaEnv = env.unwrapped  # type: ignore[assignment]
    try:
        env.reset(seed=0)
        for index, action in enumerate(actions[:step], start=1):
            _, _, terminated, _, _ = env.step(action)
            if terminated and index < step:
                raise PolicyFileError(
                    f"--start demo:{path}@{step}: the trajectory wins at step {index}; choose a step of 0..{index}"
                )
        return zelda.gameboy.save_state()
    finally:
        env.close()


# -- playing -----------------------------------------------------------------------------
@dataclass(frozen=True)
class PlaySettings:
    """How to play a policy; None keeps what it was trained with."""

    start: str = "start_of_play"
    episodes: int = 20
    seed: int = 0
    sticky: float | None = None
    planner: str | None = None
    max_steps: int | None = None
    greedy: bool = False
    export: Path | None = None
    workers: int = 1
    """processes playing episodes side by side (each episode's seed fixes it: same results)"""


@dataclass
class PlayReport:
    policy: str
    start: str
    sticky: float
    planner: str
    max_steps: int
    frame_skip: int
    greedy: bool
    episodes: list[PlayedEpisode] = field(default_factory=list)

    @property
    def wins(self) -> int:
        return sum(episode.won for episode in self.episodes)

    @property
    def win_rate(self) -> float:
        return self.wins / len(self.episodes) if self.episodes else 0.0

    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.wins, len(self.episodes))

    def summary(self) -> dict[str, Any]:
        low, high = self.interval()
        row = {key: value for key, value in asdict(self).items() if key != "episodes"}
        return {**row, "count": len(self.episodes), "wins": self.wins,
                "win_rate": self.win_rate, "interval_95": [round(low, 4), round(high, 4)],
                "episodes": [asdict(episode) for episode in self.episodes]}  # fmt: skip


def wilson_interval(wins: int, count: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a win rate (95% by default): sound at 0 and all wins."""
    if count <= 0:
        return 0.0, 1.0
    rate = wins / count
    denominator = 1 + z * z / count
    centre = (rate + z * z / (2 * count)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / count + z * z / (4 * count * count)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def play_env(
    policy: TrainedPolicy, settings: PlaySettings, start: StartSpec
) -> gym.Env[np.ndarray, Any]:
    """The env as the policy trained in, with the start and any setting overridden."""
    from koholint.env.factory import make_env

    overrides: dict[str, Any] = {"start_state": start.state, "info_state": False}
    if settings.sticky is not None:
        overrides["sticky_action_probability"] = settings.sticky
    if settings.max_steps is not None:
        overrides["max_episode_steps"] = settings.max_steps
    try:
        config = EnvConfig.parse({**policy.env, **overrides})
    except EnvConfigError as error:
        raise PolicyFileError(f"play settings: {error}") from None
    return make_env(config, planner=play_planner(policy, settings))


def play_planner(policy: TrainedPolicy, settings: PlaySettings) -> str:
    planner = settings.planner or policy.planner
    if planner not in PLAY_PLANNERS:
        raise PolicyFileError(
            f"the policy trained with planner={planner}, which needs a planner service or a "
            "language model; play it with --planner rules (the same switch and macros, "
            "deterministic rules) or --planner off"
        )
    return planner


def play_policy(
    policy: TrainedPolicy,
    settings: PlaySettings,
    on_episode: Callable[[PlayedEpisode], None] | None = None,
    on_start: Callable[[PlayReport], None] | None = None,
) -> PlayReport:
    """Play `settings.episodes` episodes (seeds seed, seed+1, ...) and count the wins;
    `on_start` sees the settings in force (an empty report) before the first episode."""
    if settings.episodes < 1:
        raise PolicyFileError(f"episodes={settings.episodes}: play at least one")
    if not 1 <= settings.workers <= MAX_WORKERS:
        raise PolicyFileError(f"workers={settings.workers}: use 1..{MAX_WORKERS} processes")
    start = parse_start(settings.start)
    env = play_env(policy, settings, start)
    zelda: ZeldaEnv = env.unwrapped  # type: ignore[assignment]
    report = PlayReport(
        policy=str(policy.path), start=start.label, sticky=zelda.config.sticky_action_probability,
        planner=play_planner(policy, settings), max_steps=zelda.config.max_episode_steps,
        frame_skip=zelda.config.frame_skip, greedy=settings.greedy,
    )  # fmt: skip
    if settings.export is not None:
        settings.export.mkdir(parents=True, exist_ok=True)
    if on_start:
        on_start(report)
    seeds = range(settings.seed, settings.seed + settings.episodes)
    if settings.workers > 1:
        env.close()  # each worker process builds its own
        played = _play_in_processes(policy, settings, start, seeds)
    else:
        played = (_play_episode(env, policy, seed, settings, start.label) for seed in seeds)
    try:
        for episode in played:
            report.episodes.append(episode)
            if on_episode:
                on_episode(episode)
    finally:
        env.close()
    if settings.export is not None:
        (settings.export / "play.json").write_text(json.dumps(report.summary(), indent=1) + "\n")
    return report


def _play_in_processes(
    policy: TrainedPolicy, settings: PlaySettings, start: StartSpec, seeds: range
) -> Iterator[PlayedEpisode]:
    """Episodes in `settings.workers` processes (one env each), yielded in seed order."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")  # no emulator state forked from here
    with ProcessPoolExecutor(settings.workers, mp_context=context, initializer=_start_worker,
                             initargs=(policy, settings, start)) as pool:  # fmt: skip
        yield from pool.map(_play_in_worker, seeds)


_worker: dict[str, Any] = {}
"""The worker process's env, policy, settings and start label (set by ``_start_worker``)."""


def _start_worker(policy: TrainedPolicy, settings: PlaySettings, start: StartSpec) -> None:
    from multiprocessing import util

    env = play_env(policy, settings, start)
    # Closed on the worker's way out: an emulator left to interpreter teardown prints errors.
    util.Finalize(None, env.close, exitpriority=100)
    _worker.update(env=env, policy=policy, settings=settings, label=start.label)


def _play_in_worker(seed: int) -> PlayedEpisode:
    return _play_episode(
        _worker["env"], _worker["policy"], seed, _worker["settings"], _worker["label"]
    )


def policy_rng(seed: int) -> np.random.Generator:
    """The policy's sampling stream for episode `seed`, independent of the env's:
    ``env.reset(seed=seed)`` seeds the env's own generator with `seed`, and both draw one number
    a step, so one shared stream would make the policy's draw equal the sticky-action draw every
    step (an action not repeated always had a draw >= p, and the actions in the lowest p of the
    policy's distribution were never played)."""
    return np.random.default_rng([seed, POLICY_STREAM])


def _play_episode(
    env: gym.Env[np.ndarray, Any],
    policy: TrainedPolicy,
    seed: int,
    settings: PlaySettings,
    label: str,
) -> PlayedEpisode:
    zelda: ZeldaEnv = env.unwrapped  # type: ignore[assignment]
    rng = policy_rng(seed)
    started = time.perf_counter()
    observation, info = env.reset(seed=seed)
    screens = [zelda.gameboy.render_now()] if settings.export else []
    total, steps, terminated, truncated = 0.0, 0, False, False
    while not (terminated or truncated):
        action = policy.act(observation, rng, settings.greedy)
        observation, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        steps += 1
        if settings.export and (steps % GIF_EVERY == 0 or terminated or truncated):
            screens.append(zelda.gameboy.render_now())
    gif = None
    if settings.export is not None:
        target = (
            settings.export
            / f"{label.replace('@', '-')}-seed{seed}-{'won' if terminated else 'lost'}.gif"
        )
        write_gif(screens, target, every=GIF_EVERY, frame_skip=zelda.config.frame_skip)
        gif = str(target)
    raw = zelda.raw_state
    return PlayedEpisode(
        policy=str(policy.path), start=label, seed=seed, won=bool(terminated), steps=steps,
        level=progress_level(raw), rooms=int(info["rooms"]), cells=int(info["cells"]),
        episode_return=total, frames=int(info["frame"]), kills=int(raw.kills), deaths=int(raw.deaths),
        milestones=dict(info.get("milestones", {})), seconds=time.perf_counter() - started, gif=gif,
    )  # fmt: skip
