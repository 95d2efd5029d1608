"""TrainConfig: environment overrides, and clear errors before any work starts."""

import pytest

from trainer.ppo.config import TrainConfig, TrainConfigError
from trainer.ppo.run import preflight


def test_environment_overrides():
    config = TrainConfig.from_mapping(
        {},
        environ={
            "RAY_WORKERS": "3",
            "ENVS_PER_WORKER": "4",
            "EPISODE_LENGTH": "512",
            "BATCH_SIZE": "2048",
        },
    )
    assert (
        config.num_env_runners,
        config.envs_per_env_runner,
        config.episode_length,
        config.train_batch_size,
    ) == (3, 4, 512, 2048)


@pytest.mark.parametrize(
    ("values", "environ", "message"),
    [
        ({"learning_rat": 0.1}, {}, "unknown settings \\['learning_rat'\\]"),
        ({}, {"ENVS_PER_WORKER": "0"}, "envs_per_env_runner"),
        ({"num_env_runners": -1}, {}, "num_env_runners"),
        ({"train_batch_size": 64, "minibatch_size": 128}, {}, "smaller than minibatch_size"),
        ({}, {"BATCH_SIZE": "lots"}, "BATCH_SIZE='lots' must be an integer"),
        ({"reward_mode": "dense"}, {}, "reward_mode"),
        ({}, {"PLANNER": "gpt"}, "planner must be one of off, rules, local, llm-d, http"),
        ({"planner": "http"}, {}, "planner=http needs planner_url"),
        ({"run": "a+b"}, {}, "run='a\\+b'"),
    ],
)
def test_impossible_values_are_refused(values, environ, message):
    with pytest.raises(TrainConfigError, match=message):
        TrainConfig.from_mapping(values, environ=environ)


def test_unreachable_ray_address_is_refused_before_work(tmp_path):
    config = TrainConfig.from_mapping(
        {"store_url": str(tmp_path), "ray_address": "127.0.0.1:1"}, environ={}
    )
    with pytest.raises(TrainConfigError, match="RAY_ADDRESS='127.0.0.1:1' is unreachable"):
        preflight(config)


def test_a_store_that_refuses_writes_is_refused_before_work(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    config = TrainConfig.from_mapping({"store_url": str(blocker)}, environ={})
    with pytest.raises(TrainConfigError, match="KOHOLINT_STORE_URL"):
        preflight(config)


def test_planner_settings_reach_the_training_env():
    from trainer.ppo.envs import planner_backend

    config = TrainConfig.from_mapping({}, environ={"PLANNER": "rules"})
    assert config.planner == "rules"
    assert planner_backend("rules", "").name == "rules"
    assert planner_backend("http", "http://planner:8000").name == "planner-http"
