"""The trainer's curriculum: the winning trajectory file, and the shared curriculum built from it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from koholint.env.zelda import Action, ZeldaEnv
from koholint.store import LocalStore
from trainer.config import Deployment
from trainer.ledger import RUN_STATE_FILE, CheckpointLedger
from trainer.ppo.config import Curriculum, TrainConfig, TrainConfigError
from trainer.ppo.curriculum import build_curriculum, fit_episodes, read_trajectory
from trainer.ppo.run import TrainingRun

WIN_DIRECTORY = Path(__file__).parents[4] / "benchmarks" / "results" / "win"


def test_a_trajectory_file_builds_the_curriculum_at_its_end(tmp_path: Path):
    path = tmp_path / "win.actions"
    path.write_bytes(bytes([Action.UP] * 16 + [Action.NOOP]))
    curriculum = build_curriculum(
        Curriculum(trajectory=str(path), move_by=8), 4096, window=2, every=8
    )
    assert [state.step for state in curriculum.demo] == [0, 8, 16]
    assert curriculum.start_step == 16
    curriculum.report(16, True)
    curriculum.report(16, True)
    assert curriculum.start_step == 8


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file"), (b"", "0 actions"), (bytes([1, 9]), "action 9")],
)
def test_bad_trajectory_files_name_the_problem(tmp_path: Path, content, message):
    path = tmp_path / "win.actions"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        read_trajectory(str(path))


def test_robustify_needs_the_winning_trajectory():
    with pytest.raises(TrainConfigError, match="curriculum.trajectory"):
        TrainConfig.load({"phase": "robustify"}, {})
    assert (
        TrainConfig.load({"phase": "both"}, {}).curriculum.trajectory == ""
    )  # phase 1 will find it


def test_phase_explore_runs_phase_one_without_ray_and_reports_it(tmp_path: Path):
    """A budget too small to win: the run finishes, says how far phase 1 got, keeps no win."""
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"))
    settings = {"run": "explore", "phase": "explore", "explore": {"max_env_steps": 1_600},
                "num_env_runners": 0}  # fmt: skip
    config = TrainConfig.load(settings, {})
    seen: list[int] = []
    status = TrainingRun(config, deployment).run(
        on_iteration=lambda s: seen.append(s.archive_cells)
    )
    assert status.state == "finished"
    assert 0 < status.env_steps <= 1_600  # phase 1's steps: the run did nothing else
    assert seen
    assert seen[-1] > 10  # the progress line saw the archive grow
    assert status.archive_level == 0
    assert set(status.explore_milestones) == {
        "sword",
        "puzzle",
        "dungeon",
        "key",
        "lock",
        "instrument",
    }
    summary = json.loads((tmp_path / "runs" / "explore" / "explore.json").read_text())
    assert summary["won"] is False
    assert 0 < summary["env_steps"] <= 1_600
    assert not (tmp_path / "runs" / "explore" / "win.actions").exists()


def test_robustify_pins_the_trajectory_in_self_imitation_unless_told_not_to():
    from trainer.ppo.rllib.algorithm import demo_settings

    config = TrainConfig.load(
        {"phase": "robustify", "curriculum": {"trajectory": "a/win.actions"}}, {}
    )
    assert config.sil.demo  # the defaults
    assert config.curriculum.end_on_death
    assert demo_settings(config) == {"demo_trajectory": "a/win.actions", "demo_env": config.env}
    off = TrainConfig.load(
        {"phase": "robustify", "curriculum": {"trajectory": "a"}, "sil": {"demo": False}}, {}
    )
    assert demo_settings(off) == {}
    assert demo_settings(TrainConfig.load({}, {})) == {}  # plain training has no demonstration


def test_the_episode_budget_follows_the_time_factor(tmp_path: Path):
    path = tmp_path / "win.actions"
    path.write_bytes(bytes([Action.UP] * 16 + [Action.NOOP]))
    config = TrainConfig.load({"phase": "robustify", "curriculum": {"trajectory": str(path), "time_factor": 3.0}}, {})  # fmt: skip
    assert build_curriculum(config.curriculum, 4096).start(seed=0).budget == 3 * (17 - 16) + 64
    with pytest.raises(TrainConfigError, match="curriculum.time_factor"):
        TrainConfig.load(
            {"phase": "robustify", "curriculum": {"trajectory": "a", "time_factor": 0}}, {}
        )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("length", "overrides", "episode_steps"),
    [
        (1_000, {}, 3 * 1_000 + 64),  # a longer route than the recipe's episodes allow
        (600, {}, 2_048),  # the recipe's episodes already give 3 x 600 + 64
        (1_000, {"curriculum": {"fit_episodes": False}}, 2_048),
        (1_000, {"curriculum": {"time_factor": 1.5}}, 2_048),
    ],
)
def test_episodes_are_fitted_to_the_demonstration(tmp_path: Path, length, overrides, episode_steps):
    path = tmp_path / "win.actions"
    path.write_bytes(bytes([Action.UP]) * length)
    layers = {"phase": "robustify", "env": {"max_episode_steps": 2_048}, **overrides}
    layers["curriculum"] = {"trajectory": str(path), **overrides.get("curriculum", {})}
    config = TrainConfig.load(layers, {})
    fitted = fit_episodes(config)
    assert fitted.env.max_episode_steps == episode_steps
    assert config.env.max_episode_steps == 2_048  # a copy: the config given is kept


def test_a_plain_run_keeps_its_episodes(tmp_path: Path):
    config = TrainConfig.load({"phase": "train", "env": {"max_episode_steps": 300}}, {})
    assert fit_episodes(config) is config


def test_a_resumed_robustification_goes_on_from_the_checkpoints_start(tmp_path: Path):
    """A real run on the last steps of a committed win (random play wins there about half
    the time, so the start moves); the checkpoint keeps the position, and the resumed run
    starts its episodes there instead of walking the curriculum back from the end."""
    trajectory = WIN_DIRECTORY / "explore-seed0-short.actions"
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"))
    tiny = {
        "run": "robust", "phase": "robustify", "curriculum": {"trajectory": str(trajectory)},
        "planner": "rules", "total_env_steps": 1024, "num_env_runners": 0,
        "envs_per_env_runner": 1, "train_batch_size": 256, "minibatch_size": 64, "num_epochs": 1,
        "rollout_fragment_length": 128, "export_every_episodes": 0,
        "checkpoint_every_iterations": 2, "curiosity_weight": 0.0,
    }  # fmt: skip
    first = TrainingRun(TrainConfig.load(tiny, {}), deployment).run()
    assert first.state == "finished"
    ledger = CheckpointLedger(LocalStore(deployment.store_url), "robust")
    last = ledger.records[-1]
    folder = ledger.download(last, tmp_path / "checkpoint")
    saved = json.loads((folder / RUN_STATE_FILE).read_text())["curriculum"]
    assert saved["trajectory_sha256"] == hashlib.sha256(trajectory.read_bytes()).hexdigest()
    assert saved["moves"], "random play wins half the time from 2 steps before the credits"
    demo_end = 728  # the last demo state (every 8 steps) of the 730-step win
    saved_start = saved["moves"][-1]
    assert saved_start < demo_end
    assert first.curriculum["start_step"] == saved_start

    seen: list[dict[str, float]] = []
    # Resumed where a fresh curriculum could not move (20 wins of 20 needed): it would start at the end.
    resumed = {**tiny, "resume_from": last.name, "total_env_steps": last.step + 256,
               "curriculum": {"trajectory": str(trajectory), "threshold": 1.0}}  # fmt: skip
    again = TrainingRun(TrainConfig.load(resumed, {}), deployment).run(
        on_iteration=lambda status: seen.append(dict(status.curriculum))
    )
    assert again.state == "finished"
    assert seen[0]["start_step"] == saved_start  # not back at the end
    assert seen[0]["moves"] == len(saved["moves"])


def test_heal_starts_reaches_the_demo_states(tmp_path: Path):
    """The setting is the trainer's, the healing the library's: the starts it builds are
    healed (the seed-0 win loses half a heart at step 77)."""
    path = tmp_path / "win.actions"
    path.write_bytes((WIN_DIRECTORY / "explore-seed0.actions").read_bytes()[:137])
    config = TrainConfig.load({"phase": "robustify", "curriculum": {"trajectory": str(path), "heal_starts": True}}, {})  # fmt: skip
    healed = build_curriculum(config.curriculum, 4096).demo[-1].state
    plain = build_curriculum(config.curriculum.model_copy(update={"heal_starts": False}), 4096)
    env = ZeldaEnv(info_state=False)
    env.reset(seed=0, options={"start_state": plain.demo[-1].state})
    assert env.unwrapped.raw_state.health < 24
    env.reset(seed=0, options={"start_state": healed})
    assert env.unwrapped.raw_state.health == 24
    env.close()
