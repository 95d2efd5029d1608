"""Behaviour cloning and DAgger as the policy's warm start, before PPO, on the learner, and
DAgger's rounds during PPO (``DaggerRounds``).

What is cloned and how it is labelled is ``koholint.imitation``'s: the winning trajectory
as the policy sees it, the listed teachers' clean episodes, and ``imitation.corrections``
rounds of DAgger. Here the policy network (the actor encoder and the pi head; the value
network is left alone) is fitted to those actions with cross-entropy and Adam for
``imitation.clone_epochs`` passes of minibatches, and the runners get the cloned weights
before the first sample. The accuracy before and after (the share of steps whose most
likely action is the one taught) is written to the run folder's ``warm_start.json``, with
``env_steps``: the emulator's work of the lessons and the walks, in steps of the frame skip.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns

from koholint.game.emulator import GameBoy
from trainer.ppo.config import TrainConfig

if TYPE_CHECKING:
    from koholint.imitation import Correct
    from koholint.teachers.base import Policy, TaughtReport

logger = logging.getLogger("trainer.ppo.warm_start")
MODULE_ID = DEFAULT_MODULE_ID
CLONE_LEARNING_RATE = 1e-3  # Adam's usual step: the demonstration is a few thousand steps
CLONE_MINIBATCH = 256
POLICY_PREFIXES = ("encoder.actor_encoder.", "pi.")
IMITATION_DATA = "koholint_imitation"
"""The learner's attribute holding what cloning fitted: observations, actions and the
number of steps the warm start fitted."""


def clone_demonstration(algo: Any, config: TrainConfig, run_dir: Path) -> dict[str, Any] | None:
    """Fit the learner's policy to the curriculum's trajectory and the teachers' lessons and
    send it to the runners; what it did (None when cloning is off or there is no trajectory)."""
    from koholint.env.zelda import EnvConfig
    from koholint.imitation import labeller, lesson, lessons

    settings = config.imitation
    if not settings.clone_epochs or not config.curriculum.trajectory:
        return None
    actions = Path(config.curriculum.trajectory).read_bytes()
    frames_before = GameBoy.frames_emulated
    given = lesson(settings, actions, EnvConfig.parse(config.env.model_dump()))
    taught = lessons(settings, given)
    frames = GameBoy.frames_emulated - frames_before
    fit = functools.partial(
        _clone, observations=taught.observations, actions=taught.actions,
        epochs=settings.clone_epochs, seed=config.seed, correct=labeller(settings, given),
        rounds=settings.corrections, smoothing=settings.label_smoothing,
    )  # fmt: skip
    fitted: dict[str, Any] = [result.get() for result in algo.learner_group.foreach_learner(fit)][0]
    algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group,
                                       inference_only=True, timeout_seconds=60.0)  # fmt: skip
    frames += fitted.pop("frames_emulated", 0)  # DAgger's walks, on the learner
    done = {"demo_steps": taught.demo_steps, **taught.taught, "epochs": settings.clone_epochs,
            **fitted, "env_steps": frames // config.env.frame_skip}  # fmt: skip
    (run_dir / "warm_start.json").write_text(json.dumps(done, indent=1) + "\n")
    logger.info("cloned the demonstration: accuracy %.3f -> %.3f", done["accuracy_before"],
                done["accuracy_after"], extra={"event": "warm_start"})  # fmt: skip
    return done


class DaggerRounds:
    """DAgger's rounds during PPO (``imitation.correct_every_env_steps``): after the first
    iteration past each multiple of it, the policy as PPO has made it plays from the
    labellers' starts, their labels join what the warm start fitted, and the cloning goes
    on (``correct_round``). A round before PPO labels a clone's mistakes; PPO then moves
    the policy to states no round saw, and at medium worlds' key halls it stood pressing
    into a block after the fight for the rest of the episode."""

    def __init__(self, config: TrainConfig, run_dir: Path, env_steps: int) -> None:
        self.config, self.run_dir = config, run_dir
        self.every = config.imitation.correct_every_env_steps
        self._next = (env_steps // self.every + 1) * self.every if self.every else 0
        self._correct: Correct | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.every and self.config.imitation.clone_epochs
                    and self.config.curriculum.trajectory)  # fmt: skip

    def due(self, env_steps: int) -> bool:
        return self.enabled and env_steps >= self._next

    def correct(self, algo: Any, env_steps: int, route: int | None = None) -> dict[str, Any]:
        """One round on the learner, the runners given its weights; what it did, also
        appended to the run folder's ``dagger.jsonl`` (``env_steps`` in frame-skip steps).
        `route`: the curriculum's start (a demo step), where ``imitation.route_episodes``
        play from."""
        from koholint.env.zelda import EnvConfig
        from koholint.imitation import labeller, lesson

        if self._correct is None:
            actions = Path(self.config.curriculum.trajectory).read_bytes()
            given = lesson(self.config.imitation, actions,
                           EnvConfig.parse(self.config.env.model_dump()))  # fmt: skip
            self._correct = labeller(self.config.imitation, given)
        if self._correct is None:
            raise ValueError("imitation.correct_every_env_steps needs imitation.labellers")
        fit = functools.partial(correct_round,
                                correct=functools.partial(self._correct, route=route),
                                epochs=self.config.imitation.clone_epochs,
                                seed=self.config.seed + env_steps,
                                smoothing=self.config.imitation.label_smoothing)  # fmt: skip
        results = [result.get() for result in algo.learner_group.foreach_learner(fit)]
        done: dict[str, Any] = results[0]
        algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group,
                                           inference_only=True, timeout_seconds=60.0)  # fmt: skip
        frames = done.pop("frames_emulated")
        done = {
            "at_env_steps": env_steps,
            **done,
            "env_steps": frames // self.config.env.frame_skip,
        }
        with (self.run_dir / "dagger.jsonl").open("a") as file:
            file.write(json.dumps(done) + "\n")
        self._next = (env_steps // self.every + 1) * self.every
        return done


def _clone(learner: Any, *, observations: np.ndarray, actions: np.ndarray, epochs: int,
           seed: int, correct: Callable[[Policy], dict[str, TaughtReport]] | None = None,
           rounds: int = 0, smoothing: float = 0.0) -> dict[str, Any]:  # fmt: skip
    """On a learner: cross-entropy epochs of the policy network on the demonstration, then
    `rounds` of `correct`'s labels on the cloned policy's own walks, each followed by as
    many epochs over everything so far. What was fitted stays on the learner
    (``IMITATION_DATA``) for DAgger's rounds during PPO (``correct_round``)."""
    module = learner.module[MODULE_ID].unwrapped()
    optimizer = _optimizer(module)
    inputs, targets = torch.from_numpy(observations), torch.from_numpy(actions)
    generator = torch.Generator().manual_seed(seed)
    before = _accuracy(module, inputs, targets)
    loss = _fit(module, optimizer, inputs, targets, epochs, generator, smoothing)
    done: dict[str, Any] = {"accuracy_before": before,
                            "accuracy_after": _accuracy(module, inputs, targets)}  # fmt: skip
    corrections = []
    frames_before = GameBoy.frames_emulated
    for _ in range(rounds if correct else 0):
        inputs, targets, corrected = _labelled(module, inputs, targets, correct)  # type: ignore[arg-type]
        corrections.append(corrected)
        loss = _fit(module, optimizer, inputs, targets, epochs, generator, smoothing)
    if corrections:
        done["corrections"] = corrections
        done["accuracy_corrected"] = _accuracy(module, inputs, targets)
    setattr(learner, IMITATION_DATA, (inputs, targets, len(targets)))
    return {**done, "final_loss": loss, "frames_emulated": GameBoy.frames_emulated - frames_before}


