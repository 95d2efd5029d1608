"""The settings path: defaults < KOHOLINT_TRAINER_* (and the seed's aliases) < flags; errors that
name the field and where its value came from; preflight refuses before any work."""

from __future__ import annotations

import argparse
import http.server
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from koholint.env.zelda import REWARD_MODES
from koholint.flags import set_path
from koholint.game.states import STATE_NAMES
from koholint.schemas.env import EnvSettings
from trainer.cli import DEPLOYMENT, register
from trainer.config import Settings
from trainer.ppo.config import TrainConfig, TrainConfigError, environment_variable, field_paths
from trainer.ppo.run import TrainingRun

FLAGS = {"total_env_steps": "--steps", "num_env_runners": "--workers", "resume_from": "--resume"}


def parse_flags(*argv: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """What `koholint train ARGV` hands to TrainConfig.load() and to Settings."""
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["train", *argv])
    run: dict[str, Any] = {}
    deployment: dict[str, Any] = {}
    for dest, value in vars(args).items():
        if dest.startswith("setting."):
            set_path(run, dest.removeprefix("setting."), value)
        elif dest.startswith(DEPLOYMENT):
            deployment[dest.removeprefix(DEPLOYMENT)] = value
    return run, deployment


def current(config: TrainConfig, path: str) -> Any:
    head, _, rest = path.partition(".")
    value = getattr(config, head)
    return getattr(value, rest) if rest else value


def two_values(path: str) -> tuple[str, str | list[str], Any]:
    """For one setting: an environment value, a flag value (as typed), and what the flag means;
    both differ from the default and from each other."""
    default = current(TrainConfig.load({}, {}), path)
    name = path.rsplit(".", 1)[-1]
    special: dict[str, tuple[str, str | list[str], Any]] = {
        "run": ("from-env", "from-flag", "from-flag"),
        "resume_from": ("a-step000000000001", "b-step000000000002", "b-step000000000002"),
        "planner": ("rules", "local", "local"),
        "model": ("latest", "rm-20261123-000000-abcdef", "rm-20261123-000000-abcdef"),
        "weight": ("0.5", "0.25", 0.25),
        "hidden_sizes": ("[32]", ["16", "8"], [16, 8]),
        "start_state": ("title", "before_npc", "before_npc"),
        "reward_mode": ("sparse", "progress", "progress"),
        "mode": ("bonus", "potential", "potential"),
        "reward_weights": ('{"win": 3.0}', '{"win": 5.0}', 5.0),
        "phase": ("explore", "both", "both"),
        "trajectory": ("a/win.actions", "b/win.actions", "b/win.actions"),
        "swarm_share": ("0.25", "0.5", 0.5),
        "replay_share": ("0.25", "0.5", 0.5),
        "label_smoothing": ("0.05", "0.1", 0.1),
        "start": ("start_of_play", "last_room", "last_room"),
        "confirm_start": ("start_of_play", "last_room", "last_room"),
        "stop_at_win_rate": ("0.5", "0.25", 0.25),
        "observation": ("memory", "flags", "flags"),
        "teachers": ('["fights"]', ["walks", "fights"], ["walks", "fights"]),
        "labellers": ('["fights"]', ["walks", "fights"], ["walks", "fights"]),
        "rom": ("worlds/a", "worlds/b", "worlds/b"),
        "stall_level_base": ("2.0", "4.0", 4.0),
        "hand_potential": ("progress", "off", "off"),
    }
    if name in special:
        return special[name]
    if isinstance(default, bool):
        return (str(not default).lower(), str(default).lower(), default)
    if isinstance(default, int):
        return (str(default + 1), str(default + 2), default + 2)
    if isinstance(default, float):
        return (str(default / 2), str(default / 4), default / 4)
    raise AssertionError(f"no test values for {path} (a new kind of setting?)")


