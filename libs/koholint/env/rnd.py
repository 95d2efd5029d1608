"""Random Network Distillation: curiosity on the 128-float observation, kept small.

A fixed random *target* network embeds each observation; a *predictor* learns to match
it. The prediction error is high on observations unlike those seen before: that error is
the intrinsic reward. As in Burda et al. (2018): observations are normalised by running
mean and std (clipped to [-5, 5]) before both networks, and the intrinsic reward is divided
by a running std of the discounted intrinsic return.

**The 30% rule** (``IntrinsicBudget``), per step within an episode: the intrinsic reward
paid at step t is the smaller of the raw intrinsic reward and what is left of the budget

    paid_t = min(r_int_t, ratio * sum_{s<=t} |r_ext_s| - sum_{s<t} paid_s)

so at every step of every episode the intrinsic reward paid so far is at most ``ratio``
(0.3) of the extrinsic magnitude so far. Curiosity can still pay on steps without
extrinsic reward while budget remains; an episode with no extrinsic reward gets none.
(The environment's coverage reward counts as extrinsic.)

Under a sparse reward that rule pays nothing at all: the only extrinsic reward is the win,
which ends the episode, so the budget is 0 at every step curiosity could pay. There the
budget is measured against an *allowance* as well (``sparse_allowance``): the win's reward
pro-rated over the episode's steps, ``allowance_per_step * t`` at step t, and the larger of
the two counts:

    paid_t = min(r_int_t, ratio * max(sum_{s<=t} |r_ext_s|, allowance_per_step * t)
                          - sum_{s<t} paid_s)

so curiosity pays at most 30% of what winning pays over a whole episode, no faster than
evenly over its steps (a budget not spent early stays for novelty found later).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

INTRINSIC_RATIO = 0.3


def sparse_allowance(reward_mode: str, win_weight: float, max_episode_steps: int) -> float:
    """The allowance per step under the sparse reward (the win's reward over the episode's
    steps); 0 in the other modes, whose extrinsic reward is dense enough to budget against."""
    if reward_mode != "sparse":
        return 0.0
    return abs(win_weight) / max(max_episode_steps, 1)


class IntrinsicBudgets:
    """Pays intrinsic reward out of a budget of `ratio` times the extrinsic magnitude so far
    (or `allowance_per_step` times the steps so far, if larger), for `count` episodes side by
    side (one per env of a vector env)."""

    def __init__(self, count: int = 1, ratio: float = INTRINSIC_RATIO,
                 allowance_per_step: float = 0.0) -> None:  # fmt: skip
        if not 0.0 <= ratio <= 1.0:
            raise ValueError(f"ratio {ratio} must be within [0, 1]")
        if not (np.isfinite(allowance_per_step) and allowance_per_step >= 0):
            raise ValueError(f"allowance_per_step {allowance_per_step} must be finite and >= 0")
        self.ratio = ratio
        self.allowance_per_step = allowance_per_step
        self.extrinsic = np.zeros(count)  # |extrinsic| so far in each episode
        self.paid = np.zeros(count)  # intrinsic paid so far in each episode
        self.steps = np.zeros(count)  # steps so far in each episode

    def reset(self, rows: Any = slice(None)) -> None:
        """New episodes for `rows` (indices or a mask; all by default)."""
        self.extrinsic[rows] = 0.0
        self.paid[rows] = 0.0
        self.steps[rows] = 0.0

    def grant(self, rows: Any, extrinsic: Any, intrinsic: Any) -> np.ndarray:
        """The intrinsic reward to pay `rows` this step (never negative, never over budget)."""
        self.extrinsic[rows] += np.abs(extrinsic)
        self.steps[rows] += 1.0
        measure = np.maximum(self.extrinsic[rows], self.allowance_per_step * self.steps[rows])
        budget = np.maximum(self.ratio * measure - self.paid[rows], 0.0)
        paid: np.ndarray = np.minimum(np.maximum(intrinsic, 0.0), budget)
        self.paid[rows] += paid
        return paid


class IntrinsicBudget:
    """One episode's budget (``IntrinsicBudgets`` of one)."""

    def __init__(self, ratio: float = INTRINSIC_RATIO, allowance_per_step: float = 0.0) -> None:
        self._budgets = IntrinsicBudgets(1, ratio, allowance_per_step)
        self.ratio = ratio

    def reset(self) -> None:
        self._budgets.reset()

    def grant(self, extrinsic: float, intrinsic: float) -> float:
        """The intrinsic reward to pay this step (never negative, never over the budget)."""
        return float(self._budgets.grant(0, extrinsic, intrinsic))