def correct_round(learner: Any, *, correct: Callable[[Policy], dict[str, TaughtReport]],
                  epochs: int, seed: int, smoothing: float = 0.0) -> dict[str, Any]:  # fmt: skip
    """On a learner, during PPO: one DAgger round on the policy as it is now (its own states
    from the labellers' starts, labelled), then cloning over everything so far with as many
    minibatch steps as `epochs` took over the warm start's data (fewer passes as the labels
    grow). A resumed run, whose learner kept nothing, starts from this round's labels."""
    module = learner.module[MODULE_ID].unwrapped()
    inputs, targets, first_size = getattr(learner, IMITATION_DATA, (None, None, 0))
    frames_before = GameBoy.frames_emulated
    inputs, targets, corrected = _labelled(module, inputs, targets, correct)
    first_size = first_size or len(targets)
    passes = max(1, round(epochs * first_size / len(targets)))
    generator = torch.Generator().manual_seed(seed)
    loss = _fit(module, _optimizer(module), inputs, targets, passes, generator, smoothing)
    setattr(learner, IMITATION_DATA, (inputs, targets, first_size))
    return {**corrected, "epochs": passes, "labels_in_all": len(targets), "final_loss": loss,
            "frames_emulated": GameBoy.frames_emulated - frames_before}  # fmt: skip


