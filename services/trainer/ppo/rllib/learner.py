"""PPO's torch learner with less per-minibatch overhead; the same updates (tested).

A 1,024-step update is 17 minibatch steps of a 64x64 MLP, so RLlib's fixed costs per
step weigh as much as the arithmetic (a cProfile in BENCHMARKS.md). These go here:

- Finite gradients are checked once, over all of them, instead of twice per tensor
  (24 ``isfinite`` checks per step for PPO's twelve tensors). When any is not finite,
  RLlib's own path runs, with its warnings, zeroing or skipping.
- Adam is torch's fused kernel (one call a step for all tensors) instead of torch's Python
  loop over tensors on the CPU; the arithmetic is Adam's, rounded in another order.
- The loss of a categorical policy is computed with the tensor operations torch's
  ``Categorical`` runs (normalised logits, softmax, gather, its entropy and KL), without
  building four distribution objects per minibatch; the same numbers and gradients.
- The loss statistics (policy, value and KL losses, entropy, explained variance) and the
  off-policyness are logged once per update, not once per minibatch: RLlib logs them with
  a window of 1, so only the last minibatch's values were ever kept (the off-policyness is
  the first minibatch's: every sample of a synchronous batch has the same weights).
- Minibatches are gathered by row indices from the train batch (``IndexedMinibatches``)
  instead of RLlib's slicing and concatenation of ``SampleBatch`` copies: the same rows in
  the same order, shuffled by the same ``np.random.permutation`` calls.
- The steps trained are logged once per update with their sums (RLlib logs seven values a
  minibatch); the reduced metrics are the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.algorithms.ppo.ppo import (
    LEARNER_RESULTS_KL_KEY,
    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY,
    LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY,
)
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical
from ray.rllib.core.learner.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.metrics import (
    ALL_MODULES,
    MODULE_TRAIN_BATCH_SIZE_MEAN,
    NUM_ENV_STEPS_TRAINED,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
    WEIGHTS_SEQ_NO,
)
from ray.rllib.utils.minibatch_utils import MiniBatchCyclicIterator
from ray.rllib.utils.torch_utils import explained_variance


class LeanPPOTorchLearner(PPOTorchLearner):
    """PPOTorchLearner with one finiteness check per step, a fused Adam, the categorical
    loss without distribution objects, minibatches by row index and its statistics logged
    once per update."""

    def build(self) -> None:
        super().build()
        self._pending_loss_stats: dict[Any, dict[str, Any]] = {}
        self._off_policyness_logged_for = -1
        self._steps_trained: dict[Any, list[int]] = {}  # module: minibatch sizes this update
        self._env_steps_trained = 0

    def _create_iterator_if_necessary(self, *, training_data: Any, num_total_minibatches: int = 0,
                                      num_epochs: int = 1, minibatch_size: int | None = None,
                                      shuffle_batch_per_epoch: bool = False,
                                      **kwargs: Any) -> Any:  # fmt: skip
        """RLlib's minibatch iterator, or the same minibatches by row indices when the batch is
        flat (no sequences, no data iterators, no fixed minibatch count)."""
        if training_data.data_iterators or not minibatch_size or num_total_minibatches:
            return super()._create_iterator_if_necessary(
                training_data=training_data, num_total_minibatches=num_total_minibatches,
                num_epochs=num_epochs, minibatch_size=minibatch_size,
                shuffle_batch_per_epoch=shuffle_batch_per_epoch, **kwargs,
            )  # fmt: skip
        batch = self._make_batch_if_necessary(training_data=training_data)
        for module_id in list(batch.policy_batches):
            if not self.should_module_be_updated(module_id, batch):
                del batch.policy_batches[module_id]
        if not batch.policy_batches:
            return {}
        if not all(IndexedMinibatches.can_index(self.module[module_id], module_batch)
                   for module_id, module_batch in batch.policy_batches.items()):  # fmt: skip
            batch = self._set_slicing_by_batch_id(batch, value=True)
            return MiniBatchCyclicIterator(
                batch, num_epochs=num_epochs, minibatch_size=minibatch_size,
                shuffle_batch_per_epoch=shuffle_batch_per_epoch and num_epochs > 1,
            )  # fmt: skip
        return IndexedMinibatches(batch, num_epochs=num_epochs, minibatch_size=minibatch_size,
                                  shuffle=shuffle_batch_per_epoch and num_epochs > 1)  # fmt: skip

    def _log_steps_trained_metrics(self, batch: Any) -> None:
        for module_id, module_batch in batch.policy_batches.items():
            self._steps_trained.setdefault(module_id, []).append(len(module_batch))
        self._env_steps_trained += batch.env_steps()

    def _flush_steps_trained(self) -> None:
        """RLlib's per-minibatch step metrics (``Learner._log_steps_trained_metrics``), logged
        once per update: the same keys and reductions, the sums of the minibatches."""
        sizes, self._steps_trained = self._steps_trained, {}
        env_steps, self._env_steps_trained = self._env_steps_trained, 0
        log = self.metrics.log_value
        for module_id, counts in sizes.items():
            steps = sum(counts)
            log((module_id, WEIGHTS_SEQ_NO), self._weights_seq_no, window=1)
            log((module_id, MODULE_TRAIN_BATCH_SIZE_MEAN), steps / len(counts), reduce="mean")
            log((module_id, NUM_MODULE_STEPS_TRAINED), steps, reduce="sum")
            log((module_id, NUM_MODULE_STEPS_TRAINED_LIFETIME), steps, reduce="lifetime_sum",
                with_throughput=True)  # fmt: skip
            log((ALL_MODULES, NUM_MODULE_STEPS_TRAINED), steps, reduce="sum",
                with_throughput=True)  # fmt: skip
            log((ALL_MODULES, NUM_MODULE_STEPS_TRAINED_LIFETIME), steps, reduce="lifetime_sum",
                with_throughput=True)  # fmt: skip
        if sizes:
            log((ALL_MODULES, NUM_ENV_STEPS_TRAINED), env_steps, reduce="sum",
                with_throughput=True)  # fmt: skip
            log((ALL_MODULES, NUM_ENV_STEPS_TRAINED_LIFETIME), env_steps, reduce="lifetime_sum",
                with_throughput=True)  # fmt: skip

    def configure_optimizers_for_module(self, module_id: Any, config: Any = None) -> None:
        params = self.get_parameters(self._module[module_id])
        self.register_optimizer(
            module_id=module_id,
            optimizer=torch.optim.Adam(params, fused=True),
            params=params,
            lr_or_lr_schedule=config.lr,
        )

    def _set_optimizer_state(self, state: Any) -> None:
        """RLlib's, then the fused kernel again: torch's load_state_dict takes the saved
        groups' settings, so a checkpoint written before the fused Adam would step with the
        foreach loop from then on (the same arithmetic, slower)."""
        super()._set_optimizer_state(state)
        for optimizer in self._named_optimizers.values():
            if isinstance(optimizer, torch.optim.Adam):
                for group in optimizer.param_groups:
                    group.update(fused=True, foreach=None)

    def apply_gradients(self, gradients_dict: dict[Any, Any]) -> None:
        if not self._plain_step_applies(gradients_dict):
            super().apply_gradients(gradients_dict)
            return
        for name, gradient in gradients_dict.items():
            self._params[name].grad = gradient
        for module_id, optimizer_names in self._module_optimizers.items():
            for optimizer_name in optimizer_names:
                self.get_optimizer(module_id, optimizer_name).step()

    def _plain_step_applies(self, gradients: dict[Any, Any]) -> bool:
        """Whether RLlib's apply_gradients would just set the gradients and step: no
        learning-rate schedulers or gradient scalers to attend to, and every gradient
        present and finite."""
        if self._lr_scheduler_classes is not None or self._grad_scalers is not None:
            return False
        tensors = list(gradients.values())
        if not tensors or any(tensor is None for tensor in tensors):
            return False
        flat = torch.cat([tensor.reshape(-1) for tensor in tensors])
        return bool(torch.isfinite(flat).all())

    def _compute_off_policyness(self, batch: Any) -> None:
        if self._off_policyness_logged_for != self._weights_seq_no:
            self._off_policyness_logged_for = self._weights_seq_no
            super()._compute_off_policyness(batch)

    def compute_loss_for_module(self, *, module_id: Any, config: Any, batch: dict[str, Any],
                                fwd_out: dict[str, Any]) -> Any:  # fmt: skip
        module = self.module[module_id].unwrapped()
        categorical = (module.get_train_action_dist_cls() is TorchCategorical
                       and module.get_exploration_action_dist_cls() is TorchCategorical)  # fmt: skip
        if not categorical or not config.use_critic:
            return super().compute_loss_for_module(
                module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
            )
        mean = _masked_mean(batch)
        logits = _normalised(fwd_out[Columns.ACTION_DIST_INPUTS])
        probabilities = torch.softmax(logits, dim=-1)
        actions = batch[Columns.ACTIONS].long().unsqueeze(-1)
        action_logp = logits.gather(-1, actions).squeeze(-1)
        logp_ratio = torch.exp(action_logp - batch[Columns.ACTION_LOGP])
        if config.use_kl_loss:
            mean_kl_loss = mean(_categorical_kl(batch[Columns.ACTION_DIST_INPUTS], logits,
                                                probabilities))  # fmt: skip
        else:
            mean_kl_loss = torch.tensor(0.0, device=logp_ratio.device)
        min_real = torch.finfo(logits.dtype).min
        entropy = -(torch.clamp(logits, min=min_real) * probabilities).sum(-1)
        advantages = batch[Postprocessing.ADVANTAGES]
        surrogate_loss = torch.min(
            advantages * logp_ratio,
            advantages * torch.clamp(logp_ratio, 1 - config.clip_param, 1 + config.clip_param),
        )
        values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
        vf_loss = torch.pow(values - batch[Postprocessing.VALUE_TARGETS], 2.0)
        vf_loss_clipped = torch.clamp(vf_loss, 0, config.vf_clip_param)
        entropy_coeff = self.entropy_coeff_schedulers_per_module[module_id].get_current_value()
        total_loss = mean(
            -surrogate_loss + config.vf_loss_coeff * vf_loss_clipped - entropy_coeff * entropy
        )
        if config.use_kl_loss:
            total_loss += self.curr_kl_coeffs_per_module[module_id] * mean_kl_loss
        self._pending_loss_stats[module_id] = {
            "surrogate": surrogate_loss.detach(), "vf": vf_loss.detach(),
            "vf_clipped": vf_loss_clipped.detach(), "entropy": entropy.detach(),
            "kl": mean_kl_loss.detach(), "values": values.detach(),
            "targets": batch[Postprocessing.VALUE_TARGETS], "mask": batch.get(Columns.LOSS_MASK),
        }  # fmt: skip
        return total_loss

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        self._flush_steps_trained()
        self._log_loss_stats()  # before PPO's own, which reads the KL to adapt its coefficient
        super().after_gradient_based_update(timesteps=timesteps)

    def _log_loss_stats(self) -> None:
        """The last minibatch's loss statistics, as RLlib's PPO logs them (window 1)."""
        for module_id, stats in self._pending_loss_stats.items():
            mean = _masked_mean({Columns.LOSS_MASK: stats["mask"]} if stats["mask"] is not None
                                else {})  # fmt: skip
            self.metrics.log_dict(
                {
                    POLICY_LOSS_KEY: -mean(stats["surrogate"]),
                    VF_LOSS_KEY: mean(stats["vf_clipped"]),
                    LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY: mean(stats["vf"]),
                    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY: explained_variance(
                        stats["targets"], stats["values"]
                    ),
                    ENTROPY_KEY: mean(stats["entropy"]),
                    LEARNER_RESULTS_KL_KEY: stats["kl"],
                },
                key=module_id,
                window=1,
            )
        self._pending_loss_stats.clear()


def _masked_mean(batch: dict[str, Any]) -> Any:
    """PPO's mean over the valid steps (RLlib's ``possibly_masked_mean``)."""
    if Columns.LOSS_MASK not in batch:
        return torch.mean
    mask = batch[Columns.LOSS_MASK]
    valid = torch.sum(mask)
    # where, not data[mask]: the same sum without a boolean gather and its backward
    return lambda data: torch.sum(torch.where(mask, data, 0.0)) / valid


def _normalised(logits: torch.Tensor) -> torch.Tensor:
    """Log-probabilities, as torch's ``Categorical(logits=...)`` stores them."""
    return logits - logits.logsumexp(dim=-1, keepdim=True)


