"""The trainer's side of the reward model: which version, and handing it to the envs.

Between iterations the driver asks its ``RewardModelSource`` for a new version; a new one is
sent to every env runner, whose ``RewardModelWrapper``s (``ShapingWrapper`` in potential
mode, ``BonusWrapper`` in bonus mode) switch to it at their next episode (never
mid-episode). After each iteration the driver gathers, from every wrapper, how many steps
each version shaped and the sum of the shaping terms: the run status and the ledger record
them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from koholint.bus import REDIS_TIMEOUT_SECONDS, RedisBus, connect_redis
from koholint.env.encoding import encoder_version
from koholint.env.wrappers import RewardModelWrapper
from koholint.reward.hotload import LATEST, RewardModelSource
from koholint.reward.model import LoadedRewardModel, RewardModelPotential, load_version
from koholint.store import ObjectStore

logger = logging.getLogger("trainer.ppo.shaping")


@dataclass
class ShapingReport:
    """What shaping did so far in a run (summed over every env)."""

    version: str | None = None
    """the version the envs were last given"""
    steps_by_version: dict[str, int] = field(default_factory=dict)
    shaping_sum: float = 0.0
    shaping_abs_sum: float = 0.0
    refused: int = 0
    """versions that failed to load or verify (the previous one was kept)"""
    last_error: str | None = None
    without_model: int = 0
    """envs whose next episode would not use `version` (an env runner Ray restarted)"""


def shaping_wrappers(env: Any) -> list[RewardModelWrapper]:
    """Every RewardModelWrapper in an env, a vector env (``.envs``, under RLlib's vector
    wrappers) or a wrapper chain."""
    found: list[RewardModelWrapper] = []
    if isinstance(env, gym.vector.VectorWrapper):
        env = env.unwrapped
    for member in getattr(env, "envs", None) or [env]:
        layer = member
        while layer is not None:
            if isinstance(layer, RewardModelWrapper):
                found.append(layer)
            layer = layer.env if isinstance(layer, gym.Wrapper) else None
    return found


def give_potential(env: Any, model: LoadedRewardModel) -> int:
    """Stage `model` on every shaping wrapper of `env`; returns how many took it."""
    wrappers = shaping_wrappers(env)
    for wrapper in wrappers:
        wrapper.set_potential(RewardModelPotential(model))
    return len(wrappers)


def shaping_counts(env: Any) -> tuple[dict[str, int], float, float, list[str | None]]:
    """(steps per version, sum of F, sum of |F|, the version each wrapper will use next)
    over `env`'s shaping wrappers."""
    steps: dict[str, int] = {}
    total = absolute = 0.0
    wrappers = shaping_wrappers(env)
    for wrapper in wrappers:
        for version, count in wrapper.shaped_steps.items():
            steps[version] = steps.get(version, 0) + count
        total += wrapper.shaping_sum
        absolute += wrapper.shaping_abs_sum
    return steps, total, absolute, [wrapper.pending_version for wrapper in wrappers]


def broadcast_model(algo: Any, model: LoadedRewardModel) -> int:
    """Send `model` to every env runner (and the driver's own, when it samples)."""
    taken = algo.env_runner_group.foreach_env_runner(
        lambda runner: give_potential(runner.env, model), local_env_runner=True
    )
    return int(sum(count or 0 for count in taken))


def gather_counts(algo: Any, report: ShapingReport) -> ShapingReport:
    """Fill `report` with the envs' counts (totals since the run began)."""
    counts = algo.env_runner_group.foreach_env_runner(
        lambda runner: shaping_counts(runner.env), local_env_runner=True
    )
    report.steps_by_version, report.shaping_sum, report.shaping_abs_sum = {}, 0.0, 0.0
    report.without_model = 0
    for steps, total, absolute, next_versions in counts:
        report.without_model += sum(version != report.version for version in next_versions)
        for version, count in steps.items():
            report.steps_by_version[version] = report.steps_by_version.get(version, 0) + count
        report.shaping_sum += total
        report.shaping_abs_sum += absolute
    return report


class ShapingCounts:
    """The driver's side of a potential the envs hold from the start (the hand-written one):
    after each iteration, the envs' counts come back."""

    def __init__(self) -> None:
        self.report = ShapingReport()

    def before_iteration(self, algo: Any) -> None:
        """Nothing to hand over: ``ShapingDriver`` sends new versions here."""

    def after_iteration(self, algo: Any) -> ShapingReport:
        return gather_counts(algo, self.report)

    def metrics(self) -> dict[str, float]:
        """For the ledger: steps per version (``shaped_steps.<version>``) and the sums of F."""
        report = self.report
        metrics = {f"shaped_steps.{v}": float(n) for v, n in report.steps_by_version.items()}
        metrics.update(shaping_sum=report.shaping_sum, shaping_abs_sum=report.shaping_abs_sum)
        return metrics


class ShapingDriver(ShapingCounts):
    """The driver's loop for R_phi: before each iteration, a new version (if any) goes to
    the envs; after it, the envs' counts come back. Never raises for a bad version: the
    source logs and counts it and the previous model stays."""

    def __init__(
        self,
        choice: str,
        store: ObjectStore,
        *,
        redis_url: str = "",
        redis_timeout_s: float = REDIS_TIMEOUT_SECONDS,
        run: str = "",
        encoding: str = "observation",
    ) -> None:
        bus = None
        if redis_url and choice == LATEST:
            self._redis = connect_redis(redis_url, timeout_s=redis_timeout_s)
            bus = RedisBus(self._redis)
        self.source = RewardModelSource(store, choice=choice, bus=bus, group=f"trainer-{run}",
                                        consumer=f"driver-{run}",
                                        expected_encoder=encoder_version(encoding))  # fmt: skip
        super().__init__()
        self._send_failures = 0

    def before_iteration(self, algo: Any) -> None:
        model = self.source.poll()
        self.report.refused = self.source.failures + self._send_failures
        self.report.last_error = self.source.last_error or self.report.last_error
        if model is None and self.report.without_model and self.source.current is not None:
            model = self.source.current  # a restarted env runner starts without the model
        if model is None:
            return
        try:
            taken = broadcast_model(algo, model)
        except Exception as error:  # shaping never takes the trainer down; retried next time
            self._send_failures += 1
            self.report.last_error = f"sending {model.version} to the env runners failed: {error}"
            logger.warning(self.report.last_error, extra={"event": "reward_model_refused"})
            self.source.current = None
            return
        self.report.version = model.version
        logger.info("reward model %s sent to %d envs (used from their next episode)",
                    model.version, taken, extra={"event": "reward_model_loaded"})  # fmt: skip


def check_reward_model(choice: str, store: ObjectStore, encoding: str = "observation") -> None:
    """Preflight: a fixed version must load and match the env's encoder, `encoding` (the
    vector the shaping reads R_phi from; RewardModelError names the fix); 'latest' may not
    exist yet."""
    if choice and choice != LATEST:
        load_version(store, choice, expected_encoder=encoder_version(encoding))