class RunningMeanStd:
    """Mean and variance over everything seen so far (parallel Welford updates)."""

    def __init__(self, shape: tuple[int, ...] = ()) -> None:
        self.mean = np.zeros(shape, np.float64)
        self.var = np.ones(shape, np.float64)
        self.count = 1e-4

    def update(self, batch: np.ndarray) -> None:
        batch_mean, batch_var, batch_count = batch.mean(axis=0), batch.var(axis=0), batch.shape[0]
        delta = batch_mean - self.mean
        total = self.count + batch_count
        self.mean = self.mean + delta * batch_count / total
        m2 = (
            self.var * self.count
            + batch_var * batch_count
            + delta**2 * self.count * batch_count / total
        )
        self.var = m2 / total
        self.count = total

    def update_one(self, value: float) -> None:
        """``update`` for a single scalar, without array overhead (called every env step)."""
        total = self.count + 1.0
        delta = value - float(self.mean)
        self.mean = self.mean + delta / total
        self.var = (self.var * self.count + delta * delta * self.count / total) / total
        self.count = total

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.var) + 1e-8


def _numpy_layers(network: nn.Sequential) -> list[tuple[np.ndarray, np.ndarray]]:
    """(weight^T, bias) of each linear layer as numpy views of the torch parameters: they
    follow the optimizer's in-place updates without copying."""
    return [
        (layer.weight.detach().numpy().T, layer.bias.detach().numpy())
        for layer in network
        if isinstance(layer, nn.Linear)
    ]


class _PairedNetworks:
    """The target and predictor MLPs evaluated together in numpy: the first layers side by
    side (one matmul), the later ones as a stack of two (one batched matmul each). For a
    few observations a step (one per env) the number of numpy calls costs more than the
    arithmetic, and torch's per-call overhead ~10x more again. A copy of the weights:
    rebuilt after every predictor step."""

    def __init__(
        self,
        target: list[tuple[np.ndarray, np.ndarray]],
        predictor: list[tuple[np.ndarray, np.ndarray]],
    ) -> None:
        (target_weight, target_bias), *target_rest = target
        (predictor_weight, predictor_bias), *predictor_rest = predictor
        self.first_weight = np.ascontiguousarray(
            np.concatenate([target_weight, predictor_weight], axis=1)
        )
        self.first_bias = np.concatenate([target_bias, predictor_bias])
        self.rest = [
            (np.stack([weight_t, weight_p]), np.stack([bias_t, bias_p])[:, None, :])
            for (weight_t, bias_t), (weight_p, bias_p) in zip(
                target_rest, predictor_rest, strict=True
            )
        ]

    def difference(self, inputs: np.ndarray) -> np.ndarray:
        """predictor(inputs) - target(inputs), one row per input."""
        hidden = inputs @ self.first_weight + self.first_bias
        np.maximum(hidden, 0.0, out=hidden)
        # (n, 2h) -> (2, n, h): row 0 the target's hidden units, row 1 the predictor's
        stacked = hidden.reshape(len(inputs), 2, -1).transpose(1, 0, 2)
        for index, (weight, bias) in enumerate(self.rest):
            stacked = np.matmul(stacked, weight) + bias
            if index < len(self.rest) - 1:
                np.maximum(stacked, 0.0, out=stacked)
        difference: np.ndarray = stacked[1] - stacked[0]
        return difference


def _mlp(inputs: int, hidden: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(inputs, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, outputs),
    )