def test_every_setting_is_covered_and_named_once():
    paths = field_paths()
    assert len(paths) == len(set(paths))
    assert {p.removeprefix("env.") for p in paths if p.startswith("env.")} == set(
        EnvSettings.model_fields
    )
    for group in ("curriculum", "imitation", "sil", "reward", "evaluation"):
        nested = TrainConfig.model_fields[group].annotation
        assert {p for p in paths if p.startswith(group + ".")} == {
            f"{group}.{name}" for name in nested.model_fields
        }
    assert "store_url" not in paths  # a deployment setting, not a run setting


# Settings that only work with others set (TrainConfig.check): the environment gives those.
NEEDS = {
    "evaluation.every_env_steps": {"KOHOLINT_TRAINER_PLANNER": "rules"},
    "imitation.teachers": {"KOHOLINT_TRAINER_IMITATION__CLONE_EPOCHS": "1"},
    "imitation.corrections": {"KOHOLINT_TRAINER_IMITATION__CLONE_EPOCHS": "1",
                              "KOHOLINT_TRAINER_IMITATION__TEACHERS": '["walks"]',
                              "KOHOLINT_TRAINER_IMITATION__LABELLERS": '["walks"]'},
    "imitation.correct_every_env_steps": {"KOHOLINT_TRAINER_IMITATION__CLONE_EPOCHS": "1",
                                          "KOHOLINT_TRAINER_IMITATION__TEACHERS": '["walks"]',
                                          "KOHOLINT_TRAINER_IMITATION__LABELLERS": '["walks"]'},
    "imitation.route_episodes": {"KOHOLINT_TRAINER_IMITATION__CLONE_EPOCHS": "1",
                                 "KOHOLINT_TRAINER_IMITATION__TEACHERS": '["walks"]',
                                 "KOHOLINT_TRAINER_IMITATION__LABELLERS": '["walks"]',
                                 "KOHOLINT_TRAINER_IMITATION__CORRECT_EVERY_ENV_STEPS": "1000"},
    "imitation.labellers": {"KOHOLINT_TRAINER_IMITATION__CLONE_EPOCHS": "1",
                            "KOHOLINT_TRAINER_IMITATION__TEACHERS": '["fights", "walks"]'},
    "evaluation.stop_at_win_rate": {"KOHOLINT_TRAINER_PLANNER": "rules",
                                    "KOHOLINT_TRAINER_EVALUATION__EVERY_ENV_STEPS": "1000"},
}  # fmt: skip


@pytest.mark.parametrize("path", field_paths())
def test_a_flag_beats_the_environment_for_every_setting(path: str):
    from_env, from_flag, meant = two_values(path)
    variable = environment_variable(path)
    flag = FLAGS.get(path, "--" + path.replace(".", "-").replace("_", "-"))
    flag_values = from_flag if isinstance(from_flag, list) else [from_flag]
    needed = NEEDS.get(path, {})
    # The environment alone sets it...
    by_env = TrainConfig.load({}, {**needed, variable: from_env})
    assert current(by_env, path) != current(TrainConfig.load({}, needed), path)
    # ...and the flag wins over it.
    run_flags, _ = parse_flags(flag, *flag_values)
    config = TrainConfig.load(run_flags, {**needed, variable: from_env})
    value = current(config, path)
    if path == "env.reward_weights":
        value = value.win
    assert value == meant


@pytest.mark.parametrize(
    "name", ["store_url", "run_dir", "redis_url", "ray_address", "planner_url"]
)
def test_a_flag_beats_the_environment_for_every_deployment_setting(name: str, monkeypatch):
    monkeypatch.setenv(f"KOHOLINT_TRAINER_{name.upper()}", "from-env")
    assert getattr(Settings(), name) == "from-env"
    _, deployment = parse_flags("--" + name.replace("_", "-"), "from-flag")
    assert getattr(Settings(**deployment).deployment(), name) == "from-flag"


