"""Self-imitation learning (Oh et al., 2018) inside RLlib's PPO learner (new API stack).

``SilPPOTorchLearner`` is PPO's torch learner (the trainer's lean one) plus two things:

* a top-K buffer (``TopSegments``) of the best episode segments seen, by return: each update's
  episodes (the env runners' chunks) are offered to it before PPO's connectors run;
* every ``period``-th update, PPO's loss of every minibatch gains ``weight`` times the SIL loss
  on ``batch_size`` steps sampled from the buffer::

      policy: -log pi(a|s) * (R - V(s))+        value: 1/2 * ((R - V(s))+)^2

  where R is the discounted return from s to the end of its segment (a lower bound of the
  true return when the segment was cut before the episode ended and rewards ahead are >= 0),
  and (x)+ = max(x, 0) is held constant in the policy term. Only actions that did better than
  the value expected are imitated.

With ``demo_trajectory`` (robustification), the winning trajectory's own steps are pinned in
the buffer, never evicted: replayed once under the training env's rewards, they are imitated
wherever they did better than the value expects, as Go-Explore's robustification did with
its demonstration. Without them the buffer held only the policy's own segments, and at the
curriculum's stall (the dungeon key, a few steps the other way from where the later starts
had taught it to go) there was no winning segment from there to imitate.

Settings travel in ``learner_config_dict`` (``sil_settings``); off unless ``weight`` > 0.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from pydantic import Field
from ray.rllib.core.columns import Columns

from koholint.schemas.env import EnvSettings
from trainer.ppo.config import SelfImitation
from trainer.ppo.rllib.learner import LeanPPOTorchLearner

SIL_KEY = "sil"


class SilSettings(SelfImitation):
    """What the SIL learner is given: the run's settings and what it must know besides."""

    batch_size: int = Field(256, ge=1, le=1_000_000)
    """buffer steps per SIL loss"""
    gamma: float = Field(0.99, gt=0, le=1)
    """discount of the returns R (PPO's gamma)"""
    seed: int = Field(0, ge=0)
    """seeds the buffer's sampling"""
    demo_trajectory: str = ""
    """a winning trajectory (one action per byte) whose steps are pinned in the buffer; empty = none"""
    demo_env: EnvSettings | None = None
    """the training env's settings, whose rewards the demonstration is replayed under"""


@dataclass(frozen=True)
class Segment:
    score: float
    """the segment's (undiscounted) return: what ranks it"""
    observations: np.ndarray
    actions: np.ndarray
    returns: np.ndarray
    """discounted return from each step to the segment's end"""


def discounted_returns(rewards: np.ndarray, gamma: float) -> np.ndarray:
    returns = np.zeros(len(rewards), np.float32)
    running = 0.0
    for index in range(len(rewards) - 1, -1, -1):
        running = float(rewards[index]) + gamma * running
        returns[index] = running
    return returns


