"""The lean env runner returns RLlib's own episodes, without RLlib's per-step metrics."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

from trainer.config import Deployment
from trainer.ppo.config import TrainConfig
from trainer.ppo.rllib.algorithm import ppo_config
from trainer.ppo.rllib.runner import LeanEnvRunner, UnmeteredEnvToModulePipeline


def runner_config(
    tmp_path: Path, envs: int = 2, fragment: int = 64, episode_steps: int = 40
) -> Any:
    config = TrainConfig.load({
        "num_env_runners": 0, "envs_per_env_runner": envs, "rollout_fragment_length": fragment,
        "train_batch_size": 128, "minibatch_size": 64, "curiosity_weight": 0.0,
        "archive_restart_every": 0, "export_every_episodes": 0, "seed": 3,
        "env": {"max_episode_steps": episode_steps, "sticky_action_probability": 0.25},
    }, {})  # fmt: skip
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"))
    return ppo_config(config, deployment, "none")


def sampled(runner_class: type, config: Any) -> list[dict[str, Any]]:
    runner = runner_class(config=config)
    try:
        if runner_class is LeanEnvRunner:  # the lean loop, not RLlib's, samples
            assert runner._lean_sampler() is not None
        # episodes end and continue across calls (and, with one env, end as a call ends)
        episodes = runner.sample() + runner.sample() + runner.sample()
        metrics = runner.get_metrics()
    finally:
        runner.stop()
    rows = [{
        "id": episode.id_, "t": episode.t_started,
        "observations": np.asarray(episode.get_observations()),
        "actions": np.asarray(episode.get_actions()), "rewards": np.asarray(episode.get_rewards()),
        "logp": np.asarray(episode.get_extra_model_outputs("action_logp")),
        "done": (episode.is_terminated, episode.is_truncated),
    } for episode in episodes]  # fmt: skip
    return [*rows, {"steps": metrics["num_env_steps_sampled"], "episodes": metrics["num_episodes"]}]


def assert_same_episodes(lean: list[dict[str, Any]], reference: list[dict[str, Any]]) -> None:
    assert len(lean) == len(reference)
    for mine, theirs in zip(lean[:-1], reference[:-1], strict=True):
        assert mine["t"] == theirs["t"]
        assert mine["done"] == theirs["done"]
        for key in ("observations", "actions", "rewards", "logp"):
            np.testing.assert_array_equal(mine[key], theirs[key], err_msg=key)


@pytest.mark.parametrize(("envs", "fragment", "episode_steps"), [(2, 64, 40), (1, 32, 32)])
def test_the_lean_runner_samples_what_rllibs_runner_samples(
    tmp_path: Path, envs: int, fragment: int, episode_steps: int
):
    config = runner_config(tmp_path, envs, fragment, episode_steps)
    assert config.env_runner_cls is LeanEnvRunner  # the trainer's lean path uses it
    lean, reference = sampled(LeanEnvRunner, config), sampled(SingleAgentEnvRunner, config)
    assert len(lean) == len(reference) > 3  # several episodes across three calls
    steps = 3 * envs * fragment
    assert lean[-1] == reference[-1] == {"steps": steps, "episodes": lean[-1]["episodes"]}
    assert lean[-1]["episodes"] == envs * (3 * fragment // episode_steps)
    assert_same_episodes(lean, reference)


class StepCounter(RLlibCallback):
    steps = 0

    def on_episode_step(self, **kwargs: Any) -> None:
        StepCounter.steps += 1


def test_step_callbacks_are_made_when_one_listens(tmp_path: Path):
    quiet = LeanEnvRunner(config=runner_config(tmp_path))
    assert isinstance(quiet._env_to_module, UnmeteredEnvToModulePipeline)
    assert not quiet._step_listened
    quiet.stop()
    listening = LeanEnvRunner(config=runner_config(tmp_path).callbacks(StepCounter))
    try:
        listening.sample()
    finally:
        listening.stop()
    assert StepCounter.steps >= 2 * 64 - 2  # every env's every step but the resets


class FailOnce(gym.Wrapper[Any, Any, Any, Any]):
    """Raises on the process's `FAIL_AT`-th step of any wrapped env, once."""

    steps = 0
    failed = False

    def step(self, action: Any) -> Any:
        FailOnce.steps += 1
        if FailOnce.steps == FAIL_AT and not FailOnce.failed:
            FailOnce.failed = True
            raise RuntimeError("the emulator fell over")
        return self.env.step(action)


FAIL_AT = 50


def failing_once(wrap: Any, env: Any, index: int) -> Any:
    return FailOnce(wrap(env, index))


def test_a_failed_env_step_is_handled_as_rllib_handles_it(tmp_path: Path):
    """With restart_failed_sub_environments, the env is remade and sampling starts over:
    the lean loop returns what RLlib's loop returns, and the requested steps."""
    config = runner_config(tmp_path).fault_tolerance(restart_failed_sub_environments=True)
    config.env_config["wrap"] = functools.partial(failing_once, config.env_config["wrap"])
    results = []
    for runner_class in (LeanEnvRunner, SingleAgentEnvRunner):
        FailOnce.steps, FailOnce.failed = 0, False
        results.append(sampled(runner_class, config))
        assert FailOnce.failed  # the failure happened mid-sample
    lean, reference = results
    assert lean[-1] == reference[-1]
    assert lean[-1]["steps"] >= 3 * 2 * 64
    assert_same_episodes(lean, reference)
