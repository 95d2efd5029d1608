"""PPO's torch learner with less per-minibatch overhead; the same updates (tested).

A 1,024-step update is 17 minibatch steps of a 64x64 MLP, so RLlib's fixed costs per
step weigh as much as the arithmetic (a cProfile in BENCHMARKS.md). These go here:

- Finite gradients are checked once, over all of them, instead of twice per tensor
  (24 ``isfinite`` checks per step for PPO's twelve tensors). When any is not finite,
  RLlib's own path runs, with its warnings, zeroing or skipping.
- Adam updates all tensors in one ``foreach`` call per operation instead of a Python loop
  over tensors (torch picks the loop on the CPU by default); the arithmetic is Adam's.
- The loss of a categorical policy is computed with the tensor operations torch's
  ``Categorical`` runs (normalised logits, softmax, gather, its entropy and KL), without
  building four distribution objects per minibatch; the same numbers and gradients.
- The loss statistics (policy, value and KL losses, entropy, explained variance) and the
  off-policyness are logged once per update, not once per minibatch: RLlib logs them with
  a window of 1, so only the last minibatch's values were ever kept (the off-policyness is
  the first minibatch's: every sample of a synchronous batch has the same weights).
"""

from __future__ import annotations

from typing import Any

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
from ray.rllib.utils.torch_utils import explained_variance


class LeanPPOTorchLearner(PPOTorchLearner):
    """PPOTorchLearner with one finiteness check per step, a foreach Adam, the categorical
    loss without distribution objects and its statistics logged once per update."""

    def build(self) -> None:
        super().build()
        self._pending_loss_stats: dict[Any, dict[str, Any]] = {}
        self._off_policyness_logged_for = -1

    def configure_optimizers_for_module(self, module_id: Any, config: Any = None) -> None:
        params = self.get_parameters(self._module[module_id])
        self.register_optimizer(
            module_id=module_id,
            optimizer=torch.optim.Adam(params, foreach=True),
            params=params,
            lr_or_lr_schedule=config.lr,
        )

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
    return lambda data: torch.sum(data[mask]) / valid


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
    kl[(probabilities == 0).expand_as(kl)] = float("inf")
    kl[(old_probabilities == 0).expand_as(kl)] = 0
    return kl.sum(-1)