class TopSegments:
    """The K segments with the highest return seen so far (ties: the earlier stays)."""

    def __init__(self, capacity: int, seed: int = 0) -> None:
        self.capacity = capacity
        self._heap: list[tuple[float, int, Segment]] = []
        self._pinned: list[Segment] = []
        self._count = 0
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return len(self._heap) + len(self._pinned)

    def pin(self, segment: Segment) -> None:
        """Keep `segment` for good, outside the K best (the demonstration)."""
        self._pinned.append(segment)

    def offer(self, segment: Segment) -> bool:
        """Keep `segment` if it is among the best K; returns whether it was kept."""
        self._count += 1
        entry = (segment.score, -self._count, segment)
        if len(self._heap) < self.capacity:
            heapq.heappush(self._heap, entry)
            return True
        if entry[:2] > self._heap[0][:2]:
            heapq.heapreplace(self._heap, entry)
            return True
        return False

    def scores(self) -> list[float]:
        kept = [entry[0] for entry in self._heap] + [segment.score for segment in self._pinned]
        return sorted(kept, reverse=True)

    def sample(self, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`count` (observation, action, return) steps drawn uniformly from all kept steps."""
        segments = [entry[2] for entry in self._heap] + self._pinned
        observations = np.concatenate([segment.observations for segment in segments])
        actions = np.concatenate([segment.actions for segment in segments])
        returns = np.concatenate([segment.returns for segment in segments])
        index = self._rng.integers(0, len(actions), size=count)
        return observations[index], actions[index], returns[index]


def segment_of(episode: Any, gamma: float) -> Segment | None:
    """A SingleAgentEpisode chunk as a segment (None when it has no steps)."""
    rewards = np.asarray(episode.get_rewards(), np.float32)
    if len(rewards) == 0:
        return None
    observations = np.asarray(episode.get_observations(), np.float32)[: len(rewards)]
    actions = np.asarray(episode.get_actions(), np.int64)
    return Segment(float(rewards.sum()), observations, actions, discounted_returns(rewards, gamma))


def demo_segment(settings: SilSettings) -> Segment:
    """The demonstration (``settings.demo_trajectory``) replayed under the training env's
    rewards, as one segment that ends at the credits."""
    from koholint.env.zelda import EnvConfig
    from koholint.explore.demo import demo_transitions

    with open(settings.demo_trajectory, "rb") as file:
        actions = file.read()
    demo = demo_transitions(actions, EnvConfig.parse(dict(settings.demo_env or {})))
    returns = discounted_returns(demo.rewards, settings.gamma)
    return Segment(float(demo.rewards.sum()), demo.observations, demo.actions, returns)


def sil_loss(module: Any, observations: torch.Tensor, actions: torch.Tensor,
             returns: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:  # fmt: skip
    """The SIL loss of a PPO module on buffer samples, and what to log about it."""
    batch = {Columns.OBS: observations}
    outputs = module.forward_train(batch)
    log_probabilities = torch.log_softmax(outputs[Columns.ACTION_DIST_INPUTS], dim=-1)
    chosen = log_probabilities.gather(-1, actions[:, None]).squeeze(-1)
    values = module.compute_values(batch)
    advantage = torch.clamp(returns - values, min=0.0)
    policy = -(chosen * advantage.detach()).mean()
    value = 0.5 * advantage.pow(2).mean()
    stats = {"policy_loss": float(policy.detach()), "value_loss": float(value.detach()),
             "imitated_share": float((advantage > 0).float().mean())}  # fmt: skip
    return policy + value, stats


class SilPPOTorchLearner(LeanPPOTorchLearner):
    """PPO's torch learner with the SIL loss added every `period`-th update."""

    def build(self) -> None:
        super().build()
        self.sil = SilSettings(**self.config.learner_config_dict.get(SIL_KEY, {}))
        self.sil_buffer = TopSegments(self.sil.capacity, self.sil.seed)
        if self.sil.demo_trajectory:
            self.sil_buffer.pin(demo_segment(self.sil))
        self._sil_updates = 0
        self._sil_now = False

    def update(self, *args: Any, **kwargs: Any) -> Any:
        training_data = kwargs.get("training_data")
        episodes = kwargs.get("episodes") or (training_data.episodes if training_data else None)
        for episode in episodes or []:
            segment = segment_of(episode, self.sil.gamma)
            if segment is not None:
                self.sil_buffer.offer(segment)
        self._sil_updates += 1
        self._sil_now = (
            self.sil.weight > 0
            and len(self.sil_buffer) > 0
            and self._sil_updates % self.sil.period == 0
        )
        return super().update(*args, **kwargs)

    def compute_loss_for_module(self, *, module_id: Any, config: Any, batch: dict[str, Any],
                                fwd_out: dict[str, Any]) -> Any:  # fmt: skip
        loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        if not self._sil_now:
            return loss
        observations, actions, returns = self.sil_buffer.sample(self.sil.batch_size)
        device = loss.device
        extra, stats = sil_loss(
            self.module[module_id].unwrapped(), torch.from_numpy(observations).to(device),
            torch.from_numpy(actions).to(device), torch.from_numpy(returns).to(device),
        )  # fmt: skip
        stats["buffer_best_return"] = self.sil_buffer.scores()[0]
        self.metrics.log_dict({f"sil_{name}": value for name, value in stats.items()},
                              key=module_id, window=1)  # fmt: skip
        return loss + self.sil.weight * extra


def sil_training_settings(settings: SilSettings) -> dict[str, Any]:
    """Keyword arguments for ``PPOConfig.training``: the SIL learner when on, else none."""
    if settings.weight <= 0:
        return {}
    return {
        "learner_class": SilPPOTorchLearner,
        "learner_config_dict": {SIL_KEY: settings.model_dump()},
    }
