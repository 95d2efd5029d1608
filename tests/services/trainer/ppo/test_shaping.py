"""The trainer's shaping glue: a version reaches every env's wrapper (from the next episode on),
and the counts of what it shaped come back."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from koholint.env.vector import make_vector_env
from koholint.env.wrappers import ShapingWrapper
from trainer.ppo.shaping import ShapingReport, give_potential, shaping_counts, shaping_wrappers

sys.path.insert(0, str(Path(__file__).parents[3] / "libs/koholint/reward"))
from reward_versions import random_reward_model


def test_a_version_reaches_every_env_from_its_next_episode():
    envs = make_vector_env(3, wrap=lambda env, index: ShapingWrapper(env, gamma=0.99),
                           max_episode_steps=5)  # fmt: skip
    assert len(shaping_wrappers(envs)) == 3
    envs.reset(seed=0)
    model = random_reward_model(seed=1)
    assert give_potential(envs, model) == 3
    actions = np.zeros(3, np.int64)
    envs.step(actions)
    assert shaping_counts(envs)[0] == {}  # mid-episode: not yet
    for _ in range(4 + 1 + 3):  # finish the episode, reset, three shaped steps each
        envs.step(actions)
    steps, total, absolute, next_versions = shaping_counts(envs)
    assert next_versions == [model.version] * 3
    assert steps == {model.version: 9}
    assert absolute > 0
    assert abs(total) <= absolute
    envs.close()


class OneRunner:
    """RLlib's env-runner group reduced to one local runner whose env Ray may 'restart'."""

    def __init__(self, env) -> None:
        self.env = env

    def foreach_env_runner(self, function, local_env_runner=True):
        return [function(self)]


def test_the_driver_hands_the_model_again_to_a_restarted_env_runner(tmp_path: Path):
    from reward_versions import make_version

    from koholint.store import LocalStore
    from trainer.ppo.shaping import ShapingDriver

    def shaped_envs():
        return make_vector_env(2, wrap=lambda env, index: ShapingWrapper(env, gamma=0.99),
                               max_episode_steps=5)  # fmt: skip

    store = LocalStore(tmp_path)
    version = make_version(store).version
    algo = type("Algo", (), {})()
    algo.env_runner_group = OneRunner(shaped_envs())
    driver = ShapingDriver("latest", store, run="r")
    driver.before_iteration(algo)
    assert driver.after_iteration(algo).without_model == 0
    algo.env_runner_group.env.close()
    algo.env_runner_group.env = shaped_envs()  # Ray restarted the runner: a fresh env
    assert driver.after_iteration(algo).without_model == 2
    driver.before_iteration(algo)  # no new version, but the runner gets the current one
    assert driver.after_iteration(algo).without_model == 0
    assert shaping_counts(algo.env_runner_group.env)[3] == [version, version]
    algo.env_runner_group.env.close()


def test_an_env_without_shaping_has_no_wrappers():
    envs = make_vector_env(2, max_episode_steps=5)
    assert shaping_wrappers(envs) == []
    assert give_potential(envs, random_reward_model()) == 0
    assert ShapingReport().steps_by_version == {}
    envs.close()


TINY = {
    "total_env_steps": 1024, "num_env_runners": 0, "envs_per_env_runner": 2, "train_batch_size": 256,
    "minibatch_size": 64, "num_epochs": 1, "rollout_fragment_length": 128, "env": {"max_episode_steps": 96},
    "export_every_episodes": 0, "checkpoint_every_iterations": 1, "archive_restart_every": 0,
    "curiosity_weight": 0.0, "reward": {"model": "latest", "shaping_scale": 0.5},
}  # fmt: skip


def test_a_fixed_version_of_another_encoder_is_refused_before_any_work(tmp_path: Path):
    from reward_versions import make_version

    from koholint.store import LocalStore
    from trainer.config import Deployment
    from trainer.ppo.config import TrainConfig, TrainConfigError
    from trainer.ppo.run import TrainingRun

    store = LocalStore(tmp_path / "store")
    card = make_version(store)
    stored = card.model_copy(update={"encoder_version": "obs128-000000000000"})
    store.put(f"reward-models/{card.version}/model.json", stored.model_dump_json().encode())
    config = TrainConfig.load({**TINY, "reward": {"model": card.version}}, {})
    run = TrainingRun(config, Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path)))
    with pytest.raises(TrainConfigError, match="reward.model: .*retrain the reward model"):
        run.preflight()


