"""`koholint play --policy checkpoint:PATH` on the real cartridge: the policy file, win
counting on a known case, the export, and every refusal.

The known case: phase 1's seed-1 win (committed under benchmarks/results/win/) ends with 16
UP actions (steps 1005-1020) that walk onto the instrument. A policy file whose logits always
pick UP, started at demo step 1005 with sticky actions off, therefore wins every episode in
16 steps; one that always picks NOOP wins none. The real trainer checkpoint is played in
tests/services/trainer/test_play.py.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from koholint.baselines.trained import (
    PlaySettings,
    PolicyFileError,
    load_policy,
    parse_start,
    play_env,
    play_policy,
    policy_rng,
    wilson_interval,
    write_policy,
)
from koholint.cli import main
from koholint.env.encoding import MEMORY_SIZE, OBSERVATION_SIZE, encoder_version
from koholint.env.zelda import Action

REPO = Path(__file__).resolve().parents[4]
WIN = REPO / "benchmarks/results/win/explore-seed1.actions"
NEAR_THE_END = f"demo:{WIN}@1005"
TRAINED_ENV = {"sticky_action_probability": 0.25, "max_episode_steps": 1024, "frame_skip": 4}


def constant_policy(folder: Path, action: Action, env: dict | None = None, inputs: int = OBSERVATION_SIZE,
                    **changes: object) -> Path:  # fmt: skip
    """A real policy file (two layers, as the trainer's) whose logits always favour `action`."""
    hidden = np.zeros((8, inputs), np.float32), np.zeros(8, np.float32)
    bias = np.full(len(Action), -20.0, np.float32)
    bias[action] = 20.0
    head = np.zeros((len(Action), 8), np.float32), bias
    write_policy(folder, [hidden, head], env=env or TRAINED_ENV, planner="rules",
                 source={"run": "test"})  # fmt: skip
    if changes:
        document = json.loads((folder / "policy.json").read_text())
        document.update(changes)
        (folder / "policy.json").write_text(json.dumps(document))
    return folder


def play(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["play", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def episode_rows(out: str) -> list[list[str]]:
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.split()[:2] == ["seed", "won"]) + 1
    return [line.split() for line in lines[first:] if line.split() and line.split()[0].isdigit()]


def test_a_policy_that_walks_up_wins_every_episode_from_the_end_of_a_win(tmp_path, capsys):
    up = constant_policy(tmp_path / "up", Action.UP)
    code, out, _ = play(capsys, "--policy", f"checkpoint:{up}", "--start", NEAR_THE_END,
                        "--episodes", "3", "--seed", "7", "--sticky", "0", "--max-steps", "40")  # fmt: skip
    assert code == 0
    rows = episode_rows(out)
    assert [row[:3] for row in rows] == [["7", "yes", "16"], ["8", "yes", "16"], ["9", "yes", "16"]]
    assert "win rate 1.00 (3/3 episodes won), 95% interval 0.44-1.00 (Wilson)" in out
    assert (
        "start demo-explore-seed1@1005  sticky 0.0  planner rules  frame skip 4  episodes of 40 steps"
        in out
    )


def test_a_policy_trained_on_the_memory_observation_plays_on_it(tmp_path, capsys):
    memory_env = {**TRAINED_ENV, "observation": "memory"}
    up = constant_policy(tmp_path / "up", Action.UP, memory_env, OBSERVATION_SIZE + MEMORY_SIZE)
    document = json.loads((up / "policy.json").read_text())
    assert (document["observation_size"], document["encoder_version"]) == (
        OBSERVATION_SIZE + MEMORY_SIZE, encoder_version("memory"),
    )  # fmt: skip
    code, out, _ = play(capsys, "--policy", f"checkpoint:{up}", "--start", NEAR_THE_END,
                        "--episodes", "2", "--sticky", "0", "--max-steps", "40")  # fmt: skip
    assert code == 0  # the env played it gave 144 floats: a 128-float one fails the first layer
    assert [row[1:3] for row in episode_rows(out)] == [["yes", "16"], ["yes", "16"]]
    with pytest.raises(PolicyFileError, match=r"expected \(out, 144\)"):
        constant_policy(tmp_path / "narrow", Action.UP, memory_env)
    document["env"]["observation"] = "observation"  # its layers read 144 floats, the env 128
    (up / "policy.json").write_text(json.dumps(document))
    with pytest.raises(PolicyFileError, match="trained on another env config"):
        load_policy(up)
    document["env"]["observation"] = "pixels"
    (up / "policy.json").write_text(json.dumps(document))
    with pytest.raises(
        PolicyFileError, match="observation='pixels': use one of observation, memory"
    ):
        load_policy(up)


def test_a_policy_that_stands_still_wins_none(tmp_path, capsys):
    noop = constant_policy(tmp_path / "noop", Action.NOOP)
    code, out, _ = play(capsys, "--policy", f"checkpoint:{noop}", "--start", NEAR_THE_END,
                        "--episodes", "2", "--sticky", "0", "--max-steps", "40")  # fmt: skip
    assert code == 0
    assert [row[1:3] for row in episode_rows(out)] == [["no", "40"], ["no", "40"]]
    assert "win rate 0.00 (0/2 episodes won)" in out


def test_episodes_play_with_the_settings_the_policy_trained_with(tmp_path):
    up = load_policy(constant_policy(tmp_path / "up", Action.UP))
    report = play_policy(up, PlaySettings(start="start_of_play", episodes=2))
    assert (report.sticky, report.planner, report.max_steps, report.frame_skip) == (
        0.25,
        "rules",
        1024,
        4,
    )
    assert len(report.episodes) == 2
    assert report.wins == 0
    # truncated at the trained length (a planner takeover counts as a step of it, too)
    assert all(0 < episode.steps <= 1024 for episode in report.episodes)


def test_export_writes_a_gif_per_episode_and_the_results(tmp_path, capsys):
    up = constant_policy(tmp_path / "up", Action.UP)
    export = tmp_path / "export"
    code, out, _ = play(capsys, "--policy", f"checkpoint:{up}", "--start", NEAR_THE_END,
                        "--episodes", "2", "--sticky", "0", "--export", str(export))  # fmt: skip
    assert code == 0
    gifs = sorted(path.name for path in export.glob("*.gif"))
    assert gifs == [
        "demo-explore-seed1-1005-seed0-won.gif",
        "demo-explore-seed1-1005-seed1-won.gif",
    ]
    with Image.open(export / gifs[0]) as image:
        assert image.n_frames == 1 + 16 // 3 + 1  # the start, every third step, the last
        assert image.size == (160, 144)
    summary = json.loads((export / "play.json").read_text())
    assert (summary["count"], summary["wins"], summary["start"]) == (
        2,
        2,
        "demo-explore-seed1@1005",
    )


def test_the_wilson_interval_matches_the_textbook():
    assert wilson_interval(17, 20) == pytest.approx((0.6396, 0.9476), abs=1e-4)
    assert wilson_interval(0, 20) == pytest.approx((0.0, 0.1611), abs=1e-4)
    assert wilson_interval(20, 20)[1] == 1.0


def test_a_missing_path_is_refused_naming_what_to_give(tmp_path, capsys):
    code, _, err = play(capsys, "--policy", f"checkpoint:{tmp_path / 'nowhere'}")
    assert code == 2
    assert "no such file or folder" in err
    assert "trainer checkpoint folder" in err


def test_a_folder_that_is_no_checkpoint_is_refused(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    code, _, err = play(capsys, "--policy", f"checkpoint:{tmp_path}")
    assert code == 2
    assert "is not a checkpoint" in err
    code, _, err = play(capsys, "--policy", f"checkpoint:{tmp_path / 'notes.txt'}")
    assert code == 2
    assert "is not a policy file" in err


def test_a_checkpoint_without_a_policy_file_names_the_export_command(tmp_path, capsys):
    (tmp_path / "rllib_checkpoint.json").write_text("{}")
    code, _, err = play(capsys, "--policy", f"checkpoint:{tmp_path}")
    assert code == 2
    assert f"koholint export-policy {tmp_path} OUT" in err


@pytest.mark.parametrize(
    "changes",
    [{"env_id": "koholint/Zelda-v0"}, {"encoder_version": "obs128-000000000000"}, {"actions": 12}],
)
def test_a_policy_from_another_env_config_is_refused(tmp_path, capsys, changes):
    other = constant_policy(tmp_path / "other", Action.UP, **changes)
    code, _, err = play(capsys, "--policy", f"checkpoint:{other}")
    assert code == 2
    assert "trained on another env config" in err
    assert "retrain it on this env" in err


def test_damaged_weights_are_refused(tmp_path):
    folder = constant_policy(tmp_path / "up", Action.UP)
    (folder / "policy.npz").write_bytes((folder / "policy.npz").read_bytes()[:-10] + b"0" * 10)
    with pytest.raises(PolicyFileError, match="sha256"):
        load_policy(folder)


def test_a_policy_trained_with_a_planner_service_asks_for_an_in_process_one(tmp_path, capsys):
    remote = constant_policy(tmp_path / "remote", Action.UP, planner="http")
    code, _, err = play(capsys, "--policy", f"checkpoint:{remote}")
    assert code == 2
    assert "--planner rules" in err


@pytest.mark.parametrize("episodes", ["0", "101"])
def test_episodes_out_of_range_are_refused(tmp_path, capsys, episodes):
    up = constant_policy(tmp_path / "up", Action.UP)
    code, _, err = play(capsys, "--policy", f"checkpoint:{up}", "--episodes", episodes)
    assert code == 2
    assert "--episodes: Input should be" in err
    assert ("greater than or equal to 1" if episodes == "0" else "less than or equal to 100") in err


@pytest.mark.parametrize(
    ("start", "message"),
    [
        (f"demo:{WIN}@5000", "choose a step of 0..1021"),
        (f"demo:{WIN}", "write demo:<trajectory.actions>@<step>"),
        ("demo:missing.actions@3", "no such file"),
        ("castle", "choose power-on, demo:"),
    ],
)
def test_bad_starts_are_refused(tmp_path, capsys, start, message):
    up = constant_policy(tmp_path / "up", Action.UP)
    code, _, err = play(capsys, "--policy", f"checkpoint:{up}", "--start", start)
    assert code == 2
    assert message in err


def test_bad_flags_are_refused(tmp_path, capsys):
    up = constant_policy(tmp_path / "up", Action.UP)
    code, _, err = play(capsys, "--policy", f"checkpoint:{up}", "--sticky", "1.5")
    assert code == 2
    assert "--sticky: Value error, 1.5: a probability, 0 <= p < 1" in err
    code, _, err = play(capsys, "--policy", f"checkpoint:{up}", "--workers", "0")
    assert code == 2
    assert "--workers: Value error, 0: use 1..64 processes" in err
    code, _, err = play(capsys, "--policy", f"checkpoint:{up}", "--policy", "random")
    assert code == 2
    assert "on its own" in err
    code, _, err = play(capsys, "--policy", "random", "--sticky", "0.1")
    assert code == 2
    assert "apply to --policy checkpoint:PATH only" in err


def test_actions_are_sampled_from_the_softmax_or_taken_greedily(tmp_path):
    bias = np.log(np.array([0.5, 0.3, 0.2, 0, 0, 0, 0, 0, 0]) + 1e-12).astype(np.float32)
    head = np.zeros((len(Action), OBSERVATION_SIZE), np.float32), bias
    write_policy(tmp_path, [head], env=TRAINED_ENV, planner="off")
    policy = load_policy(tmp_path)
    rng = np.random.default_rng(0)
    observation = np.zeros(OBSERVATION_SIZE, np.float32)
    counts = np.bincount([policy.act(observation, rng) for _ in range(20_000)], minlength=9)
    np.testing.assert_allclose(counts[:3] / 20_000, [0.5, 0.3, 0.2], atol=0.015)
    assert counts[3:].sum() == 0
    assert policy.act(observation, rng, greedy=True) == 0


def test_worker_processes_play_the_same_episodes_in_seed_order(tmp_path):
    up = load_policy(constant_policy(tmp_path / "up", Action.UP))
    settings = PlaySettings(start=NEAR_THE_END, episodes=6, sticky=0.5, max_steps=40)
    alone = play_policy(up, settings).episodes
    together = play_policy(up, replace(settings, workers=2)).episodes
    assert [replace(e, seconds=0) for e in together] == [replace(e, seconds=0) for e in alone]
    assert len({e.steps for e in alone}) > 1  # sticky actions made the seeds differ


def test_the_policy_samples_from_its_own_stream_not_the_sticky_actions(tmp_path):
    """A shared seed once made the policy's draw equal the env's sticky draw at every step: an
    action not repeated always came from a draw >= p, so the lowest p of the policy's
    distribution was never played (a trained policy won 0/20 that wins about half)."""
    policy = load_policy(constant_policy(tmp_path, Action.UP))
    settings = PlaySettings(start="start_of_play", episodes=1, sticky=0.25)
    env = play_env(policy, settings, parse_start("start_of_play"))
    try:
        for seed in range(5):
            env.reset(seed=seed)
            env_draws = env.unwrapped.np_random.random(64)
            assert not np.allclose(policy_rng(seed).random(64), env_draws)
    finally:
        env.close()


@pytest.mark.slow  # 5 episodes of ~600-900 steps on the real cartridge (~10 s)
def test_the_committed_policy_wins_the_game_from_start_of_play():
    """The robustified policy under benchmarks/results/win/policy-12m plays the whole game from
    start_of_play with sticky actions 0.25 (its training settings) and wins: seeds 0-4 won in
    its 100-episode evaluation, and episodes are deterministic per seed."""
    policy = load_policy(REPO / "benchmarks/results/win/policy-12m")
    result = play_policy(policy, PlaySettings(start="start_of_play", episodes=5))
    assert [episode.won for episode in result.episodes] == [True] * 5
    assert result.episodes[0].steps == 629  # the committed GIF's episode (seed 0)


def test_a_policy_played_on_another_world_says_so(tmp_path, capsys):
    from koholint.game.rom import bundled_cartridge, read_rom
    from koholint.game.worldgen import generate, write_world

    world, _ = write_world(generate(4, "small"), bundled_cartridge().read_bytes(), tmp_path / "w")
    trained_here = constant_policy(tmp_path / "here", Action.UP)
    document = json.loads((trained_here / "policy.json").read_text())
    document["source"]["world_sha256"] = read_rom(bundled_cartridge()).sha256
    (trained_here / "policy.json").write_text(json.dumps(document))
    arguments = ["--start", "power-on", "--episodes", "1", "--max-steps", "5"]
    code, out, _ = play(capsys, "--policy", f"checkpoint:{trained_here}", *arguments)
    assert code == 0
    assert "world KOHOLINT" in out
    assert "another world" not in out
    code, out, _ = play(capsys, "--policy", f"checkpoint:{trained_here}", "--rom", str(world.parent),
                        *arguments)  # fmt: skip
    assert code == 0
    assert f"world KOHOLINT {read_rom(world).sha256[:12]}" in out
    assert "the policy trained on another world" in out
