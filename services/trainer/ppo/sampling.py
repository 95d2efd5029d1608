"""A lean sampling path for RLlib's env runners (new API stack), measured in BENCHMARKS.md.

RLlib's default env-to-module and module-to-env connector pipelines are general (nested
spaces, time ranks, multi-agent mapping, action clipping); for one flat Box observation and
one Discrete action they cost more per step than the emulator. These two connectors do the
same work for that case, and ``LeanPPOModule`` skips the train/eval toggling that the
default module does around every inference call (our MLPs have no dropout or batch norm,
so the mode changes nothing). The learner's pipeline (GAE, batching) stays RLlib's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns


class LatestObservationsToTensor(ConnectorV2):
    """env-to-module: the newest observation of every episode, as one float tensor."""

    def __call__(self, *, batch: dict[str, Any], episodes: list[Any], **kwargs: Any) -> Any:
        observations = np.stack([episode.get_observations(-1) for episode in episodes])
        batch[Columns.OBS] = torch.from_numpy(observations)
        return batch


class SampleCategoricalActions(ConnectorV2):
    """module-to-env: sample (or, without exploration, take the argmax of) the categorical
    distribution given by the module's logits; actions, their log-probabilities and the
    logits go back as numpy arrays indexed by env (what the default pipeline produces)."""

    def __call__(self, *, batch: dict[str, Any], explore: bool | None = None, **kwargs: Any) -> Any:
        logits = batch[Columns.ACTION_DIST_INPUTS]
        log_probabilities = torch.log_softmax(logits, dim=-1).numpy()
        if explore:
            actions = _sample(log_probabilities, torch.rand(len(logits), 1).numpy())
        else:
            actions = log_probabilities.argmax(axis=-1)
        batch[Columns.ACTIONS] = actions
        batch[Columns.ACTION_LOGP] = log_probabilities[np.arange(len(actions)), actions]
        batch[Columns.ACTION_DIST_INPUTS] = logits.numpy()
        return batch


def _sample(log_probabilities: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """One action per row by inverting the cumulative distribution at a uniform draw (one
    column per row, from torch's seeded generator): for a few rows of a few actions it costs
    half of ``torch.multinomial`` (measured in BENCHMARKS.md's issue-15 section)."""
    cumulative = np.exp(log_probabilities).cumsum(axis=-1)
    # the first action whose cumulative probability exceeds the draw (scaled by the total,
    # which float32 rounding leaves a hair off 1); `<=` skips zero-probability actions
    actions = (cumulative <= uniforms * cumulative[:, -1:]).sum(axis=-1)
    return np.minimum(actions, log_probabilities.shape[-1] - 1)  # the product may round up


class LeanPPOModule(DefaultPPOTorchRLModule):
    """RLlib's default PPO module; inference without switching to eval mode and back."""

    def forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        with torch.no_grad():
            return self._forward(batch, **kwargs)

    def forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        with torch.no_grad():
            return self._forward(batch, **kwargs)


def env_to_module(env: Any = None, spaces: Any = None, device: Any = None) -> ConnectorV2:
    return LatestObservationsToTensor()


def module_to_env(env: Any = None, spaces: Any = None) -> ConnectorV2:
    return SampleCategoricalActions()