@pytest.mark.slow  # ~1 minute: a real PPO run on Ray
def test_a_real_trainer_hot_loads_a_version_published_between_iterations(tmp_path: Path):
    from reward_versions import make_version

    from koholint.store import LocalStore
    from trainer.config import Deployment
    from trainer.ppo.config import TrainConfig
    from trainer.ppo.run import TrainingRun

    store = LocalStore(tmp_path / "store")
    published: list[str] = []
    shaped_after: list[dict[str, int]] = []

    def between_iterations(status) -> None:
        shaped_after.append(dict(status.shaped_steps))
        if status.iterations == 1:  # a version appears while the run trains
            published.append(make_version(store, seed=3).version)

    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"))
    status = TrainingRun(TrainConfig.load({**TINY, "run": "hot"}, {}), deployment).run(
        between_iterations
    )
    assert status.state == "finished"
    assert shaped_after[0] == {}  # nothing published yet: no shaping
    assert status.reward_model == published[0]
    assert status.shaped_steps[published[0]] > 0
    # Loaded after 128 steps per env, 32 into the second 96-step episode: used from step 192.
    assert status.shaped_steps[published[0]] == 2 * (512 - 192)
    ledger = json.loads(store.get("checkpoints/hot/ledger.json"))
    assert ledger["checkpoints"][-1]["metrics"][f"shaped_steps.{published[0]}"] > 0


@pytest.mark.parametrize(("mode", "wrapper"), [("potential", "ShapingWrapper"),
                                               ("bonus", "BonusWrapper")])  # fmt: skip
def test_the_runs_reward_mode_picks_the_wrapper_and_the_driver_finds_either(mode, wrapper):
    from trainer.ppo.config import TrainConfig
    from trainer.ppo.envs import reward_model_wrapper

    config = TrainConfig.load({"reward": {"model": "latest", "mode": mode,
                                          "bonus_coefficient": 0.3}}, {})  # fmt: skip
    envs = make_vector_env(2, wrap=lambda env, index: reward_model_wrapper(config, env),
                           max_episode_steps=5)  # fmt: skip
    found = shaping_wrappers(envs)
    assert [type(w).__name__ for w in found] == [wrapper, wrapper]
    if mode == "bonus":
        assert found[0].coefficient == 0.3
    envs.close()


def test_the_hand_written_potential_shapes_from_the_first_episode_without_a_model():
    from trainer.ppo.config import TrainConfig
    from trainer.ppo.envs import reward_model_wrapper

    config = TrainConfig.load({"reward": {"hand_potential": "progress",
                                          "shaping_scale": 0.5}}, {})  # fmt: skip
    envs = make_vector_env(2, wrap=lambda env, index: reward_model_wrapper(config, env),
                           max_episode_steps=5)  # fmt: skip
    envs.reset(seed=0)
    envs.step(np.zeros(2, np.int64))
    steps, _, _, next_versions = shaping_counts(envs)
    assert steps == {"progress-level": 2}
    assert next_versions == ["progress-level"] * 2
    assert shaping_wrappers(envs)[0].scale == 0.5
    envs.close()


def test_the_sparse_reward_gives_curiosity_an_allowance_and_the_others_do_not():
    from trainer.ppo.config import TrainConfig
    from trainer.ppo.envs import wrap_train_vector

    for reward_mode, expected in (("sparse", 10.0 / 1024), ("progress+coverage", 0.0)):
        config = TrainConfig.load({"env": {"reward_mode": reward_mode}}, {})
        envs = wrap_train_vector(config, make_vector_env(1, max_episode_steps=5))
        assert envs.budgets.allowance_per_step == pytest.approx(expected)
        envs.close()
