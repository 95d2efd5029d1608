"""The trainer's settings, one path: defaults < environment < command-line flags or request body.

``TrainConfig`` is what a run chooses. Each field is one line and its docstring, which is its
``koholint train`` flag's help (the flags are generated, trainer/cli.py), its OpenAPI
description and the name of its environment variable (``KOHOLINT_TRAINER_<FIELD>``). The
env's settings travel as one nested object, ``env``, validated once, by the environment
itself (``koholint.env.zelda.EnvConfig``). ``Deployment`` is what only the operator chooses
(store, run folder, Ray, Redis, the planner's URL): the service's Settings or the CLI's flags,
never a request body.

    config = resolve({"total_env_steps": 5000}, os.environ)
"""

from __future__ import annotations

import dataclasses
import json
import os
import typing
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from pydantic._internal._docs_extraction import extract_docstrings_from_cls

from koholint.env.zelda import EnvConfig
from koholint.game.states import STATE_NAMES
from koholint.schemas.trainer import CHECKPOINT_NAME_PATTERN, RUN_NAME_PATTERN

ENVIRONMENT_PREFIX = "KOHOLINT_TRAINER_"
ENVIRONMENT_ALIASES = {
    "RAY_WORKERS": "num_env_runners",
    "ENVS_PER_WORKER": "envs_per_env_runner",
    "EPISODE_LENGTH": "env.max_episode_steps",
    "BATCH_SIZE": "train_batch_size",
}
"""The seed's variable names, kept (documented in docs/trainer.md); the prefixed name wins."""
MAX_ENV_STEPS = 10**10
TRAIN_ENV_DEFAULTS: dict[str, Any] = {
    "sticky_action_probability": 0.25,
    "max_episode_steps": 1024,
    "info_state": False,  # nothing in the trainer reads it; building it costs per step
}
"""Where the trainer's env differs from the env's own defaults."""
OPERATOR_ENV_SETTINGS = {
    "rom": "the ROM is the operator's: set KOHOLINT_ROM where the trainer runs"
}