def _categorical_kl(old_logits: torch.Tensor, logits: torch.Tensor,
                    probabilities: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """KL(old || new) per row, torch's ``_kl_categorical_categorical``: `logits` and
    `probabilities` are the new policy's, normalised."""
    old = _normalised(old_logits)
    old_probabilities = torch.softmax(old, dim=-1)
    kl = old_probabilities * (old - logits)
    kl = torch.where(probabilities == 0, float("inf"), kl)
    kl = torch.where(old_probabilities == 0, 0.0, kl)
    return kl.sum(-1)


class IndexedMinibatches:
    """RLlib's ``MiniBatchCyclicIterator`` over a flat batch, by row indices: each minibatch
    takes `minibatch_size` rows from where the last one ended, wrapping to the start of the
    (reshuffled) batch at its end; one row order per module, shuffled at each wrap by the
    same ``np.random.permutation`` call ``SampleBatch.shuffle`` makes. Each column is
    gathered once per minibatch, not sliced and concatenated."""

    def __init__(self, batch: MultiAgentBatch, *, num_epochs: int, minibatch_size: int,
                 shuffle: bool) -> None:  # fmt: skip
        self._batch = batch
        self._num_epochs = num_epochs
        self._minibatch_size = minibatch_size
        self._shuffle = shuffle

    @staticmethod
    def can_index(module: Any, batch: SampleBatch) -> bool:
        """Whether every column is a tensor or an array of rows, and nothing is a sequence."""
        if module.is_stateful() or batch.get(SampleBatch.SEQ_LENS) is not None or not len(batch):
            return False
        return all(isinstance(column, torch.Tensor | np.ndarray) and len(column) == len(batch)
                   for column in batch.values())  # fmt: skip

    def __iter__(self) -> Any:
        batches = self._batch.policy_batches
        orders = {
            module_id: np.arange(len(module_batch)) for module_id, module_batch in batches.items()
        }
        starts = dict.fromkeys(batches, 0)
        epochs = dict.fromkeys(batches, 0)
        while min(epochs.values()) < self._num_epochs:
            minibatch = {}
            for module_id, module_batch in batches.items():
                rows, size = [], len(module_batch)
                start, wanted = starts[module_id], self._minibatch_size
                while start + wanted >= size:  # RLlib's condition: a batch's end wraps
                    rows.append(orders[module_id][start:])
                    wanted -= size - start
                    start = 0
                    epochs[module_id] += 1
                    if self._shuffle:
                        orders[module_id] = orders[module_id][np.random.permutation(size)]
                end = start + wanted
                if end > start:
                    rows.append(orders[module_id][start:end])
                minibatch[module_id] = _rows(module_batch, np.concatenate(rows))
                starts[module_id] = end
            yield MultiAgentBatch(minibatch, len(self._batch))


def _rows(batch: SampleBatch, indices: np.ndarray) -> SampleBatch:
    """The batch's rows at `indices`, in that order."""
    index = torch.from_numpy(indices)
    return SampleBatch({
        name: column.index_select(0, index) if isinstance(column, torch.Tensor) else column[indices]
        for name, column in batch.items()
    })  # fmt: skip
