"""The lean PPO learner makes RLlib's PPO updates: the same weights from the same batch."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

from trainer.ppo.config import TrainConfig
from trainer.ppo.rllib.algorithm import learner_settings
from trainer.ppo.rllib.learner import LeanPPOTorchLearner
from trainer.ppo.rllib.sampling import LeanPPOModule

from .conftest import cartpole_ppo


def lean_or_not(learner_class: type) -> Any:
    """RLlib's learner and module, or the lean learner with the lean module."""
    module_class = LeanPPOModule if learner_class is LeanPPOTorchLearner else None
    return cartpole_ppo(256, module_class, train_batch_size_per_learner=256, minibatch_size=64,
                        num_epochs=2, learner_class=learner_class)  # fmt: skip


LOSS_STATISTICS = ("policy_loss", "vf_loss", "vf_loss_unclipped", "vf_explained_var", "entropy",
                   "mean_kl_loss", "curr_kl_coeff", "total_loss")  # fmt: skip


def loss_statistics(results: Any) -> dict[str, float]:
    """The update's loss statistics for the policy, from LearnerGroup.update's results."""
    module = (results[0] if isinstance(results, list) else results)["default_policy"]
    return {key: float(np.asarray(_value(module[key]))) for key in LOSS_STATISTICS}


def _value(stat: Any) -> Any:
    return stat.peek() if hasattr(stat, "peek") else stat


def weights(algo: Any) -> dict[str, np.ndarray]:
    state = algo.learner_group._learner.module["default_policy"].state_dict()
    return {name: tensor.detach().numpy().copy() for name, tensor in state.items()}


def test_the_trainer_uses_the_lean_learner_sil_or_not():
    assert learner_settings(TrainConfig.load({}, {}))["learner_class"] is LeanPPOTorchLearner
    sil = learner_settings(TrainConfig.load({"sil": {"weight": 0.1}}, {}))["learner_class"]
    assert issubclass(sil, LeanPPOTorchLearner)


def test_updates_from_the_same_batch_give_the_same_weights(local_ray: None):
    rllib, lean = lean_or_not(PPOTorchLearner), lean_or_not(LeanPPOTorchLearner)
    try:
        lean.learner_group._learner.module.set_state(
            rllib.learner_group._learner.module.get_state()
        )
        episodes = rllib.env_runner.sample(num_timesteps=256)
        before = weights(rllib)
        statistics: list[list[dict[str, float]]] = []
        for algo in (rllib, lean):
            np.random.seed(7)  # the minibatches' shuffling
            torch.manual_seed(7)
            statistics.append([])
            for _ in range(2):  # Adam's moments carry over from the first update
                results = algo.learner_group.update(  # a copy: the connectors edit episodes
                    episodes=copy.deepcopy(episodes), timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: 256},
                    num_epochs=2, minibatch_size=64, shuffle_batch_per_epoch=True,
                )  # fmt: skip
                statistics[-1].append(loss_statistics(results))
        theirs_statistics, mine_statistics = statistics
        for their_update, my_update in zip(theirs_statistics, mine_statistics, strict=True):
            for key in LOSS_STATISTICS:  # logged once per update, the last minibatch's
                np.testing.assert_allclose(my_update[key], their_update[key], rtol=1e-5,
                                           atol=1e-7, err_msg=key)  # fmt: skip
        assert theirs_statistics[0]["mean_kl_loss"] != theirs_statistics[1]["mean_kl_loss"]
        mine, theirs = weights(lean), weights(rllib)
        assert mine.keys() == theirs.keys()
        for name in theirs:
            np.testing.assert_allclose(mine[name], theirs[name], rtol=1e-5, atol=1e-6, err_msg=name)
        assert any(not np.allclose(before[name], theirs[name]) for name in theirs)  # it learned
    finally:
        rllib.stop()
        lean.stop()


def test_a_non_finite_gradient_goes_rllibs_way(local_ray: None):
    """RLlib zeroes NaN and clips inf gradients (torch_skip_nan_gradients off) and steps."""
    rllib, lean = lean_or_not(PPOTorchLearner), lean_or_not(LeanPPOTorchLearner)
    try:
        lean.learner_group._learner.module.set_state(
            rllib.learner_group._learner.module.get_state()
        )
        for algo in (rllib, lean):
            learner = algo.learner_group._learner
            gradients = {
                name: torch.full_like(param, 0.5) for name, param in learner._params.items()
            }
            first = next(iter(gradients))
            gradients[first][0] = float("nan")
            learner.apply_gradients(gradients)
        assert not lean.learner_group._learner._plain_step_applies(gradients)
        mine, theirs = weights(lean), weights(rllib)
        for name in theirs:
            assert np.isfinite(mine[name]).all()
            np.testing.assert_allclose(mine[name], theirs[name], rtol=1e-5, atol=1e-6, err_msg=name)
    finally:
        rllib.stop()
        lean.stop()
