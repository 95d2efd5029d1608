"""The training env: the env's registered vector env, with the trainer's wrappers on every env."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import koholint
from koholint.env.vector import EpisodeEndVectorEnv
from koholint.env.wrappers import PlannerControlWrapper
from koholint.env.wrappers.curiosity import CuriosityVectorWrapper
from trainer.config import Deployment
from trainer.ppo.config import TrainConfig
from trainer.ppo.envs import rllib_env_config


def test_the_vector_entry_point_wraps_every_env_with_its_index(tmp_path: Path):
    config = TrainConfig.load(
        {"curiosity_weight": 0.5, "archive_restart_every": 0, "export_every_episodes": 0,
         "planner": "rules", "env": {"max_episode_steps": 8, "frame_skip": 2}},
        environ={},
    )  # fmt: skip
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path))
    # What RLlib's env runner does with gym_env_vectorize_mode="vector_entry_point".
    vector = gym.make_vec(
        koholint.ENV_ID,
        num_envs=3,
        vectorization_mode="vector_entry_point",
        **rllib_env_config(config, deployment, archive_actor=""),
    )
    # Curiosity wraps the whole vector env: one RND pass a step for every env.
    assert isinstance(vector, CuriosityVectorWrapper)
    assert vector.weight == 0.5
    assert isinstance(vector.env, EpisodeEndVectorEnv)
    for env in vector.env.envs:
        assert isinstance(env, PlannerControlWrapper)
        zelda = env.unwrapped
        assert (zelda.config.frame_skip, zelda.config.max_episode_steps) == (2, 8)
        assert zelda.config.info_state is False  # the trainer's env default
    observations, _ = vector.reset(seed=0)
    assert observations.shape == (3, 128)
    vector.step(np.zeros(3, dtype=np.int64))
    vector.close()


def test_without_curiosity_the_vector_env_is_not_wrapped(tmp_path: Path):
    config = TrainConfig.load({"curiosity_weight": 0.0, "archive_restart_every": 0,
                      "export_every_episodes": 0}, environ={})  # fmt: skip
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path))
    vector = gym.make_vec(koholint.ENV_ID, num_envs=2, vectorization_mode="vector_entry_point",
                          **rllib_env_config(config, deployment, archive_actor=""))  # fmt: skip
    assert isinstance(vector, EpisodeEndVectorEnv)
    vector.close()


def test_the_env_registers_its_vector_entry_point():
    spec = gym.spec(koholint.ENV_ID)
    assert spec.vector_entry_point == "koholint.env.vector:make_vector_env"
    sync = gym.make_vec(koholint.ENV_ID, 2, vectorization_mode="vector_entry_point", vector="sync")
    assert isinstance(sync, gym.vector.SyncVectorEnv)
    sync.close()


def test_the_hybrid_control_reaches_a_planner_that_wants_its_token(serve) -> None:
    """planner=http against a planner with a token: the deployment's planner_token opens it."""
    from koholint.clients.planner import PlannerError
    from koholint.game.emulator import GameBoy
    from koholint.planning.memory import SessionMemory
    from koholint.planning.view import read_view
    from planner.app import create_app
    from planner.config import Settings as PlannerSettings
    from trainer.ppo.envs import planner_backend

    url = serve(create_app(PlannerSettings(backend="rules", token="planner-secret-1")))
    with GameBoy() as gameboy:
        gameboy.reset("start_of_play")
        situation = read_view(gameboy).situation()
    with pytest.raises(PlannerError, match="401"):
        planner_backend("http", url).decide(situation, SessionMemory())
    decision = planner_backend("http", url, "planner-secret-1").decide(situation, SessionMemory())
    assert decision.goal
