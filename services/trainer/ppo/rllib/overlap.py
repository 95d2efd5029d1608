"""PPO whose env runners sample the next batch while the learner updates on this one.

RLlib's PPO samples, then learns, then sends the weights: while the learner updates the
env runners wait (BENCHMARKS.md has the share of an iteration), and on a machine with as
many cores as runners one core idles. ``OverlappedPPO`` asks the runners for batch k+1 as
soon as batch k is in, so sampling and learning share the cores. The price is one update
of policy lag: the weights after update k travel with the request for batch k+2, so every
batch is exactly one update behind the learner (tested) — the "one-step-off" PPO of
asynchronous samplers (Sample Factory, Cleanba).

On lagged batches plain PPO would anchor its clipping at the sampler's policy, one update
old, so each update starts partly clipped; measured, that slowed the robustify curriculum
(BENCHMARKS.md). ``ProximalPolicy`` makes it decoupled PPO (Hilton et al. 2021, "Batch
size-invariance for policy optimization"): the clipping and the KL term are taken against
the learner's own policy before the update (the proximal policy), and the advantages are
importance-weighted by proximal / sampler probability (truncated at
``MAX_IMPORTANCE_WEIGHT``).

Without remote env runners it is RLlib's PPO; when a runner fails and a batch comes back
short, RLlib's synchronous sampling tops it up.
"""

from __future__ import annotations

from typing import Any

import ray
import torch
from ray.rllib.algorithms.ppo import PPO
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core import ALL_MODULES, COMPONENT_LEARNER, COMPONENT_RL_MODULE
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
    WEIGHTS_SEQ_NO,
)

from trainer.ppo.rllib.learner import LeanPPOTorchLearner
from trainer.ppo.rllib.sil import SilPPOTorchLearner

TAG = "overlapped-sample"
MAX_IMPORTANCE_WEIGHT = 2.0


def sample_with_metrics(
    runner: Any, weights: dict[str, Any] | None = None
) -> tuple[list[Any], dict[str, Any]]:
    """Take `weights` (when newer than the runner's), then one fragment of every env of
    `runner` and the runner's metrics since the last."""
    if weights is not None:
        runner.set_state(weights)
    return runner.sample(), runner.get_metrics()


class OverlappedPPO(PPO):
    """PPO (new API stack) with sampling of the next batch overlapped with learning."""

    _sample_in_flight: bool = False
    _weights: Any = None
    """the learner's weights after the last update, in Ray's object store (a reference)"""

    def training_step(self) -> None:
        runners = self.env_runner_group
        if runners is None or runners.num_remote_workers() == 0:
            super().training_step()
            return
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            if not self._sample_in_flight:
                self._request_batch()
            episodes, runner_metrics = self._collect_batch()
            # the next batch, sampled with the weights of the last update while this one learns
            self._request_batch()
            if not episodes:
                return None
            self.metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)
        self._learn(episodes)
        return None

    def _request_batch(self) -> None:
        # The weights travel with the request: a separate fire-and-forget weight sync could
        # be dropped while the previous one waits behind a sample (RLlib allows one call in
        # flight per tag and runner), which would make the lag two updates now and then.
        self.env_runner_group.foreach_env_runner_async(
            sample_with_metrics, tag=TAG, kwargs={"weights": self._weights}
        )
        self._sample_in_flight = True

    def _collect_batch(self) -> tuple[list[Any], list[dict[str, Any]]]:
        """The batch in flight (a failed runner's part left out), topped up to the train
        batch size by RLlib's synchronous sampling when it came back short."""
        results = self.env_runner_group.fetch_ready_async_reqs(tags=TAG, timeout_seconds=None)
        self._sample_in_flight = False
        episodes = [episode for _, (fragment, _) in results for episode in fragment]
        runner_metrics = [metrics for _, (_, metrics) in results]
        missing = self.config.total_train_batch_size - sum(map(len, episodes))
        if missing > 0 and self.env_runner_group.num_healthy_remote_workers() > 0:
            more, more_metrics = synchronous_parallel_sample(
                worker_set=self.env_runner_group,
                max_env_steps=missing,
                sample_timeout_s=self.config.sample_timeout_s,
                _uses_new_env_runners=True,
                _return_metrics=True,
            )
            episodes += more
            runner_metrics += more_metrics
        return episodes, runner_metrics

    def _learn(self, episodes: list[Any]) -> None:
        """RLlib's PPO update on `episodes`; its weights go out with the next request."""
        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            learner_results = self.learner_group.update(
                episodes=episodes,
                timesteps={
                    NUM_ENV_STEPS_SAMPLED_LIFETIME: self.metrics.peek(
                        (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME)
                    ),
                    NUM_MODULE_STEPS_TRAINED_LIFETIME: self.metrics.peek(
                        (LEARNER_RESULTS, ALL_MODULES, NUM_MODULE_STEPS_TRAINED_LIFETIME),
                        default=0,
                    ),
                },
                num_epochs=self.config.num_epochs,
                minibatch_size=self.config.minibatch_size,
                shuffle_batch_per_epoch=self.config.shuffle_batch_per_epoch,
            )
            self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            modules = set(learner_results[0].keys()) - {ALL_MODULES}
            state = self.learner_group.get_state(
                components=[
                    f"{COMPONENT_LEARNER}/{COMPONENT_RL_MODULE}/{module}" for module in modules
                ],
                inference_only=True,
            )[COMPONENT_LEARNER]
            self._weights = ray.put(
                {key: state[key] for key in (COMPONENT_RL_MODULE, WEIGHTS_SEQ_NO)}
            )


class ProximalPolicy(ConnectorV2):
    """Learner connector, after GAE: the batch's log-probabilities and logits become the
    learner's policy before this update (PPO's loss clips and takes its KL against them),
    and each advantage is weighted by proximal / sampler probability of its action."""

    def __call__(self, *, rl_module: Any, batch: dict[str, Any], **kwargs: Any) -> Any:
        for module_id, module_batch in batch.items():
            with torch.no_grad():
                logits = rl_module[module_id].forward_train(module_batch)[
                    Columns.ACTION_DIST_INPUTS
                ]
            actions = module_batch[Columns.ACTIONS].long().unsqueeze(-1)
            proximal = torch.log_softmax(logits, dim=-1).gather(-1, actions).squeeze(-1)
            weight = torch.exp(proximal - module_batch[Columns.ACTION_LOGP])
            module_batch[Postprocessing.ADVANTAGES] = module_batch[
                Postprocessing.ADVANTAGES
            ] * weight.clamp(max=MAX_IMPORTANCE_WEIGHT)
            module_batch[Columns.ACTION_LOGP] = proximal
            module_batch[Columns.ACTION_DIST_INPUTS] = logits
        return batch


class _ProximalLearner:
    """Appends ProximalPolicy to the learner's pipeline, after PPO's GAE."""

    def build(self) -> None:
        super().build()  # type: ignore[misc]
        self._learner_connector.append(ProximalPolicy())  # type: ignore[attr-defined]


class ProximalPPOTorchLearner(_ProximalLearner, LeanPPOTorchLearner):
    """PPO's torch learner, decoupled."""


class ProximalSilPPOTorchLearner(_ProximalLearner, SilPPOTorchLearner):
    """The SIL learner, decoupled."""


PROXIMAL_LEARNERS: dict[type, type] = {LeanPPOTorchLearner: ProximalPPOTorchLearner,
                                       SilPPOTorchLearner: ProximalSilPPOTorchLearner}  # fmt: skip