def test_run_and_service_settings_never_share_a_variable():
    # Both read KOHOLINT_TRAINER_*: a run field named like a service setting would read the
    # operator's value as a run's (or a request could set it).
    assert not set(TrainConfig.model_fields) & set(Settings.model_fields)


def test_ray_address_is_also_read_from_rays_own_variable(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    assert Settings().ray_address == "ray://head:10001"


def test_the_seeds_names_are_aliases_and_the_prefixed_name_wins():
    environ = {
        "RAY_WORKERS": "3",
        "ENVS_PER_WORKER": "5",
        "EPISODE_LENGTH": "512",
        "BATCH_SIZE": "2048",
    }
    config = TrainConfig.load({}, environ)
    assert (config.num_env_runners, config.envs_per_env_runner) == (3, 5)
    assert (config.env.max_episode_steps, config.train_batch_size) == (512, 2048)
    both = TrainConfig.load({}, {"RAY_WORKERS": "3", "KOHOLINT_TRAINER_NUM_ENV_RUNNERS": "1"})
    assert both.num_env_runners == 1
    flags, _ = parse_flags("--workers", "0")
    assert TrainConfig.load(flags, environ).num_env_runners == 0


def test_bare_names_of_other_settings_are_not_read_any_more():
    config = TrainConfig.load({}, {"TOTAL_STEPS": "100", "FRAME_SKIP": "2", "PLANNER": "rules"})
    assert (config.total_env_steps, config.env.frame_skip, config.planner) == (20_000, 4, "off")


def test_env_settings_merge_key_by_key_across_layers():
    config = TrainConfig.load({"env": {"frame_skip": 2}}, {"EPISODE_LENGTH": "300"})
    assert (config.env.frame_skip, config.env.max_episode_steps) == (2, 300)
    assert config.env.sticky_action_probability == 0.25  # the trainer's env default
    body = {"env": {"frame_skip": 2}}  # a body that sets one env field keeps the others'
    from_environment = {"KOHOLINT_TRAINER_ENV__MAX_EPISODE_STEPS": "300"}
    validated = TrainConfig.model_validate(body).model_dump(exclude_unset=True)
    config = TrainConfig.load(validated, from_environment)
    assert (config.env.frame_skip, config.env.max_episode_steps) == (2, 300)
    assert config.env.sticky_action_probability == 0.25


@pytest.mark.parametrize("phase", ["both", "robustify"])
def test_phase_two_starts_from_its_recipe_under_every_layer(phase: str):
    trajectory = {"curriculum": {"trajectory": "win.actions"}} if phase == "robustify" else {}
    config = TrainConfig.load({"phase": phase, **trajectory}, {})
    assert (config.planner, config.gamma, config.sil.weight) == ("rules", 0.999, 0.1)
    assert (config.imitation.clone_epochs, config.curriculum.passes) == (400, 3)
    assert (config.imitation.teachers, config.imitation.corrections) == (["fights", "walks"], 1)
    assert (config.imitation.labellers, config.imitation.correct_every_env_steps) == (["walks"], 0)
    assert (config.env.reward_weights.new_room, config.env.reward_weights.kill) == (0.0, 0.25)
    assert config.env.sticky_action_probability == 0.25  # the trainer's env default stays
    assert (config.evaluation.every_env_steps, config.total_env_steps) == (250_000, 5_000_000)
    environment = {"KOHOLINT_TRAINER_GAMMA": "0.99", "KOHOLINT_TRAINER_PHASE": phase}
    mine = TrainConfig.load({"curriculum": {"passes": 1, **trajectory.get("curriculum", {})}},
                            environment)  # fmt: skip
    assert (mine.gamma, mine.curriculum.passes, mine.curriculum.threshold) == (0.99, 1, 0.1)
    assert TrainConfig.load({"phase": "train"}, environment | {"KOHOLINT_TRAINER_PHASE": "train"}
                            ).planner == "off"  # fmt: skip


def test_the_training_envs_skip_the_structured_state():
    from trainer.config import Deployment
    from trainer.ppo.envs import rllib_env_config

    settings = rllib_env_config(TrainConfig.load({}, {}), Deployment(), "archive")
    assert settings["config"].info_state is False
    assert settings["config"].sticky_action_probability == 0.25


@pytest.mark.parametrize(
    ("argv", "path", "value"),
    [
        (["--swarm-share", "0.5"], "curriculum.swarm_share", 0.5),
        (["--curriculum-swarm-share", "0.5"], "curriculum.swarm_share", 0.5),
        (["--shaping-scale", "0.3"], "reward.shaping_scale", 0.3),
        (["--reward-model", "latest"], "reward.model", "latest"),
        (["--sil-weight", "0.1"], "sil.weight", 0.1),
        (["--reward-hand-potential", "progress"], "reward.hand_potential", "progress"),
        (["--curriculum-threshold", "0.1"], "curriculum.threshold", 0.1),
        (["--episode-length", "300"], "env.max_episode_steps", 300),
        (["--env-start-state", "null"], "env.start_state", None),
        (["--batch", "2048"], "train_batch_size", 2048),
        (["--hidden-sizes", "32", "16"], "hidden_sizes", [32, 16]),
    ],
)
def test_documented_flags_keep_working(argv: list[str], path: str, value: Any):
    flags, _ = parse_flags(*argv)
    assert current(TrainConfig.load(flags, {}), path) == value


@pytest.mark.parametrize(
    ("overrides", "environ", "field", "message"),
    [
        ({"total_env_steps": "lots"}, {}, "total_env_steps", "total_env_steps \\(flag\\): expected a JSON number"),
        ({}, {"KOHOLINT_TRAINER_TOTAL_ENV_STEPS": "lots"}, "total_env_steps", "KOHOLINT_TRAINER_TOTAL_ENV_STEPS"),
        ({}, {"BATCH_SIZE": "lots"}, "train_batch_size", "train_batch_size \\(BATCH_SIZE\\)"),
        ({"learning_rat": 0.1}, {}, "learning_rat", "Extra inputs"),
        ({"store_url": "/tmp/x"}, {}, "store_url", "deployment setting"),
        ({}, {"KOHOLINT_TRAINER_ENVS_PER_ENV_RUNNER": "0"}, "envs_per_env_runner", "greater than or equal to 1"),
        ({"num_env_runners": -1}, {}, "num_env_runners", "greater than or equal to 0"),
        ({"train_batch_size": 64, "minibatch_size": 128}, {}, "train_batch_size", "smaller than minibatch_size"),
        ({"env": {"reward_mode": "dense"}}, {}, "env.reward_mode", "'sparse', 'progress' or 'progress\\+coverage'"),
        ({"env": {"frame_skip": 0}}, {}, "env.frame_skip", "greater than or equal to 1"),
        ({}, {"KOHOLINT_TRAINER_ENV__FRAME_SKIP": "x"}, "env.frame_skip", "KOHOLINT_TRAINER_ENV__FRAME_SKIP"),
        ({"env": {"rom": "/etc/passwd"}}, {}, "env.rom", "the world is the run's own setting: rom"),
        ({"env": {"start_state": "anywhere"}}, {}, "env.start_state", "named state"),
        ({"env": {"bogus": 1}}, {}, "env.bogus", "Extra inputs"),
        ({"reward": {"hand_potential": "progress", "model": "latest"}}, {}, "reward.hand_potential", "two potentials"),
        ({"reward": {"hand_potential": "judges"}}, {}, "reward.hand_potential", "'progress'"),
        ({"curriculum": {"threshold": 2}}, {}, "curriculum.threshold", "less than or equal to 1"),
        ({"imitation": {"teachers": ["fights"]}}, {}, "imitation.teachers", "needs imitation.clone_epochs"),
        ({"imitation": {"teachers": ["boxer"], "clone_epochs": 1}}, {}, "imitation.teachers", "choose from fights, walks"),
        ({"imitation": {"teachers": ["walks", "walks"], "clone_epochs": 1}}, {}, "imitation.teachers", "name each teacher once"),
        ({"imitation": {"teacher_episodes": 65}}, {}, "imitation.teacher_episodes", "less than or equal to 64"),
        ({"imitation": {"corrections": 1}}, {}, "imitation.corrections", "needs imitation.clone_epochs"),
        ({"imitation": {"corrections": 1, "clone_epochs": 1, "teachers": ["fights"]}}, {}, "imitation.corrections", "needs imitation.labellers"),
        ({"imitation": {"corrections": 1, "clone_epochs": 1, "teachers": ["fights"], "labellers": ["walks"]}}, {}, "imitation.labellers", "are not in imitation.teachers"),
        ({"imitation": {"labellers": ["boxer"]}}, {}, "imitation.labellers", "choose from fights, walks"),
        ({"imitation": {"correct_every_env_steps": 1000, "clone_epochs": 1}}, {}, "imitation.correct_every_env_steps", "needs imitation.labellers"),
        ({"imitation": {"correct_every_env_steps": 1000, "labellers": ["walks"]}}, {}, "imitation.correct_every_env_steps", "needs imitation.clone_epochs"),
        ({"imitation": {"clone_epochs": 1, "teachers": ["walks"], "labellers": ["walks"], "route_episodes": 4}}, {}, "imitation.route_episodes", "set imitation.correct_every_env_steps"),
        ({"imitation": {"clone_epochs": 1, "teachers": ["fights"], "labellers": ["fights"], "correct_every_env_steps": 1000, "route_episodes": 4}}, {}, "imitation.route_episodes", "list walks in imitation.labellers"),
        ({"imitation": {"route_episodes": 257}}, {}, "imitation.route_episodes", "less than or equal to 256"),
        ({"imitation": {"corrections": 9, "clone_epochs": 1}}, {}, "imitation.corrections", "less than or equal to 8"),
        ({}, {"KOHOLINT_TRAINER_SIL__CAPACITY": "0"}, "sil.capacity", "KOHOLINT_TRAINER_SIL__CAPACITY"),
        ({"planner": "gpt"}, {}, "planner", "'off', 'rules', 'local', 'llm-d' or 'http'"),
        ({"run": "a+b"}, {}, "run", "String should match pattern"),
        ({"resume_from": "../x"}, {}, "resume_from", "String should match pattern"),
        ({"num_epochs": True}, {}, "num_epochs", "expected a JSON number, got bool"),
        ({"sil": {"weight": False}}, {}, "sil.weight", "expected a JSON number, got bool"),
        ({"sil_weight": 0.1}, {}, "sil_weight", "Extra inputs"),
        ({"evaluation": {"stop_at_win_rate": 0.9}}, {}, "evaluation.stop_at_win_rate", "needs evaluation.every_env_steps"),
        ({"evaluation": {"every_env_steps": 1000}}, {}, "evaluation.start", "the title screen is the planner's"),
        ({"evaluation": {"start": "demo:x.actions@3"}}, {}, "evaluation.start", "choose power-on"),
        ({"evaluation": {"start": "nowhere"}}, {}, "evaluation.start", "choose power-on"),
        ({"evaluation": {"confirm_start": "nowhere"}}, {}, "evaluation.confirm_start", "choose a named state"),
        ({}, {"KOHOLINT_TRAINER_EVALUATION__EPISODES": "0"}, "evaluation.episodes", "KOHOLINT_TRAINER_EVALUATION__EPISODES"),
        ({"evaluation": {"sticky": 1}}, {}, "evaluation.sticky", "less than 1"),
    ],
)  # fmt: skip
def test_impossible_values_are_refused_naming_the_field(overrides, environ, field, message):
    with pytest.raises(TrainConfigError, match=message) as caught:
        TrainConfig.load(overrides, environ)
    assert caught.value.field == field
    assert "not supported between" not in str(caught.value)


def test_flags_are_generated_with_help_from_the_docstrings(capsys):
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for flag in ("--steps", "--workers", "--envs", "--resume", "--run", "--seed", "--store", "--run-dir",
                 "--env-frame-skip", "--entropy-coeff", "--ray-address"):  # fmt: skip
        assert flag in shown
    assert "stop after this many environment steps" in shown
    assert "KOHOLINT_TRAINER_TOTAL_ENV_STEPS" in shown


def deployment(tmp_path: Path, **values: str) -> Settings:
    return Settings(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"), **values)


def test_an_unknown_checkpoint_is_refused_in_preflight(tmp_path: Path):
    import ray

    run = TrainingRun(
        TrainConfig.load({"resume_from": "nope-step000000000512"}, {}), deployment(tmp_path)
    )
    assert run.config.run == "nope"  # the run that owns the checkpoint
    started = time.perf_counter()
    with pytest.raises(TrainConfigError, match="no checkpoint 'nope-step000000000512' in run nope"):
        run.preflight()
    assert time.perf_counter() - started < 5
    assert not ray.is_initialized()


def test_unreachable_ray_address_is_refused_before_work(tmp_path: Path):
    run = TrainingRun(TrainConfig.load({}, {}), deployment(tmp_path, ray_address="127.0.0.1:1"))
    with pytest.raises(TrainConfigError, match="RAY_ADDRESS='127.0.0.1:1' is unreachable"):
        run.preflight()


def test_an_address_that_is_not_ray_is_refused_within_a_timeout(tmp_path: Path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"127.0.0.1:{server.server_address[1]}"
    try:
        run = TrainingRun(TrainConfig.load({}, {}), deployment(tmp_path, ray_address=address))
        started = time.perf_counter()
        with pytest.raises(TrainConfigError, match="does not speak Ray's protocol"):
            run.preflight()
        assert time.perf_counter() - started < 15
    finally:
        server.shutdown()


def test_a_store_that_refuses_writes_is_refused_before_work(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    run = TrainingRun(TrainConfig.load({}, {}), Settings(store_url=str(blocker)))
    with pytest.raises(TrainConfigError, match="KOHOLINT_TRAINER_STORE_URL") as caught:
        run.preflight()
    assert caught.value.field == "store_url"


def test_a_planner_over_http_needs_its_url(tmp_path: Path):
    run = TrainingRun(TrainConfig.load({"planner": "http"}, {}), deployment(tmp_path))
    with pytest.raises(TrainConfigError, match="planner=http needs planner_url"):
        run.preflight()


def test_default_run_names_are_unique_within_a_second():
    names = {TrainingRun(TrainConfig.load({}, {})).config.run for _ in range(50)}
    assert len(names) == 50


def test_planner_settings_reach_the_training_env():
    from trainer.ppo.envs import planner_backend

    assert TrainConfig.load({}, {"KOHOLINT_TRAINER_PLANNER": "rules"}).planner == "rules"
    assert planner_backend("rules", "").name == "rules"
    assert planner_backend("http", "http://planner:8000").name == "planner-http"


def test_the_env_objects_schema_comes_from_the_env():
    document = TrainConfig.model_json_schema()
    reference = document["properties"]["env"]["$ref"].rsplit("/", 1)[-1]
    schema = document["$defs"][reference]
    assert schema["additionalProperties"] is False
    assert "rom" not in schema["properties"]
    assert schema["properties"]["frame_skip"]["description"] == "emulator frames per step"
    assert schema["properties"]["frame_skip"]["maximum"] == 60
    assert schema["properties"]["start_state"]["anyOf"][0]["enum"] == list(STATE_NAMES)
    assert set(REWARD_MODES) >= {"sparse"}
    json.dumps(schema)
