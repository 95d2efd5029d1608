"""Bradley-Terry fitting of R_phi: a small torch MLP over the observation vector.

A segment's reward is the **mean** of R_phi over its steps (segments of different lengths
compare fairly). For a pair where A was preferred to B the loss is -log sigmoid(R(A) - R(B)).
A seeded share of the segments is held out (pairs touching them are never trained on, so the
held-out accuracy is measured on segments the model has not seen); training stops when the held-out loss has not
improved for ``patience`` evaluations, and keeps the best weights. The same seed and data give
the same weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from koholint.reward.model import RewardFunction, merge_ensemble
from reward_model.config import FitConfig
from reward_model.preferences import Preference, ScoredSegment


class TrainingError(ValueError):
    """Training could not produce a usable model; the message says why, `reason` in a word
    (too_few_pairs or non_finite, the labels of reward_model_rejected_total)."""

    def __init__(self, message: str, reason: str = "too_few_pairs") -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class FitResult:
    function: RewardFunction
    pairs: int
    heldout_pairs: int
    heldout_accuracy: float
    train_accuracy: float
    steps: int
    heldout_truth_pairs: int = 0
    heldout_truth_accuracy: float | None = None
    """agreement with the RAM ground truth on the held-out pairs that have one"""
    heldout_items: tuple[int, ...] = ()
    """the items (segments or states) of the held-out pairs"""


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


def _held_out(groups: list[str], config: FitConfig) -> set[int]:
    """The items of a seeded share of the segments (an item's group)."""
    names = list(dict.fromkeys(groups))
    order = np.random.default_rng(config.seed).permutation(len(names))
    chosen = {names[i] for i in order[: max(1, int(round(len(names) * config.heldout_fraction)))]}
    return {index for index, group in enumerate(groups) if group in chosen}


def _split(
    groups: list[str], pairs: list[Preference], config: FitConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Hold out a seeded share of the *segments* (an item's group; a state's is its segment):
    training pairs join two training items, held-out pairs have at least one item from a
    segment the model never saw (an honest accuracy)."""
    unseen = _held_out(groups, config)
    segments = len(set(groups))
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


def fit(
    segments: list[ScoredSegment],
    pairs: list[Preference],
    config: FitConfig,
    init_seed: int | None = None,
    ties: Sequence[tuple[int, int]] = (),
) -> FitResult:
    """Fit R_phi to the pairs, and to the `ties` (item pairs judged the same) with
    ``config.tie_weight`` (initial weights from `init_seed`, default the config's seed);
    raises TrainingError on too few pairs or a non-finite loss."""
    if len(pairs) < 2:
        raise TrainingError(f"{len(pairs)} preference pairs: need at least 2 (one held out)")
    groups = [segment.group or segment.prefix for segment in segments]
    train_index, heldout_index = _split(groups, pairs, config)
    preferred = torch.tensor([pair.preferred for pair in pairs])
    other = torch.tensor([pair.other for pair in pairs])
    rewards = _SegmentRewards(segments)
    with torch.random.fork_rng():
        torch.manual_seed(config.seed if init_seed is None else init_seed)
        network = _network(segments[0].observations.shape[1], config.hidden_sizes)
    optimizer = torch.optim.Adam(
        network.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    train, heldout = torch.from_numpy(train_index), torch.from_numpy(heldout_index)
    tie_train, no_ties = _tie_split(groups, ties, config), torch.zeros((0, 2), dtype=torch.long)

    def loss_of(values: torch.Tensor, index: torch.Tensor, tied: torch.Tensor) -> torch.Tensor:
        loss = -nn.functional.logsigmoid(values[preferred[index]] - values[other[index]]).mean()
        if len(tied) and config.tie_weight:
            gap = values[tied[:, 0]] - values[tied[:, 1]]
            both = nn.functional.logsigmoid(gap) + nn.functional.logsigmoid(-gap)
            loss = loss - config.tie_weight * 0.5 * both.mean()
        return loss

    best = (float("inf"), [p.detach().clone() for p in network.parameters()], 0)
    waited, step = 0, 0
    for step in range(1, config.max_steps + 1):
        loss = loss_of(rewards(network), train, tie_train)
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
                # decided pairs only: the tie term is least at the untrained network's flat
                # R_phi, and with it the held-out loss would stop training at once
                heldout_loss = float(loss_of(rewards(network), heldout, no_ties))
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
        result = _result(network, rewards, preferred, other, train, heldout, best[2] or step)
    truth = torch.tensor([pair.truth for pair in pairs])[heldout]
    with torch.no_grad():
        values = rewards(network)
    ordered = (values[preferred[heldout]] > values[other[heldout]]).long() * 2 - 1
    known = truth != 0
    agrees = (ordered[known] == truth[known]).float()
    items = {
        int(i) for index in heldout_index for i in (pairs[index].preferred, pairs[index].other)
    }
    return replace(
        result, heldout_truth_pairs=int(known.sum()),
        heldout_truth_accuracy=float(agrees.mean()) if len(agrees) else None,
        heldout_items=tuple(sorted(items)),
    )  # fmt: skip


def _tie_split(
    groups: list[str], ties: Sequence[tuple[int, int]], config: FitConfig
) -> torch.Tensor:
    """The tie pairs on the training side of the split (none touches a held-out segment)."""
    unseen = _held_out(groups, config)
    kept = [pair for pair in ties if not set(pair) & unseen]
    return torch.tensor(kept, dtype=torch.long).reshape(-1, 2)


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


@dataclass(frozen=True)
class EnsembleResult:
    """The members' mean as one R_phi (``merged``, measured like a single fit) and how much the
    members disagree on what none of them was trained on."""

    merged: FitResult
    members: list[FitResult]
    disagreement: float | None
    """held-out items: the std across members of their normalised R_phi, averaged"""
    member_agreement: float | None
    """held-out pairs on which every member prefers the same item"""


def fit_ensemble(
    segments: list[ScoredSegment],
    pairs: list[Preference],
    config: FitConfig,
    ties: Sequence[tuple[int, int]] = (),
) -> EnsembleResult:
    """`config.ensemble_size` fits from seeds seed, seed+1, ... on one held-out split, merged
    into one MLP (``merge_ensemble``) whose held-out accuracies are measured again."""
    members = [
        fit(segments, pairs, config, config.seed + m, ties) for m in range(config.ensemble_size)
    ]
    first = members[0]
    if len(members) == 1:
        return EnsembleResult(first, members, None, None)
    function = merge_ensemble([member.function for member in members])
    steps = np.concatenate([segment.observations for segment in segments])
    raw = function(steps)
    function = replace(
        function, output_mean=float(raw.mean()), output_std=max(float(raw.std()), 1e-6)
    )
    means = _item_means(segments, function)
    held = set(first.heldout_items)
    heldout = [i for i, p in enumerate(pairs) if p.preferred in held or p.other in held]
    train = sorted(set(range(len(pairs))) - set(heldout))
    merged = replace(
        first, function=function, steps=max(member.steps for member in members),
        heldout_accuracy=_accuracy(means, pairs, heldout),
        train_accuracy=_accuracy(means, pairs, train),
        heldout_truth_accuracy=_truth_accuracy(means, pairs, heldout),
    )  # fmt: skip
    held_items = [segments[i] for i in first.heldout_items]
    per_member = np.stack([_item_means(held_items, m.function, normalised=True) for m in members])
    winners = [pairs[i].preferred for i in heldout]
    losers = [pairs[i].other for i in heldout]
    member_means = [_item_means(segments, member.function) for member in members]
    orders = np.stack([np.sign(means[winners] - means[losers]) for means in member_means])
    return EnsembleResult(
        merged, members, disagreement=float(per_member.std(axis=0).mean()),
        member_agreement=float((orders == orders[0]).all(axis=0).mean()) if heldout else None,
    )  # fmt: skip


def _item_means(
    items: list[ScoredSegment], function: RewardFunction, normalised: bool = False
) -> np.ndarray:
    apply = function.normalised if normalised else function
    return np.array([float(apply(item.observations).mean()) for item in items])


def _accuracy(means: np.ndarray, pairs: list[Preference], index: list[int]) -> float:
    if not index:
        return 0.0
    return float(np.mean([means[pairs[i].preferred] > means[pairs[i].other] for i in index]))


def _truth_accuracy(means: np.ndarray, pairs: list[Preference], index: list[int]) -> float | None:
    known = [i for i in index if pairs[i].truth]
    if not known:
        return None
    agree = [
        (1 if means[pairs[i].preferred] > means[pairs[i].other] else -1) == pairs[i].truth
        for i in known
    ]
    return float(np.mean(agree))