class TrainConfigError(ValueError):
    """A setting that cannot work; the message names it (and where it came from) and the fix."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


def _env_with_trainer_defaults(value: Any) -> Any:
    """The env object as given, over the trainer's env defaults; unknown keys refused."""
    if isinstance(value, EnvConfig):
        return value
    if not isinstance(value, Mapping):
        raise ValueError("env must be an object of koholint/Zelda-v1 settings")
    for key, why in OPERATOR_ENV_SETTINGS.items():
        if key in value:
            raise ValueError(f"{key}: {why}")
    known = {field.name for field in dataclasses.fields(EnvConfig)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise ValueError(
            f"unknown env settings {unknown}; known: {sorted(known - set(OPERATOR_ENV_SETTINGS))}"
        )
    start = value.get("start_state", "start_of_play")
    if start is not None and start not in STATE_NAMES:
        raise ValueError(
            f"start_state={start!r}: use a named state ({', '.join(STATE_NAMES)}) or null"
        )
    return {**TRAIN_ENV_DEFAULTS, **value}


def _validated_by_env(config: EnvConfig) -> EnvConfig:
    config.validate()  # EnvConfigError is a ValueError: pydantic reports it under `env`
    return config


def _env_json_schema() -> dict[str, Any]:
    """The env object's schema, from EnvConfig's fields and docstrings (start_state: a name)."""
    docs = extract_docstrings_from_cls(EnvConfig, use_inspect=True)
    hints = typing.get_type_hints(EnvConfig)
    properties: dict[str, Any] = {}
    for name in (field.name for field in dataclasses.fields(EnvConfig)):
        if name in OPERATOR_ENV_SETTINGS:
            continue
        if name == "start_state":
            schema: dict[str, Any] = {"anyOf": [{"enum": list(STATE_NAMES)}, {"type": "null"}]}
        else:
            schema = TypeAdapter(hints[name]).json_schema()
        schema.pop("default", None)
        properties[name] = {**schema, "description": docs.get(name, "")}
    return {
        "type": "object",
        "title": "EnvSettings",
        "description": "koholint/Zelda-v1 settings (koholint.env.zelda.EnvConfig), over the trainer's "
        f"defaults {TRAIN_ENV_DEFAULTS}",
        "properties": properties,
        "additionalProperties": False,
    }


TrainEnv = Annotated[
    EnvConfig,
    BeforeValidator(_env_with_trainer_defaults),
    AfterValidator(_validated_by_env),
    WithJsonSchema(_env_json_schema()),  # EnvConfig allows callables, which have no schema
]


def default_env() -> EnvConfig:
    return EnvConfig.from_mapping(TRAIN_ENV_DEFAULTS)


class TrainConfig(BaseModel):
    """A training run's settings; `koholint train` and POST /v1/runs take the same fields."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    run: str = Field("", pattern=rf"^$|{RUN_NAME_PATTERN}")
    """run name; empty picks a unique one from the time"""
    total_env_steps: int = Field(20_000, ge=1, le=MAX_ENV_STEPS)
    """stop after this many environment steps (counted across resumes)"""
    num_env_runners: int = Field(2, ge=0, le=64)
    """Ray env-runner processes sampling in parallel (0 = sample in the driver); two on two
    cores samples 1.5x faster than one (the driver learns while they wait)"""
    envs_per_env_runner: int = Field(4, ge=1, le=64)
    """environments stepped by each runner (several per runner share RLlib's per-step
    overhead: 8 in one runner step 1.5x the rate of 2)"""
    rollout_fragment_length: int = Field(0, ge=0, le=1_000_000)
    """steps each env contributes per sample; 0 = the batch split evenly over all envs"""
    train_batch_size: int = Field(1024, ge=1, le=1_000_000)
    """steps per PPO update"""
    minibatch_size: int = Field(256, ge=1, le=1_000_000)
    """steps per SGD minibatch (at most train_batch_size)"""
    num_epochs: int = Field(4, ge=1, le=100)
    """passes over each batch"""
    learning_rate: float = Field(3e-4, gt=0, le=1)
    """Adam step size"""
    gamma: float = Field(0.99, gt=0, le=1)
    """discount"""
    entropy_coeff: float = Field(0.01, ge=0, le=10)
    """entropy bonus, keeps the policy exploring"""
    hidden_sizes: list[Annotated[int, Field(ge=1, le=4096)]] = Field(
        [64, 64], min_length=1, max_length=8
    )
    """hidden layers of the policy and of the value network (separate, tanh); SB3's
    MlpPolicy default — RLlib's own default (256, 256) costs ~3x per update here"""
    lean_sampling: bool = True
    """sample through the trainer's own connectors (trainer/ppo/sampling.py) instead of
    RLlib's general ones: same data, ~1.5x the env steps/s"""
    overlap_sampling: bool = False
    """env runners sample the next batch while the learner updates on this one (one update
    of policy lag, learned as decoupled PPO, trainer/ppo/overlap.py): ~10% more env steps/s
    with every feature on 2 cores, but the robustify curriculum learned slower per step
    (docs/trainer.md); without env runners (0) PPO samples as usual"""
    env: TrainEnv = Field(default_factory=default_env)
    """the environment's settings (koholint/Zelda-v1: frame_skip, max_episode_steps,
    reward_mode, start_state, ...), validated by the environment"""
    curiosity_weight: float = Field(1.0, ge=0, le=1000)
    """RND weight before the 30% budget; 0 turns curiosity off"""
    archive_restart_every: int = Field(4, ge=0, le=1_000_000)
    """every K-th episode of an env starts from a frontier cell of the archive (0 = no archive)"""
    export_every_episodes: int = Field(20, ge=0, le=1_000_000)
    """every N-th episode of an env is exported as segments (0 = never)"""
    segment_steps: int = Field(256, ge=1, le=100_000)
    """steps per exported segment"""
    checkpoint_every_iterations: int = Field(5, ge=1, le=1_000_000)
    """save a checkpoint every this many training iterations (and at the end)"""
    seed: int = Field(0, ge=0, le=2**31 - 1)
    """seeds the envs and the policy"""
    resume_from: str = Field("", pattern=rf"^$|{CHECKPOINT_NAME_PATTERN}")
    """a checkpoint name from a ledger (<run>-step<12 digits>) to continue from; without a
    run name, the run that owns the checkpoint continues"""
    planner: Literal["off", "rules", "local", "llm-d", "http"] = "off"
    """hybrid control in dialog and puzzle: off, rules, local, llm-d (in-process backends,
    at the deployment's planner_url) or http (the planner service at planner_url)"""
    reward_model: str = Field("", pattern=r"^(|latest|rm-[0-9]{8}-[0-9]{6}-[0-9a-f]{6})$")
    """reward-model shaping: empty = off, latest = each newly published version (loaded
    between iterations, used from each env's next episode), or one version (rm-...)"""
    shaping_scale: float = Field(0.1, ge=0, le=100)
    """Phi = scale * R_phi (normalised by its training std); F = gamma * Phi(s') - Phi(s)"""
    sil_weight: float = Field(0.0, ge=0, le=100)
    """self-imitation loss weight in the PPO learner (0 = off)"""
    sil_capacity: int = Field(16, ge=1, le=100_000)
    """self-imitation: the K best segments (by return) kept"""
    sil_period: int = Field(1, ge=1, le=1000)
    """self-imitation: add its loss every this many learner updates"""
    phase: Literal["train", "explore", "robustify", "both"] = "train"
    """train: PPO as configured; explore: Go-Explore phase 1 only (no policy: koholint.explore)
    until the game is won, keeping win.actions in the run folder; robustify: PPO whose
    episodes start on curriculum_trajectory, moving earlier as they win (the archive's
    restarts are off); both: explore, then robustify over the win found"""
    explore_env_steps: int = Field(2_000_000, ge=1, le=MAX_ENV_STEPS)
    """phase 1's step budget over its worker processes (one per env runner, at least one)"""
    curriculum_trajectory: str = Field("", max_length=4096)
    """robustify: the winning actions, one byte each (win.actions from koholint explore)"""
    curriculum_threshold: float = Field(0.2, gt=0, le=1)
    """robustify: the start moves earlier when this share of its last 20 episodes won"""
    curriculum_move_by: int = Field(16, ge=1, le=1_000_000)
    """robustify: steps of the trajectory the start moves earlier each time"""
    swarm_share: float = Field(0.0, ge=0, lt=1)
    """robustify: share of episodes that start at the best progress level any env reached"""
    curriculum_passes: int = Field(1, ge=1, le=100)
    """robustify: walks of the route from the end; a new one starts when the policy wins from
    the beginning (threshold), until this many were made"""
    curriculum_review_share: float = Field(0.0, ge=0, lt=1)
    """robustify: share of episodes that start at a random trajectory state later than the
    current start (the route already learned, practised again so it is not forgotten)"""
    curriculum_time_factor: float = Field(2.0, gt=0, le=100)
    """robustify: an episode from demo step s may take this times (length - s), plus 64, steps"""
    curriculum_end_on_death: bool = True
    """robustify: an episode ends when Link passes out (he respawns outside the dungeon)"""
    sil_demo: bool = True
    """robustify: the winning trajectory's steps are pinned in the self-imitation buffer
    (needs sil_weight > 0)"""

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_not_booleans(cls, value: Any, info: ValidationInfo) -> Any:
        """JSON's true is not 1: pydantic's lax mode would take it for a count or a rate."""
        annotation = cls.model_fields[info.field_name or ""].annotation
        if isinstance(value, bool) and annotation in (int, float):
            raise ValueError(f"expected a number, got {str(value).lower()}")
        return value

    def fragment_length(self) -> int:
        """Steps per env per sample: the configured length, or the batch over all envs."""
        if self.rollout_fragment_length:
            return self.rollout_fragment_length
        envs = max(self.num_env_runners, 1) * self.envs_per_env_runner
        return max(1, -(-self.train_batch_size // envs))

    def check(self) -> None:
        """Rules across fields (after every layer is applied, so no layer is judged alone)."""
        if self.phase == "robustify" and not self.curriculum_trajectory:
            raise TrainConfigError(
                "phase=robustify needs curriculum_trajectory: the win.actions that "
                "`koholint explore` (or phase=explore) wrote; or use phase=both",
                "curriculum_trajectory",
            )
        if self.train_batch_size < self.minibatch_size:
            raise TrainConfigError(
                f"train_batch_size={self.train_batch_size} is smaller than minibatch_size="
                f"{self.minibatch_size}: raise train_batch_size or lower minibatch_size",
                "train_batch_size",
            )


class Deployment(BaseModel):
    """Where a run keeps its files and finds its services: the operator's choice."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    store_url: str = "runs/store"
    """object store: a path, file:// or s3:// (episodes, archive, checkpoints)"""
    run_dir: str = "runs"
    """local folder for Ray's files, the learning curve and logs (one folder per run)"""
    redis_url: str = ""
    """Redis for the koholint.segments stream; empty = no bus"""
    ray_address: str = ""
    """join this Ray cluster (KubeRay); empty starts Ray locally, on loopback"""
    planner_url: str = ""
    """the planner service (planner=http) or the language-model base URL (local, llm-d)"""


# -- the layers ---------------------------------------------------------------------------
def environment_layer(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings set in the environment, and for each (dotted) field its variable's name."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    named = dict(ENVIRONMENT_ALIASES)
    named.update({environment_variable(path): path for path in field_paths()})  # prefixed win
    for variable, path in named.items():
        raw = environ.get(variable)
        if raw:
            set_path(values, path, parse_text(raw))
            sources[path] = variable
    return values, sources


def field_paths() -> list[str]:
    """Every setting as a dotted path: the run's fields, then env.<field> for the env's."""
    env_fields = [
        f"env.{f.name}"
        for f in dataclasses.fields(EnvConfig)
        if f.name not in OPERATOR_ENV_SETTINGS
    ]
    return [name for name in TrainConfig.model_fields if name != "env"] + env_fields


def environment_variable(path: str) -> str:
    """KOHOLINT_TRAINER_TOTAL_ENV_STEPS; KOHOLINT_TRAINER_ENV__FRAME_SKIP for env.frame_skip."""
    return ENVIRONMENT_PREFIX + path.replace(".", "__").upper()


def parse_text(raw: str) -> Any:
    """A value from the environment or a flag: JSON for lists and objects, else the text
    (pydantic turns "5" into 5 and "false" into False where the field says so)."""
    if raw[:1] in "[{":
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return None if raw == "null" else raw


def set_path(values: dict[str, Any], path: str, value: Any) -> None:
    head, _, rest = path.partition(".")
    if rest:
        set_path(values.setdefault(head, {}), rest, value)
    else:
        values[head] = value


def layered(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Later layers win, field by field; the env object merges key by key."""
    merged: dict[str, Any] = {}
    for layer in layers:
        for name, value in layer.items():
            if (
                name == "env"
                and isinstance(value, Mapping)
                and isinstance(merged.get("env"), Mapping)
            ):
                merged["env"] = {**merged["env"], **value}
            else:
                merged[name] = value
    return merged


def resolve(
    overrides: Mapping[str, Any], environ: Mapping[str, str] | None = None, source: str = "flag"
) -> TrainConfig:
    """Defaults < the environment's KOHOLINT_TRAINER_* (and aliases) < `overrides`."""
    from_environment, variables = environment_layer(os.environ if environ is None else environ)
    try:
        config = TrainConfig.model_validate(layered(from_environment, overrides))
    except ValidationError as error:
        raise config_error(error, variables, source) from None
    config.check()
    return config


def config_error(
    error: ValidationError, variables: Mapping[str, str], source: str
) -> TrainConfigError:
    """The first problem, naming the field and where its value came from."""
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    origin = variables.get(field, source)
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden" and field in Deployment.model_fields:
        message = "a deployment setting: the operator's (the service's settings or the CLI's flags)"
    return TrainConfigError(f"{field} ({origin}): {message}", field)
