"""Bradley-Terry fitting of R_phi: a small torch MLP over the observation vector.

A segment's reward is the **mean** of R_phi over its steps (segments of different lengths
compare fairly). For a pair where A was preferred to B the loss is -log sigmoid(R(A) - R(B)).
A seeded share of the segments is held out (pairs touching them are never trained on, so the
held-out accuracy is measured on segments the model has not seen); training stops when the held-out loss has not
improved for ``patience`` evaluations, and keeps the best weights. The same seed and data give
the same weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from koholint.reward.model import RewardFunction
from reward_model.preferences import Preference, ScoredSegment


class TrainingError(ValueError):
    """Training could not produce a usable model; the message says why, `reason` in a word
    (too_few_pairs or non_finite, the labels of reward_model_rejected_total)."""

    def __init__(self, message: str, reason: str = "too_few_pairs") -> None:
        super().__init__(message)
        self.reason = reason


class FitConfig(BaseModel):
    """How R_phi is fitted; the reward-model service's settings carry these fields."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    hidden_sizes: list[Annotated[int, Field(ge=1, le=4096)]] = Field(
        default_factory=lambda: [64, 64], min_length=1, max_length=8
    )
    """R_phi's hidden layers (ReLU)"""
    learning_rate: float = Field(3e-3, gt=0, le=1)
    """Adam step size"""
    weight_decay: float = Field(1e-2, ge=0, le=1)
    """L2 on the weights: with a few hundred segments over 128 inputs, R_phi overfits without it"""
    max_steps: int = Field(400, ge=1, le=100_000)
    """full-batch Adam steps at most"""
    evaluate_every: int = Field(5, ge=1, le=100_000)
    """steps between held-out evaluations"""
    patience: int = Field(8, ge=1, le=1000)
    """evaluations without a better held-out loss before stopping"""
    heldout_fraction: float = Field(0.2, gt=0, lt=1)
    """share of the segments held out: pairs touching them measure accuracy and stop early"""
    seed: int = Field(0, ge=0, le=2**31 - 1)
    """seeds the held-out split and the network's initial weights"""


@dataclass(frozen=True)
class FitResult:
    function: RewardFunction
    pairs: int
    heldout_pairs: int
    heldout_accuracy: float
    train_accuracy: float
    steps: int


def _network(inputs: int, hidden_sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for width in hidden_sizes:
        layers += [nn.Linear(inputs, width), nn.ReLU()]
        inputs = width
    return nn.Sequential(*layers, nn.Linear(inputs, 1))


class _SegmentRewards:
    """Every segment's mean R_phi in one forward pass over all their steps."""

    def __init__(self, segments: list[ScoredSegment]) -> None:
        self.steps = torch.from_numpy(np.concatenate([s.observations for s in segments]))
        lengths = torch.tensor([len(s.observations) for s in segments])
        self.owner = torch.repeat_interleave(torch.arange(len(segments)), lengths)
        self.lengths = lengths.float()

    def __call__(self, network: nn.Module) -> torch.Tensor:
        per_step = network(self.steps).squeeze(-1)
        totals = torch.zeros(len(self.lengths)).index_add_(0, self.owner, per_step)
        return totals / self.lengths


def _split(
    segments: int, pairs: list[Preference], config: FitConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Hold out a seeded share of the *segments*: training pairs join two training segments,
    held-out pairs have at least one segment the model never saw (an honest accuracy)."""
    order = np.random.default_rng(config.seed).permutation(segments)
    unseen = set(order[: max(1, int(round(segments * config.heldout_fraction)))].tolist())
    heldout = np.array(
        [i for i, p in enumerate(pairs) if {p.preferred, p.other} & unseen], np.int64
    )
    train = np.array(
        [i for i, p in enumerate(pairs) if not {p.preferred, p.other} & unseen], np.int64
    )
    if len(train) < 1 or len(heldout) < 1:
        raise TrainingError(
            f"{len(pairs)} pairs over {segments} segments leave {len(train)} to train on and "
            f"{len(heldout)} held out: wait for more scored segments"
        )
    return train, heldout


def fit(segments: list[ScoredSegment], pairs: list[Preference], config: FitConfig) -> FitResult:
    """Fit R_phi to the pairs; raises TrainingError on too few pairs or a non-finite loss."""
    if len(pairs) < 2:
        raise TrainingError(f"{len(pairs)} preference pairs: need at least 2 (one held out)")
    train_index, heldout_index = _split(len(segments), pairs, config)
    preferred = torch.tensor([pair.preferred for pair in pairs])
    other = torch.tensor([pair.other for pair in pairs])
    rewards = _SegmentRewards(segments)
    with torch.random.fork_rng():
        torch.manual_seed(config.seed)
        network = _network(segments[0].observations.shape[1], config.hidden_sizes)
    optimizer = torch.optim.Adam(
        network.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    train, heldout = torch.from_numpy(train_index), torch.from_numpy(heldout_index)

    def loss_of(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return -nn.functional.logsigmoid(values[preferred[index]] - values[other[index]]).mean()

    best = (float("inf"), [p.detach().clone() for p in network.parameters()], 0)
    waited, step = 0, 0
    for step in range(1, config.max_steps + 1):
        loss = loss_of(rewards(network), train)
        if not torch.isfinite(loss):
            raise TrainingError(
                f"training loss became {float(loss.detach())} (NaN or inf) at step {step}; no version",
                "non_finite",
            )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % config.evaluate_every == 0:
            with torch.no_grad():
                heldout_loss = float(loss_of(rewards(network), heldout))
            if heldout_loss < best[0]:
                best, waited = (
                    (heldout_loss, [p.detach().clone() for p in network.parameters()], step),
                    0,
                )
            else:
                waited += 1
                if waited >= config.patience:
                    break
    with torch.no_grad():
        for parameter, saved in zip(network.parameters(), best[1], strict=True):
            parameter.copy_(saved)
        return _result(network, rewards, preferred, other, train, heldout, best[2] or step)


def _result(network: nn.Sequential, rewards: _SegmentRewards, preferred: torch.Tensor,
            other: torch.Tensor, train: torch.Tensor, heldout: torch.Tensor, steps: int) -> FitResult:  # fmt: skip
    values = rewards(network)
    correct = values[preferred] > values[other]
    per_step = network(rewards.steps).squeeze(-1)
    layers = tuple(
        (layer.weight.detach().numpy().T.copy(), layer.bias.detach().numpy().copy())
        for layer in network
        if isinstance(layer, nn.Linear)
    )
    mean, std = float(per_step.mean()), max(float(per_step.std()), 1e-6)
    if not all(np.isfinite(w).all() and np.isfinite(b).all() for w, b in layers) or not np.isfinite(
        mean + std
    ):
        raise TrainingError("the trained weights hold NaN or inf; no version", "non_finite")
    return FitResult(
        RewardFunction(layers, mean, std), pairs=len(train), heldout_pairs=len(heldout),
        heldout_accuracy=float(correct[heldout].float().mean()),
        train_accuracy=float(correct[train].float().mean()), steps=steps,
    )  # fmt: skip
