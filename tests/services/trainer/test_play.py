"""A real (tiny) training run's checkpoint played with `koholint play --policy checkpoint:...`,
and `koholint export-policy`: the policy file carries the run's env settings and the same
logits as RLlib's module."""

from __future__ import annotations

import json
import pickle
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from koholint.baselines.trained import PlaySettings, load_policy, play_policy
from koholint.cli import main
from koholint.env.encoding import MEMORY_SIZE, OBSERVATION_SIZE, encoder_version
from trainer.config import Deployment
from trainer.ledger import RUN_STATE_FILE
from trainer.ppo.config import TrainConfig
from trainer.ppo.run import TrainingRun

TINY = {
    "run": "tiny-play", "total_env_steps": 256, "num_env_runners": 0, "envs_per_env_runner": 1,
    "train_batch_size": 256, "minibatch_size": 64, "num_epochs": 1, "rollout_fragment_length": 128,
    "env": {"max_episode_steps": 96, "sticky_action_probability": 0.1}, "planner": "rules",
    "export_every_episodes": 0, "archive_restart_every": 0, "curiosity_weight": 0.0,
    "hidden_sizes": [32, 16],
}  # fmt: skip
MODULE = "learner_group/learner/rl_module/default_policy"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkpoint folder of a real 256-step training run, in its local store."""
    folder = tmp_path_factory.mktemp("tiny-run")
    deployment = Deployment(store_url=str(folder / "store"), run_dir=str(folder / "runs"))
    status = TrainingRun(TrainConfig.load(TINY, {}), deployment).run()
    assert status.state == "finished"
    return folder / "store" / "checkpoints" / "tiny-play" / f"{status.env_steps:012d}"


@pytest.mark.slow
def test_every_checkpoint_carries_a_policy_file_with_the_runs_env_settings(checkpoint):
    policy = load_policy(checkpoint)
    assert policy.path == checkpoint / "policy"
    assert [weight.shape for weight, _ in policy.layers] == [
        (32, OBSERVATION_SIZE),
        (16, 32),
        (9, 16),
    ]
    assert policy.planner == "rules"
    assert policy.env["sticky_action_probability"] == 0.1
    assert policy.env["max_episode_steps"] == 96
    assert policy.source["checkpoint"] == f"tiny-play-step{int(checkpoint.name):012d}"


@pytest.mark.slow
def test_the_policy_file_gives_the_logits_of_rllibs_module(checkpoint):
    import torch
    from ray.rllib.core.rl_module.rl_module import RLModule

    module = RLModule.from_checkpoint(str(checkpoint / MODULE))
    observations = (
        np.random.default_rng(0).uniform(-1, 1, (16, OBSERVATION_SIZE)).astype(np.float32)
    )
    expected = module.forward_inference({"obs": torch.from_numpy(observations)})[
        "action_dist_inputs"
    ]
    policy = load_policy(checkpoint)
    logits = np.stack([policy.logits(observation) for observation in observations])
    np.testing.assert_allclose(logits, expected.detach().numpy(), atol=1e-5)


@pytest.mark.slow
def test_play_prints_one_row_per_episode_and_the_count(checkpoint, capsys):
    code = main(["play", "--policy", f"checkpoint:{checkpoint}", "--episodes", "3", "--seed", "5"])
    out = capsys.readouterr().out
    assert code == 0
    assert "sticky 0.1  planner rules  frame skip 4  episodes of 96 steps  actions sampled" in out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["5"], ["6"], ["7"])]
    assert [row[0] for row in rows] == ["5", "6", "7"]
    assert all(row[1] in ("yes", "no") and 0 < int(row[2]) <= 96 for row in rows)
    wins = sum(row[1] == "yes" for row in rows)
    assert f"({wins}/3 episodes won)" in out


@pytest.mark.slow
def test_the_same_seeds_play_the_same_episodes(checkpoint):
    """Sticky actions and sampling are seeded per episode: a win rate is reproducible."""
    policy = load_policy(checkpoint)
    settings = PlaySettings(start="start_of_play", episodes=2, seed=3)
    first, second = (play_policy(policy, settings).episodes for _ in range(2))
    assert [replace(e, seconds=0) for e in first] == [replace(e, seconds=0) for e in second]
    other = play_policy(policy, replace(settings, seed=11)).episodes
    assert [e.episode_return for e in other] != [e.episode_return for e in first]


@pytest.mark.slow
def test_export_policy_rebuilds_the_file_from_an_older_checkpoint(checkpoint, tmp_path, capsys):
    """A checkpoint saved before checkpoints carried policy files (no policy/, no config in
    koholint_run.json) exports from RLlib's pickled settings to the same policy."""
    older = tmp_path / checkpoint.name
    shutil.copytree(checkpoint, older, ignore=shutil.ignore_patterns("policy"))
    state = json.loads((older / RUN_STATE_FILE).read_text())
    del state["config"]
    (older / RUN_STATE_FILE).write_text(json.dumps(state))
    assert main(["play", "--policy", f"checkpoint:{older}"]) == 2
    assert f"koholint export-policy {older} OUT" in capsys.readouterr().err

    assert main(["export-policy", str(older), str(tmp_path / "out")]) == 0
    assert "play it: koholint play --policy checkpoint:" in capsys.readouterr().out
    rebuilt, original = (json.loads((folder / "policy.json").read_text())
                         for folder in (tmp_path / "out", checkpoint / "policy"))  # fmt: skip
    assert rebuilt["weights_sha256"] == original["weights_sha256"]
    assert (rebuilt["env"], rebuilt["planner"], rebuilt["source"]) == (
        original["env"],
        original["planner"],
        original["source"],
    )


