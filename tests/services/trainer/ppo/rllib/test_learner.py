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
# logged once an update by the lean learner, once a minibatch by RLlib's: the same values
STEP_STATISTICS = ("num_module_steps_trained", "num_module_steps_trained_lifetime",
                   "module_train_batch_size_mean", "weights_seq_no")  # fmt: skip
ALL_MODULES_STATISTICS = ("num_env_steps_trained", "num_env_steps_trained_lifetime",
                          "num_module_steps_trained", "num_module_steps_trained_lifetime")  # fmt: skip


def loss_statistics(results: Any) -> dict[str, float]:
    """The update's loss and step statistics, from LearnerGroup.update's results."""
    result = results[0] if isinstance(results, list) else results
    module, everything = result["default_policy"], result["__all_modules__"]
    return {
        **{key: float(np.asarray(_value(module[key]))) for key in LOSS_STATISTICS + STEP_STATISTICS},
        **{f"all {key}": float(np.asarray(_value(everything[key]))) for key in ALL_MODULES_STATISTICS},
    }  # fmt: skip


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
            assert my_update.keys() == their_update.keys()
            for key in their_update:  # the losses: the last minibatch's; steps: the sums
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


def test_indexed_minibatches_are_rllibs_minibatches():
    """The same rows in the same order as MiniBatchCyclicIterator, shuffled or not, with a
    batch that minibatches do not divide (a minibatch wraps around its end)."""
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
    from ray.rllib.utils.minibatch_utils import MiniBatchCyclicIterator

    from trainer.ppo.rllib.learner import IndexedMinibatches

    def batch() -> MultiAgentBatch:
        rows = np.arange(103)
        columns = {"rows": torch.from_numpy(rows), "ids": rows.astype(str)}
        return MultiAgentBatch({"p": SampleBatch(columns)}, env_steps=103)

    orders = []
    for shuffle in (False, True):
        minibatches = []
        for iterator in (MiniBatchCyclicIterator, IndexedMinibatches):
            np.random.seed(3)
            kwargs = {"shuffle_batch_per_epoch" if iterator is MiniBatchCyclicIterator
                      else "shuffle": shuffle}  # fmt: skip
            minibatches.append([
                (m.policy_batches["p"]["rows"].tolist(), list(m.policy_batches["p"]["ids"]),
                 m.env_steps())
                for m in iterator(batch(), num_epochs=3, minibatch_size=25, **kwargs)
            ])  # fmt: skip
        theirs, mine = minibatches
        assert mine == theirs
        assert len(mine) == 13  # 3 epochs of 103 rows: 309 rows, 12.4 minibatches
        assert all(len(rows) == 25 for rows, _, _ in mine)
        orders.append(mine)
    assert orders[0] != orders[1]  # the shuffle was taken


def test_an_optimizer_state_saved_by_the_foreach_adam_loads_and_steps_fused(local_ray: None):
    """Checkpoints written before the fused Adam carry foreach=True in their groups; once
    loaded, the learner steps with the fused kernel, from the saved moments."""
    algo = lean_or_not(LeanPPOTorchLearner)
    try:
        learner = algo.learner_group._learner
        optimizer = next(iter(learner._named_optimizers.values()))
        episodes = algo.env_runner.sample(num_timesteps=256)
        algo.learner_group.update(episodes=copy.deepcopy(episodes),
                                  timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: 256})  # fmt: skip
        for group in optimizer.param_groups:  # as the foreach Adam saved them
            group.update(fused=None, foreach=True)
        state = learner.get_state(components="optimizer")
        saved = next(iter(state["optimizer"].values()))["state"]["param_groups"]
        assert all(group["foreach"] and not group["fused"] for group in saved)
        learner.set_state(state)
        assert all(group["fused"] and not group["foreach"] for group in optimizer.param_groups)
        before = weights(algo)
        algo.learner_group.update(episodes=copy.deepcopy(episodes),
                                  timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: 512})  # fmt: skip
        after = weights(algo)
        assert any(not np.allclose(before[name], after[name]) for name in after)
    finally:
        algo.stop()
