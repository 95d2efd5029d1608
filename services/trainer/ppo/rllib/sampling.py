"""A lean sampling path for RLlib's env runners (new API stack), measured in BENCHMARKS.md.

RLlib's default env-to-module and module-to-env connector pipelines are general (nested
spaces, time ranks, multi-agent mapping, action clipping); for one flat Box observation and
one Discrete action they cost more per step than the emulator. These two connectors do the
same work for that case, and ``LeanPPOModule`` skips the train/eval toggling that the
default module does around every inference call and training minibatch (our MLPs have no
dropout or batch norm, so the mode changes nothing). The learner's pipeline (GAE, batching) stays RLlib's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule


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
    less than ``torch.multinomial`` (BENCHMARKS.md, trainer throughput)."""
    cumulative = np.exp(log_probabilities).cumsum(axis=-1)
    # the first action whose cumulative probability exceeds the draw (scaled by the total,
    # which float32 rounding leaves a hair off 1); `<=` skips zero-probability actions
    actions = (cumulative <= uniforms * cumulative[:, -1:]).sum(axis=-1)
    chosen: np.ndarray = np.minimum(actions, log_probabilities.shape[-1] - 1)  # may round up
    return chosen


class LeanPPOModule(DefaultPPOTorchRLModule):
    """RLlib's default PPO module; inference without switching to eval mode and back, and
    the policy's logits computed in numpy from the module's own parameters when it is a
    plain MLP (Linear, Tanh, ReLU): for a runner's few observations, nine nested torch
    modules cost more than the arithmetic. Training (``forward_train``) stays torch's."""

    def forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        # RLlib's sets train mode on all 24 submodules before every minibatch; nothing here
        # leaves it (inference does not toggle), so set it only when it is not on.
        if not self.training:
            self.train()
        networks = self._train_networks()
        if networks is None or self.inference_only:
            result: dict[str, Any] = RLModule.forward_train(self, batch, **kwargs)
            return result
        # RLlib's _forward_train, as the same torch functions on the same parameters,
        # without the eleven nested module calls around them
        actor, critic = networks
        observations = batch[Columns.OBS]
        return {Columns.EMBEDDINGS: _run_layers(critic, observations),
                Columns.ACTION_DIST_INPUTS: _run_layers(actor, observations)}  # fmt: skip

    def _train_networks(self) -> tuple[list[Any], list[Any]] | None:
        """The actor (its encoder, then the pi head) and the critic's encoder as lists of
        (Linear, activation or None), or None when they are not plain MLPs."""
        if not hasattr(self, "_networks"):
            encoder = self.encoder
            try:
                actor = [encoder.actor_encoder.net.mlp, self.pi.net.mlp]
                critic = [encoder.critic_encoder.net.mlp]
                plain = not getattr(self.pi, "clip_log_std", False)
            except AttributeError:
                actor, critic, plain = [], [], False
            layers = (_torch_layers(actor), _torch_layers(critic)) if plain else (None, None)
            self._networks = None if None in layers else layers
        return self._networks  # type: ignore[return-value]

    def forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._policy_logits(batch, **kwargs)

    def forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._policy_logits(batch, **kwargs)

    def _policy_logits(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        layers = self._numpy_policy()
        if layers is None:
            with torch.no_grad():
                logits: dict[str, Any] = self._forward(batch, **kwargs)
                return logits
        hidden = batch[Columns.OBS].numpy()
        for weight, bias, activation in layers:
            hidden = hidden @ weight + bias
            if activation is not None:
                activation(hidden, out=hidden)
        return {Columns.ACTION_DIST_INPUTS: torch.from_numpy(hidden)}

    def _numpy_policy(self) -> list[tuple[np.ndarray, np.ndarray, Any]] | None:
        """(weight^T, bias, activation) per layer of the actor encoder and the pi head, as
        numpy views of the parameters (they follow in-place weight updates; rebuilt when a
        parameter is replaced), or None when the network is not a plain MLP."""
        if not hasattr(self, "_policy_linears"):
            # the actor's own encoder, or the one it shares with the critic (vf_share_layers)
            actor = getattr(self.encoder, "actor_encoder", None) or getattr(
                self.encoder, "encoder", None
            )
            try:
                sequentials = [actor.net.mlp, self.pi.net.mlp]  # type: ignore[union-attr]
            except AttributeError:  # another encoder layout: torch's forward
                sequentials = []
            self._policy_sequentials = sequentials
            self._policy_linears = [
                module for sequential in sequentials for module in sequential
                if isinstance(module, torch.nn.Linear)
            ]  # fmt: skip
            self._policy_key: list[int] | None = None
        key = [tensor.data_ptr() for linear in self._policy_linears
               for tensor in (linear.weight, linear.bias) if tensor is not None]  # fmt: skip
        if key != self._policy_key:
            self._policy_layers = _mlp_layers(self._policy_sequentials)
            self._policy_key = key
        return self._policy_layers


def _plain_mlp(sequentials: list[Any]) -> list[tuple[torch.nn.Linear, type | None]] | None:
    """(Linear, the activation's type or None) per layer of `sequentials`, or None when they
    hold anything but Linear layers each followed by at most one Tanh or ReLU."""
    layers: list[tuple[torch.nn.Linear, type | None]] = []
    for sequential in sequentials:
        if not isinstance(sequential, torch.nn.Sequential):
            return None
        for module in sequential:
            if isinstance(module, torch.nn.Linear):
                layers.append((module, None))
            elif type(module) in _TORCH_ACTIVATIONS and layers and layers[-1][1] is None:
                layers[-1] = (layers[-1][0], type(module))
            else:
                return None
    return layers or None


_NUMPY_ACTIVATIONS = {torch.nn.Tanh: np.tanh,
                      torch.nn.ReLU: lambda x, out: np.maximum(x, 0, out=out)}  # fmt: skip
_TORCH_ACTIVATIONS = {torch.nn.Tanh: torch.tanh, torch.nn.ReLU: torch.relu}


def _mlp_layers(sequentials: list[Any]) -> list[tuple[np.ndarray, np.ndarray, Any]] | None:
    """(weight^T, bias, numpy activation or None) per layer, as views of the parameters."""
    layers = _plain_mlp(sequentials)
    if layers is None or any(linear.bias is None for linear, _ in layers):
        return None
    return [(linear.weight.detach().numpy().T, linear.bias.detach().numpy(),
             _NUMPY_ACTIVATIONS[activation] if activation else None)
            for linear, activation in layers]  # fmt: skip


def _torch_layers(sequentials: list[Any]) -> list[tuple[Any, Any]] | None:
    """(Linear, torch activation function or None) per layer."""
    layers = _plain_mlp(sequentials)
    if layers is None:
        return None
    return [(linear, _TORCH_ACTIVATIONS[activation] if activation else None)
            for linear, activation in layers]  # fmt: skip


def _run_layers(layers: list[tuple[Any, Any]], hidden: torch.Tensor) -> torch.Tensor:
    for linear, activation in layers:
        hidden = torch.nn.functional.linear(hidden, linear.weight, linear.bias)
        if activation is not None:
            hidden = activation(hidden)
    return hidden


def env_to_module(env: Any = None, spaces: Any = None, device: Any = None) -> ConnectorV2:
    return LatestObservationsToTensor()


def module_to_env(env: Any = None, spaces: Any = None) -> ConnectorV2:
    return SampleCategoricalActions()