@pytest.mark.slow
def test_export_policy_finds_checkpoints_by_name_and_run_in_the_store(checkpoint, tmp_path, capsys):
    store = checkpoint.parents[2]
    name = f"tiny-play-step{checkpoint.name}"
    for target, out in ((name, "by-name"), ("tiny-play", "by-run")):
        assert main(["export-policy", target, str(tmp_path / out), "--store", str(store)]) == 0
        assert load_policy(tmp_path / out).source["checkpoint"] == name
    capsys.readouterr()
    assert main(["export-policy", str(tmp_path), str(tmp_path / "x")]) == 2
    assert "is not a trainer checkpoint" in capsys.readouterr().err
    assert main(["export-policy", "no-such-run", str(tmp_path / "y"), "--store", str(store)]) == 2
    assert "has no checkpoints" in capsys.readouterr().err


def test_export_policy_refuses_a_checkpoint_of_another_env_config(tmp_path, capsys):
    """A module that reads 100 observations (another observation layout) is named as such."""
    module = tmp_path / "ckpt" / MODULE
    module.mkdir(parents=True)
    rng = np.random.default_rng(0)
    state = {
        "encoder.actor_encoder.net.mlp.0.weight": rng.normal(size=(8, 100)).astype(np.float32),
        "encoder.actor_encoder.net.mlp.0.bias": np.zeros(8, np.float32),
        "pi.net.mlp.0.weight": rng.normal(size=(9, 8)).astype(np.float32),
        "pi.net.mlp.0.bias": np.zeros(9, np.float32),
    }
    (module / "module_state.pkl").write_bytes(pickle.dumps(state))
    config = TrainConfig.load({}, {}).model_dump(mode="json")
    (tmp_path / "ckpt" / RUN_STATE_FILE).write_text(json.dumps({"config": config}))
    assert main(["export-policy", str(tmp_path / "ckpt"), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "takes 100 observations and gives 9 actions" in err
    assert "trained on another env config" in err
    del state["pi.net.mlp.0.weight"], state["pi.net.mlp.0.bias"]
    (module / "module_state.pkl").write_bytes(pickle.dumps(state))
    assert main(["export-policy", str(tmp_path / "ckpt"), str(tmp_path / "out")]) == 2
    assert "no policy head" in capsys.readouterr().err


@pytest.mark.slow
def test_a_policy_file_that_fails_leaves_the_run_and_its_checkpoint_whole(tmp_path, monkeypatch):
    import trainer.policy_export

    def refuse(*args: object, **kwargs: object) -> None:
        raise trainer.policy_export.ExportError("refused for the test")

    monkeypatch.setattr(trainer.policy_export, "export_policy", refuse)
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"))
    status = TrainingRun(TrainConfig.load({**TINY, "run": "no-policy"}, {}), deployment).run()
    assert status.state == "finished"
    assert status.checkpoints == 1
    saved = tmp_path / "store" / "checkpoints" / "no-policy" / f"{status.env_steps:012d}"
    assert (saved / MODULE / "module_state.pkl").is_file()
    assert not (saved / "policy").exists()


@pytest.mark.slow
def test_a_run_on_the_memory_observation_writes_a_policy_that_plays_on_it(tmp_path):
    """The policy reads the rooms' flag counts too: its file says so, and play builds that env."""
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"))
    settings = {**TINY, "run": "tiny-memory", "env": {**TINY["env"], "observation": "memory"}}
    status = TrainingRun(TrainConfig.load(settings, {}), deployment).run()
    assert status.state == "finished"
    folder = tmp_path / "store" / "checkpoints" / "tiny-memory" / f"{status.env_steps:012d}"
    policy = load_policy(folder)
    document = json.loads((folder / "policy" / "policy.json").read_text())
    assert document["observation_size"] == OBSERVATION_SIZE + MEMORY_SIZE
    assert document["encoder_version"] == encoder_version("memory")
    assert policy.env["observation"] == "memory"
    report = play_policy(policy, PlaySettings(start="start_of_play", episodes=1, max_steps=32))
    assert [episode.steps for episode in report.episodes] == [32]
