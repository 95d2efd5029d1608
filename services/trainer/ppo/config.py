"""What a training run chooses, declared once: defaults < environment < flags or request body.

``TrainConfig`` is a pydantic ``BaseSettings``: each field is one line with its bound and its
docstring, and everything else is derived from it — the ``koholint train`` flags and their
help (trainer/cli.py), the body and OpenAPI schema of ``POST /v1/runs``, and the environment
variables ``KOHOLINT_TRAINER_<FIELD>``, with ``__`` into the nested objects ``env`` (the
game: ``koholint.schemas.env.EnvSettings``), ``explore``, ``curriculum``, ``imitation``, ``sil``
and ``reward``
(``KOHOLINT_TRAINER_ENV__FRAME_SKIP=8``). The seed's variable names (``RAY_WORKERS``,
``ENVS_PER_WORKER``, ``EPISODE_LENGTH``, ``BATCH_SIZE``) still work; the prefixed name wins.
Where a run keeps its files and finds its services is the operator's (``trainer.config``).

    config = TrainConfig.load({"total_env_steps": 5000, "curriculum": {"threshold": 0.1}})
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from importlib import resources
from itertools import combinations
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from koholint import flags
from koholint.explore.curriculum import CurriculumSettings
from koholint.explore.settings import ExploreSettings
from koholint.imitation import ImitationSettings
from koholint.schemas.env import EnvSettings, WorldSetting
from koholint.schemas.fields import JsonFloat, JsonInt, Seed, number_not_text
from koholint.schemas.reward_model import VERSION_PATTERN
from koholint.schemas.trainer import CHECKPOINT_NAME_PATTERN, RUN_NAME_PATTERN
from trainer.config import Deployment

ENVIRONMENT_PREFIX = "KOHOLINT_TRAINER_"
NESTING = "__"
ENVIRONMENT_ALIASES = {
    "RAY_WORKERS": "KOHOLINT_TRAINER_NUM_ENV_RUNNERS",
    "ENVS_PER_WORKER": "KOHOLINT_TRAINER_ENVS_PER_ENV_RUNNER",
    "EPISODE_LENGTH": "KOHOLINT_TRAINER_ENV__MAX_EPISODE_STEPS",
    "BATCH_SIZE": "KOHOLINT_TRAINER_TRAIN_BATCH_SIZE",
    "KOHOLINT_ROM": "KOHOLINT_TRAINER_ROM",
}
"""The seed's variable names, kept (documented in docs/trainer.md); the prefixed name wins."""
MAX_ENV_STEPS = 10**10
# Constraints before the validator, so that the schema states them as limits.
LayerWidth = Annotated[int, Field(ge=1, le=4096), BeforeValidator(number_not_text)]
TRAIN_ENV_DEFAULTS: dict[str, Any] = {"sticky_action_probability": 0.25, "max_episode_steps": 1024}
"""Where the trainer's game differs from the env's own defaults (under what a run sets)."""
RECIPES = "recipes"
"""The trainer's recipe files (TOML, package data of ``trainer``): each a layer of settings."""


def read_recipe(name: str) -> dict[str, Any]:
    """The settings of recipe `name` (``trainer/recipes/<name>.toml``)."""
    with (resources.files("trainer") / RECIPES / f"{name}.toml").open("rb") as file:
        return tomllib.load(file)


PHASE_TWO_RECIPE = read_recipe("phase-two")
"""What phase=robustify and phase=both train with where no layer above sets it
(``trainer/recipes/phase-two.toml``, which says what each part is)."""


class TrainConfigError(ValueError):
    """A setting that cannot work; the message names it (and where it came from) and the fix."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class Curriculum(CurriculumSettings):
    """Robustify (phase 2): episodes start on the winning trajectory, moving earlier as they win."""

    trajectory: str = Field("", max_length=4096)
    """the winning actions, one byte each (win.actions from koholint explore)"""
    end_on_death: StrictBool = True
    """an episode ends when Link passes out (he respawns outside the dungeon)"""
    fit_episodes: StrictBool = True
    """episodes, and the evaluations', may take time_factor x the trajectory's length + 64
    steps where env.max_episode_steps allows fewer: a world with a longer route than the
    recipe's episodes were set for is given the time its curriculum gives its first step"""


