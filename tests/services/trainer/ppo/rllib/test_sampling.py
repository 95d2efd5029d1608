"""The lean sampling path: its connectors and module, and RLlib's env runner sampling with it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.env.single_agent_episode import SingleAgentEpisode

from koholint.env.zelda import ZeldaEnv
from trainer.config import Deployment
from trainer.ppo.config import TrainConfig
from trainer.ppo.rllib.algorithm import ppo_config
from trainer.ppo.rllib.sampling import (
    LatestObservationsToTensor,
    LeanPPOModule,
    SampleCategoricalActions,
    _sample,
)

PLAIN = {"curiosity_weight": 0.0, "archive_restart_every": 0, "export_every_episodes": 0}
LOGITS = torch.tensor([[0.0, 2.0, -1.0], [3.0, 0.0, 0.0]])


def test_latest_observations_are_stacked_into_one_tensor():
    episodes = []
    for value in (0.25, -0.5):
        episode = SingleAgentEpisode()
        episode.add_env_reset(observation=np.full(4, value, dtype=np.float32))
        episode.add_env_step(
            observation=np.full(4, value * 2, dtype=np.float32), action=0, reward=0.0
        )
        episodes.append(episode)
    batch = LatestObservationsToTensor()(batch={}, episodes=episodes, rl_module=None)
    assert batch[Columns.OBS].dtype == torch.float32
    assert batch[Columns.OBS].tolist() == [[0.5] * 4, [-1.0] * 4]


def test_greedy_actions_and_their_log_probabilities():
    batch = SampleCategoricalActions()(
        batch={Columns.ACTION_DIST_INPUTS: LOGITS}, explore=False, episodes=[], rl_module=None
    )
    assert batch[Columns.ACTIONS].tolist() == [1, 0]
    expected = torch.distributions.Categorical(logits=LOGITS).log_prob(torch.tensor([1, 0]))
    np.testing.assert_allclose(batch[Columns.ACTION_LOGP], expected.numpy(), atol=1e-6)
    np.testing.assert_array_equal(batch[Columns.ACTION_DIST_INPUTS], LOGITS.numpy())


def test_exploring_samples_follow_the_distribution():
    torch.manual_seed(0)
    logits = LOGITS[:1].repeat(20_000, 1)
    batch = SampleCategoricalActions()(
        batch={Columns.ACTION_DIST_INPUTS: logits}, explore=True, episodes=[], rl_module=None
    )
    shares = np.bincount(batch[Columns.ACTIONS], minlength=3) / len(logits)
    np.testing.assert_allclose(shares, torch.softmax(LOGITS[0], -1).numpy(), atol=0.01)
    chosen = torch.from_numpy(batch[Columns.ACTIONS])
    expected = torch.distributions.Categorical(logits=logits).log_prob(chosen)
    np.testing.assert_allclose(batch[Columns.ACTION_LOGP], expected.numpy(), atol=1e-6)


def test_inverse_cdf_sampling_never_picks_an_impossible_action():
    log_probabilities = torch.log_softmax(torch.tensor([[-1e9, 0.0, -1e9, 0.0, -1e9]]), -1)
    rows = log_probabilities.repeat(4, 1).numpy()
    draws = np.array([[0.0], [0.4999], [0.5], [np.nextafter(np.float32(1), np.float32(0))]])
    assert _sample(rows, draws.astype(np.float32)).tolist() == [1, 1, 3, 3]


def test_lean_module_computes_what_the_default_module_does():
    env = ZeldaEnv()
    settings = {"observation_space": env.observation_space, "action_space": env.action_space,
                "model_config": {"fcnet_hiddens": [16, 16], "vf_share_layers": False}}  # fmt: skip
    default, lean = DefaultPPOTorchRLModule(**settings), LeanPPOModule(**settings)
    lean.load_state_dict(default.state_dict())
    observations = {Columns.OBS: torch.rand(5, 128)}
    torch.testing.assert_close(
        lean.forward_exploration(observations)[Columns.ACTION_DIST_INPUTS],
        default.forward_exploration(observations)[Columns.ACTION_DIST_INPUTS],
    )
    assert lean.training  # the mode was never switched
    env.close()


def test_numpy_policy_follows_weight_updates_in_place_and_replaced():
    env = ZeldaEnv()
    settings = {"observation_space": env.observation_space, "action_space": env.action_space,
                "inference_only": True,
                "model_config": {"fcnet_hiddens": [16, 16], "fcnet_activation": "tanh"}}  # fmt: skip
    lean, other = LeanPPOModule(**settings), LeanPPOModule(**settings)
    observations = {Columns.OBS: torch.rand(4, 128)}

    def torch_logits() -> torch.Tensor:
        with torch.no_grad():
            return lean._forward(observations)[Columns.ACTION_DIST_INPUTS]

    assert lean._numpy_policy() is not None  # the numpy path, not torch's
    first = lean.forward_exploration(observations)[Columns.ACTION_DIST_INPUTS]
    torch.testing.assert_close(first, torch_logits())
    lean.load_state_dict(other.state_dict())  # how RLlib's runners receive new weights
    updated = lean.forward_exploration(observations)[Columns.ACTION_DIST_INPUTS]
    assert not torch.allclose(updated, first)
    torch.testing.assert_close(updated, torch_logits())
    head = lean.pi.net.mlp[0]
    head.weight = torch.nn.Parameter(torch.zeros_like(head.weight))  # replaced, not copied into
    torch.testing.assert_close(
        lean.forward_exploration(observations)[Columns.ACTION_DIST_INPUTS], torch_logits()
    )
    env.close()


def test_a_network_that_is_not_a_plain_mlp_uses_torchs_forward():
    env = ZeldaEnv()
    lean = LeanPPOModule(observation_space=env.observation_space, action_space=env.action_space,
                         model_config={"fcnet_hiddens": [16], "fcnet_activation": "elu"})  # fmt: skip
    observations = {Columns.OBS: torch.rand(3, 128)}
    assert lean._numpy_policy() is None
    with torch.no_grad():
        expected = lean._forward(observations)[Columns.ACTION_DIST_INPUTS]
    torch.testing.assert_close(
        lean.forward_exploration(observations)[Columns.ACTION_DIST_INPUTS], expected
    )
    env.close()


@pytest.mark.parametrize("lean", [True, False])
def test_env_runner_samples_the_same_columns_either_way(lean: bool, tmp_path: Path):
    config = TrainConfig.load(
        {**PLAIN, "lean_sampling": lean, "num_env_runners": 0, "envs_per_env_runner": 3,
         "env": {"max_episode_steps": 20}},
        environ={},
    )  # fmt: skip
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path))
    runner = SingleAgentEnvRunner(config=ppo_config(config, deployment, archive_actor=""))
    episodes = runner.sample(num_timesteps=60, random_actions=False)
    steps = sum(len(episode) for episode in episodes)
    assert steps >= 60
    finished = [episode for episode in episodes if episode.is_done]
    assert len(finished) >= 3  # 20-step episodes in 3 envs
    assert {"rooms", "cells", "milestones"} <= set(finished[0].get_infos(-1))
    for episode in episodes:
        logits = episode.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS)
        assert logits.shape == (len(episode), 9)
        assert np.all(episode.get_extra_model_outputs(Columns.ACTION_LOGP) <= 0)
        actions = episode.get_actions()
        assert actions.dtype.kind == "i"
        assert np.all((actions >= 0) & (actions < 9))
        assert episode.get_observations().shape == (len(episode) + 1, 128)
    # The env's registered vector env (vector_entry_point), not a num_envs guess in the trainer.
    expected = "EpisodeEndVectorEnv" if lean else "SyncVectorEnv"
    assert type(runner.env.unwrapped).__name__ == expected
    runner.stop()