def _labelled(module: Any, inputs: torch.Tensor | None, targets: torch.Tensor | None,
              correct: Callable[[Policy], dict[str, TaughtReport]],
              ) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:  # fmt: skip
    """`correct`'s labels on the module's own play joined to what is fitted (None: nothing
    yet), and per labeller its episodes, clean ones and labels, with the share the module
    already agreed."""
    reports = correct(functools.partial(_sampled_action, module))
    labelled = torch.from_numpy(np.concatenate(
        [report.transitions.observations for report in reports.values()]))  # fmt: skip
    labels = torch.from_numpy(np.concatenate(
        [report.transitions.actions for report in reports.values()]))  # fmt: skip
    corrected = {**{name: {"episodes": report.episodes, "clean": report.clean,
                           "labels": len(report.transitions.actions)}
                    for name, report in reports.items()},
                 "agreed": _accuracy(module, labelled, labels)}  # fmt: skip
    if inputs is None or targets is None:
        return labelled, labels, corrected
    return torch.cat([inputs, labelled]), torch.cat([targets, labels]), corrected


def _optimizer(module: Any) -> torch.optim.Optimizer:
    """Adam over the policy network's parameters (the value network is left alone)."""
    parameters = [parameter for name, parameter in module.named_parameters()
                  if name.startswith(POLICY_PREFIXES)]  # fmt: skip
    return torch.optim.Adam(parameters, lr=CLONE_LEARNING_RATE)


def _fit(module: Any, optimizer: torch.optim.Optimizer, inputs: torch.Tensor,
         targets: torch.Tensor, epochs: int, generator: torch.Generator,
         smoothing: float = 0.0) -> float:  # fmt: skip
    """`epochs` shuffled passes of minibatch cross-entropy (`smoothing`: the share of the
    target spread over every action); the last minibatch's loss."""
    loss = torch.tensor(0.0)
    for _ in range(epochs):
        order = torch.randperm(len(targets), generator=generator)
        for start in range(0, len(order), CLONE_MINIBATCH):
            chosen = order[start : start + CLONE_MINIBATCH]
            logits = _logits(module, inputs[chosen])
            loss = torch.nn.functional.cross_entropy(
                logits, targets[chosen], label_smoothing=smoothing
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return float(loss.detach())


def _sampled_action(module: Any, observation: np.ndarray, rng: np.random.Generator) -> int:
    """The module's action for one observation, sampled as the env runners sample it."""
    with torch.no_grad():
        logits = _logits(module, torch.from_numpy(observation[None, :]))[0].double().numpy()
    weights = np.exp(logits - logits.max())
    return int(rng.choice(len(weights), p=weights / weights.sum()))


def _logits(module: Any, observations: torch.Tensor) -> torch.Tensor:
    logits: torch.Tensor = module.forward_train({Columns.OBS: observations})[
        Columns.ACTION_DIST_INPUTS
    ]
    return logits


def _accuracy(module: Any, observations: torch.Tensor, actions: torch.Tensor) -> float:
    with torch.no_grad():
        chosen = _logits(module, observations).argmax(dim=-1)
    return float((chosen == actions).float().mean())