class SelfImitation(_Group):
    """Self-imitation learning: a loss toward the best segments' actions, inside the learner."""

    weight: JsonFloat = Field(0.0, ge=0, le=100)
    """the loss weight in the PPO learner (0 = off)"""
    capacity: JsonInt = Field(16, ge=1, le=100_000)
    """the K best segments (by return) kept"""
    period: JsonInt = Field(1, ge=1, le=1000)
    """add its loss every this many learner updates"""
    demo: StrictBool = True
    """robustify: the winning trajectory's steps are pinned in the buffer (needs weight > 0)"""


class RewardModelShaping(_Group):
    """The judges' reward model R_phi in the reward: a potential, F = gamma * Phi(s') - Phi(s),
    or an intrinsic bonus (Motif/ONI); docs/reward-model.md."""

    model: str = Field("", pattern=rf"^$|^latest$|{VERSION_PATTERN}")
    """empty = off, latest = each newly published version (loaded between iterations, used
    from each env's next episode), or one version (rm-...)"""
    mode: Literal["potential", "bonus"] = "potential"
    """potential: F = gamma * Phi(s') - Phi(s) with Phi = shaping_scale * R_phi; bonus:
    bonus_coefficient * r * 1[r > median] / N_ep(event)^3, r = R_phi standardised over its
    data set, N_ep = arrivals this episode in the state's room with what Link holds"""
    shaping_scale: JsonFloat = Field(0.1, ge=0, le=100)
    """potential mode: Phi = scale * R_phi (normalised by its training std)"""
    bonus_coefficient: JsonFloat = Field(0.2, ge=0, le=10)
    """bonus mode: the weight of the standardised R_phi (Motif and ONI used 0.1-0.4 of the
    extrinsic reward's scale)"""
    hand_potential: Literal["off", "progress"] = "off"
    """instead of R_phi, a potential written by hand: ``progress`` is Phi = shaping_scale *
    the progress level read from RAM (what the rules judges know; the loop's baseline on the
    same knowledge)"""


Block = Literal["stop", "confirm", "report"]
"""whose episode seeds an evaluation plays: the stop rule's, its confirmation's, a report's"""
BLOCK_FIELDS: dict[Block, tuple[str, str]] = {
    "stop": ("seed", "episodes"),
    "confirm": ("confirm_seed", "confirm_episodes"),
    "report": ("report_seed", "report_episodes"),
}
"""each block's first seed and episode count, as fields of `Evaluation`"""


class Evaluation(_Group):
    """The policy played on its own every so often during training, from where a player
    starts; the run can stop itself when it wins often enough (trainer/ppo/evaluation.py)."""

    every_env_steps: JsonInt = Field(0, ge=0, le=MAX_ENV_STEPS)
    """play the policy after the first iteration past each multiple of this (0 = never)"""
    episodes: JsonInt = Field(100, ge=1, le=1000)
    """episodes per evaluation (seeds seed, seed + 1, ...)"""
    seed: Seed = 0
    """the first episode seed of every evaluation: the episodes the stop rule reads"""
    start: str = Field("power-on", min_length=1, max_length=64)
    """where they start: power-on (the title screen: needs the planner) or a named state"""
    sticky: JsonFloat = Field(0.25, ge=0, lt=1)
    """sticky-action probability while evaluating"""
    stop_at_win_rate: JsonFloat = Field(0.0, ge=0, le=1)
    """end the run when an evaluation wins at least this share (0 = never); its policy is
    kept in the run folder's winning-policy/ with the run's total env steps"""
    processes: JsonInt = Field(2, ge=1, le=16)
    """processes playing the episodes side by side (the runners wait meanwhile)"""
    confirm_start: str = Field("", max_length=64)
    """with stop_at_win_rate: a second start (a named state such as start_of_play) played
    when an evaluation reaches the goal; the run stops only if it reaches it there too
    ("" = none)"""
    confirm_episodes: JsonInt = Field(0, ge=0, le=1000)
    """with stop_at_win_rate: when an evaluation reaches the goal, its start is played for
    this many more episodes on seeds from confirm_seed, and the run stops only if they reach
    it too (0 = none): the stop rule reads the best of many evaluations, and one lucky block
    of seeds would otherwise stop a policy that falls short on fresh ones"""
    confirm_seed: Seed = 5_000
    """the first seed of the confirmation's episodes: a block apart from the stop rule's and
    the report's"""
    report_episodes: JsonInt = Field(100, ge=0, le=1000)
    """when the stop rule is met: the winning policy played again from each start it was
    judged on, for this many fresh episodes: the figure to report, not the one that chose
    the policy (0 = none)"""
    report_seed: Seed = 10_000
    """the first seed of the reported episodes: their seeds never overlap the stop rule's"""

    def seeds(self, block: Block) -> range:
        """The episode seeds `block` plays."""
        seed, episodes = BLOCK_FIELDS[block]
        first: int = getattr(self, seed)
        return range(first, first + getattr(self, episodes))

    @model_validator(mode="after")
    def _seed_blocks_are_apart(self) -> Evaluation:
        """The stop rule's, the confirmation's and the report's episodes share no seed: each
        reading is evidence the others have not already given."""
        for earlier, later in combinations(BLOCK_FIELDS, 2):
            theirs, mine = self.seeds(earlier), self.seeds(later)
            if range(max(mine.start, theirs.start), min(mine.stop, theirs.stop)):
                seed, episodes = BLOCK_FIELDS[later]
                raise ValueError(
                    f"evaluation.{seed} {mine.start} with {len(mine)} {episodes} overlaps "
                    f"evaluation.{BLOCK_FIELDS[earlier][0]}'s seeds {theirs.start}-"
                    f"{theirs.stop - 1}: each block must be fresh episodes; move {seed} past them"
                )
        return self