@dataclass
class RndConfig:
    observation_size: int = 128
    """length of the observation vector"""
    hidden: int = 128
    """width of both networks' hidden layers"""
    embedding: int = 64
    """size of the target's random embedding"""
    learning_rate: float = 1e-3
    """predictor's Adam learning rate"""
    gamma: float = 0.99
    """discount of the intrinsic return whose running std normalises the reward"""
    seed: int = 0
    """seeds the target network: the same seed, the same curiosity"""


class Rnd:
    """Intrinsic rewards for batches of observations, and the predictor's training step."""

    def __init__(self, config: RndConfig | None = None) -> None:
        self.config = config = config or RndConfig()
        with torch.random.fork_rng():  # seeded networks, the caller's RNG untouched
            torch.manual_seed(config.seed)
            self.target = _mlp(config.observation_size, config.hidden, config.embedding)
            torch.manual_seed(config.seed + 1)
            self.predictor = _mlp(config.observation_size, config.hidden, config.embedding)
        self.target.requires_grad_(False)
        self._target_layers = _numpy_layers(self.target)
        self._predictor_layers = _numpy_layers(self.predictor)
        self.optimizer = torch.optim.Adam(self.predictor.parameters(), lr=config.learning_rate)
        self.observation_stats = RunningMeanStd((config.observation_size,))
        self.return_stats = RunningMeanStd()
        self._running_return = 0.0
        self._stream_returns: dict[Any, float] = {}
        self._refresh_normalisation()
        self._refresh_paired()

    def _refresh_paired(self) -> None:
        self._paired = _PairedNetworks(self._target_layers, self._predictor_layers)

    def _refresh_normalisation(self) -> None:
        """The observation statistics as float32 shift and scale: they change only in
        ``train``, and per-step inference in float32 skips two float64 passes and a sqrt."""
        self._shift = self.observation_stats.mean.astype(np.float32)
        self._scale = (1.0 / self.observation_stats.std).astype(np.float32)

    def _normalise(self, observations: np.ndarray) -> np.ndarray:
        scaled = (np.asarray(observations, np.float32) - self._shift) * self._scale
        clipped: np.ndarray = np.clip(scaled, -5.0, 5.0, out=scaled)
        return clipped

    def errors(self, observations: np.ndarray) -> np.ndarray:
        """Raw prediction errors (mean squared, per observation)."""
        difference = self._paired.difference(self._normalise(observations))
        # sum / size: the mean without np.mean's Python-level wrapper (a few us a call)
        errors: np.ndarray = np.square(difference).sum(axis=1) / self.config.embedding
        return errors

    def intrinsic_rewards(self, observations: np.ndarray) -> np.ndarray:
        """Errors divided by the running std of the discounted intrinsic return."""
        errors = self.errors(observations)
        for error in errors:
            self._running_return = self._running_return * self.config.gamma + float(error)
            self.return_stats.update_one(self._running_return)
        return (errors / float(self.return_stats.std)).astype(np.float32)

    def stream_intrinsic_rewards(self, observations: np.ndarray, streams: Any) -> np.ndarray:
        """``intrinsic_rewards`` for one observation from each of several envs in one pass:
        row i comes from env ``streams[i]``, and each env keeps its own discounted intrinsic
        return (Burda et al.'s per-env reward filter); the running std is over all of them.
        With a single stream it gives exactly what ``intrinsic_rewards`` gives."""
        errors = self.errors(observations)
        gamma, returns = self.config.gamma, self._stream_returns
        for stream, error in zip(streams, errors.tolist(), strict=True):
            running = returns.get(stream, 0.0) * gamma + error
            returns[stream] = running
            self.return_stats.update_one(running)
        return (errors / float(self.return_stats.std)).astype(np.float32)

    def train(self, observations: np.ndarray) -> float:
        """Update the observation statistics and take one predictor step; returns the loss."""
        self.observation_stats.update(observations)
        self._refresh_normalisation()
        inputs = torch.from_numpy(self._normalise(observations))
        loss = (self.predictor(inputs) - self.target(inputs)).pow(2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self._refresh_paired()
        return float(loss.detach())