class TrainConfig(BaseSettings, WorldSetting):
    """A training run's settings; `koholint train` and POST /v1/runs take the same fields
    (over HTTP, `rom` names a world of the trainer's worlds folder, never a path)."""

    model_config = SettingsConfigDict(
        env_prefix=ENVIRONMENT_PREFIX,
        env_nested_delimiter=NESTING,
        env_ignore_empty=True,
        extra="forbid",
        use_attribute_docstrings=True,
    )

    run: str = Field("", pattern=rf"^$|{RUN_NAME_PATTERN}")
    """run name; empty picks a unique one from the time"""
    total_env_steps: JsonInt = Field(20_000, ge=1, le=MAX_ENV_STEPS)
    """stop after this many environment steps in all (counted across resumes; with phase
    both, phase 1 and its shortening count too)"""
    num_env_runners: JsonInt = Field(2, ge=0, le=64)
    """Ray env-runner processes sampling in parallel (0 = sample in the driver)"""
    envs_per_env_runner: JsonInt = Field(4, ge=1, le=64)
    """environments stepped by each runner (several per runner share RLlib's per-step cost)"""
    rollout_fragment_length: JsonInt = Field(0, ge=0, le=1_000_000)
    """steps each env contributes per sample; 0 = the batch split evenly over all envs"""
    train_batch_size: JsonInt = Field(1024, ge=1, le=1_000_000)
    """steps per PPO update"""
    minibatch_size: JsonInt = Field(256, ge=1, le=1_000_000)
    """steps per SGD minibatch (at most train_batch_size)"""
    num_epochs: JsonInt = Field(4, ge=1, le=100)
    """passes over each batch"""
    learning_rate: JsonFloat = Field(3e-4, gt=0, le=1)
    """Adam step size"""
    gamma: JsonFloat = Field(0.99, gt=0, le=1)
    """discount"""
    entropy_coeff: JsonFloat = Field(0.01, ge=0, le=10)
    """entropy bonus, keeps the policy exploring"""
    hidden_sizes: list[LayerWidth] = Field([64, 64], min_length=1, max_length=8)
    """hidden layers of the policy and of the value network (separate, tanh)"""
    lean_sampling: StrictBool = True
    """sample through the trainer's own connectors (ppo/rllib) instead of RLlib's general ones"""
    overlap_sampling: StrictBool = False
    """env runners sample the next batch while the learner updates on this one (one update
    of policy lag, learned as decoupled PPO; docs/trainer.md says what it costs in learning)"""
    env: EnvSettings = Field(default_factory=lambda: EnvSettings(**TRAIN_ENV_DEFAULTS))
    """the game's settings (koholint/Zelda-v1: frame_skip, max_episode_steps, reward_mode,
    start_state, ...), over the trainer's defaults (sticky actions 0.25, episodes of 1024)"""
    curiosity_weight: JsonFloat = Field(1.0, ge=0, le=1000)
    """RND weight before the 30% budget; 0 turns curiosity off"""
    archive_restart_every: JsonInt = Field(4, ge=0, le=1_000_000)
    """every K-th episode of an env starts from a frontier cell of the archive (0 = no archive)"""
    export_every_episodes: JsonInt = Field(20, ge=0, le=1_000_000)
    """every N-th episode of an env is exported as segments (0 = never)"""
    segment_steps: JsonInt = Field(256, ge=1, le=100_000)
    """steps per exported segment"""
    checkpoint_every_iterations: JsonInt = Field(5, ge=1, le=1_000_000)
    """save a checkpoint every this many training iterations (and at the end)"""
    seed: Seed = 0
    """seeds the envs and the policy"""
    resume_from: str = Field("", pattern=rf"^$|{CHECKPOINT_NAME_PATTERN}")
    """a checkpoint name from a ledger (<run>-step<12 digits>) to continue from; without a
    run name, the run that owns the checkpoint continues"""
    planner: Literal["off", "rules", "local", "llm-d", "http"] = "off"
    """hybrid control in dialog and puzzle: off, rules, local, llm-d (in-process backends,
    at the deployment's planner_url) or http (the planner service at planner_url)"""
    phase: Literal["train", "explore", "robustify", "both"] = "train"
    """train: PPO as configured; explore: Go-Explore phase 1 only (no policy) until the game is
    won, keeping win.actions in the run folder; robustify: PPO whose episodes start on
    curriculum.trajectory, moving earlier as they win; both: explore, then robustify.
    robustify and both start from phase 2's recipe (trainer/recipes/phase-two.toml: rules
    planner, progress reward, SIL 0.1, cloning and DAgger, evaluations from power-on, the
    budget), under whatever else is set"""
    explore: ExploreSettings = Field(default_factory=ExploreSettings)
    """phase 1 (explore, both): Go-Explore's settings (worker processes: one per env runner,
    at least one), and the shortening of its win (its replays count in total_env_steps)"""
    curriculum: Curriculum = Field(default_factory=Curriculum)
    """robustify: how the start moves along the winning trajectory"""
    imitation: ImitationSettings = Field(default_factory=ImitationSettings)
    """robustify: the trajectory and the scripted teachers cloned before PPO, and DAgger"""
    sil: SelfImitation = Field(default_factory=SelfImitation)
    """self-imitation learning"""
    reward: RewardModelShaping = Field(default_factory=RewardModelShaping)
    """the judges' reward model in the reward: a potential or an intrinsic bonus"""
    evaluation: Evaluation = Field(default_factory=Evaluation)
    """the policy played on its own during training, and when to stop on its win rate"""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The layers are put together by load(): validating a request body alone (as FastAPI
        # does) must not read the service's environment into the fields the caller set.
        return (init_settings,)

    @classmethod
    def load(
        cls,
        overrides: Mapping[str, Any],
        environ: Mapping[str, str] | None = None,
        source: str = "flag",
    ) -> TrainConfig:
        """Defaults < phase 2's recipe (for phase robustify or both) < the environment's
        KOHOLINT_TRAINER_* (and aliases) < `overrides`; a TrainConfigError names the first
        bad field and where its value came from."""
        environ = os.environ if environ is None else environ
        from_environment = TrainerEnvironment(cls, environ)()
        phase = merged(from_environment, overrides).get("phase")
        recipe = PHASE_TWO_RECIPE if phase in ("robustify", "both") else {}
        try:
            layers = merged({"env": TRAIN_ENV_DEFAULTS}, recipe, from_environment, overrides)
            config = cls(**layers)
        except ValidationError as error:
            raise config_error(error, environ, source) from None
        config.check()
        return config

    def fragment_length(self) -> int:
        """Steps per env per sample: the configured length, or the batch over all envs."""
        if self.rollout_fragment_length:
            return self.rollout_fragment_length
        envs = max(self.num_env_runners, 1) * self.envs_per_env_runner
        return max(1, -(-self.train_batch_size // envs))

    def check(self) -> None:
        """Rules across fields (after every layer is applied, so no layer is judged alone)."""
        if self.phase == "robustify" and not self.curriculum.trajectory:
            raise TrainConfigError(
                "phase=robustify needs curriculum.trajectory: the win.actions that "
                "`koholint explore` (or phase=explore) wrote; or use phase=both",
                "curriculum.trajectory",
            )
        self._check_evaluation()
        problem = self.imitation.problem()
        if problem is not None:
            raise TrainConfigError(problem[1], f"imitation.{problem[0]}")
        if self.reward.hand_potential != "off" and self.reward.model:
            raise TrainConfigError(
                f"reward.hand_potential={self.reward.hand_potential!r} and reward.model="
                f"{self.reward.model!r} are two potentials: set one of them",
                "reward.hand_potential",
            )  # fmt: skip
        if self.train_batch_size < self.minibatch_size:
            raise TrainConfigError(
                f"train_batch_size={self.train_batch_size} is smaller than minibatch_size="
                f"{self.minibatch_size}: raise train_batch_size or lower minibatch_size",
                "train_batch_size",
            )

    def _check_evaluation(self) -> None:
        from koholint.game.states import STATE_NAMES

        evaluation = self.evaluation
        if evaluation.stop_at_win_rate and not evaluation.every_env_steps:
            raise TrainConfigError(
                "evaluation.stop_at_win_rate needs evaluation.every_env_steps: the run stops "
                "on an evaluation's win rate; set how often to evaluate (e.g. 500000)",
                "evaluation.stop_at_win_rate",
            )
        power_on = evaluation.start in ("power-on", "power_on")
        if not power_on and evaluation.start not in STATE_NAMES:
            raise TrainConfigError(
                f"evaluation.start={evaluation.start!r}: choose power-on (where a player "
                f"starts) or a named state ({', '.join(STATE_NAMES)})", "evaluation.start",
            )  # fmt: skip
        confirm = evaluation.confirm_start
        if confirm and confirm not in STATE_NAMES and confirm not in ("power-on", "power_on"):
            raise TrainConfigError(
                f"evaluation.confirm_start={confirm!r}: choose a named state "
                f"({', '.join(STATE_NAMES)}), power-on, or \"\" for none",
                "evaluation.confirm_start",
            )  # fmt: skip
        if evaluation.every_env_steps and power_on and self.planner == "off":
            raise TrainConfigError(
                "evaluation.start=power-on with planner=off: the title screen is the "
                "planner's (START_GAME); set planner=rules or evaluate from start_of_play",
                "evaluation.start",
            )


# -- where values come from ----------------------------------------------------------------
class TrainerEnvironment(EnvSettingsSource):
    """KOHOLINT_TRAINER_* from a given mapping (the process's environment by default), the
    seed's names as aliases, text decoded for the field it sets ("8" -> 8, "null" -> None)."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        named = {
            target: self._environ[alias]
            for alias, target in ENVIRONMENT_ALIASES.items()
            if self._environ.get(alias)
        }
        named.update({name: value for name, value in self._environ.items() if value})
        return {name.lower(): value for name, value in named.items()}

    def prepare_field_value(
        self, field_name: str, field: FieldInfo, value: Any, value_is_complex: bool
    ) -> Any:
        return typed(
            field.annotation,
            super().prepare_field_value(field_name, field, value, value_is_complex),
        )


def merged(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Later layers win, field by field; nested objects merge key by key."""
    result: dict[str, Any] = {}
    for layer in layers:
        for name, value in layer.items():
            if isinstance(value, Mapping) and isinstance(result.get(name), Mapping):
                result[name] = merged(result[name], value)
            else:
                result[name] = value
    return result


def typed(annotation: Any, value: Any) -> Any:
    """`value` with every string leaf decoded for the field it sets (nested models too)."""
    if isinstance(value, str):
        return flags.from_text(annotation, value)
    model = flags.model_of(annotation)
    if isinstance(value, dict) and model is not None:
        fields = model.model_fields
        return {
            key: typed(fields[key].annotation, item) if key in fields else item
            for key, item in value.items()
        }
    return value


def field_paths(model: type[BaseModel] | None = None, prefix: str = "") -> dict[str, FieldInfo]:
    """Every run setting (of TrainConfig, or `model`) as a dotted path ('env.frame_skip')."""
    return flags.field_paths(model or TrainConfig, prefix, leaves=("reward_weights",))


def environment_variable(path: str) -> str:
    """KOHOLINT_TRAINER_TOTAL_ENV_STEPS; KOHOLINT_TRAINER_ENV__FRAME_SKIP for env.frame_skip."""
    return flags.environment_variable(ENVIRONMENT_PREFIX, path)


def config_error(
    error: ValidationError, environ: Mapping[str, str], source: str
) -> TrainConfigError:
    """The first problem, naming the field and where its value came from."""
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    variable = environment_variable(field)
    aliases = [alias for alias, target in ENVIRONMENT_ALIASES.items() if target == variable]
    origin = next((name for name in (variable, *aliases) if environ.get(name)), source)
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden" and field in Deployment.model_fields:
        message = "a deployment setting: the operator's (the service's settings or the CLI's flags)"
    elif first["type"] == "extra_forbidden" and field == "env.rom":
        message = "the world is the run's own setting: rom (--rom, KOHOLINT_ROM), not env.rom"
    return TrainConfigError(f"{field} ({origin}): {message}", field)
