"""bench_trainer.py's like-for-like rows: PufferLib gets infos at episode ends only, each row is
read against the ceiling of the cores it samples on, the 8,192 batch is a config the trainer
and PuffeRL accept, and --out records the run with a manifest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from koholint.env.zelda import ZeldaEnv

# The scripts import each other by file name (importlib mode puts no such folder on sys.path).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_puffer
import bench_trainer
from bench_trainer import CEILING, CEILING_ONE_CORE, LARGE_BATCH, PLAIN, Row

REPO = Path(__file__).resolve().parents[2]
MANIFEST_KEYS = {"command", "commit", "date", "machine", "seeds", "steps", "rounds"}


def run_episode(env: bench_puffer.EpisodeEndInfo, steps: int) -> tuple[dict, list, list]:
    """Reset's info, then every step's (reward, info) until the episode ends."""
    _, reset_info = env.reset(seed=0)
    rewards, infos = [], []
    for step in range(steps):
        _, reward, terminated, truncated, info = env.step(step % 9)
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            break
    return reset_info, rewards, infos


def test_puffer_env_hands_over_an_info_only_at_the_episode_end() -> None:
    env = bench_puffer.EpisodeEndInfo(ZeldaEnv({"max_episode_steps": 6, "info_state": False}))
    for _ in range(2):  # a second episode starts its sums afresh
        reset_info, rewards, infos = run_episode(env, 10)
        assert reset_info == {}
        assert len(infos) == 6
        assert infos[:-1] == [{}] * 5, "nothing mid-episode for PufferLib to collect or pipe"
        summary = infos[-1]
        assert summary["episode_length"] == 6
        assert summary["episode_return"] == pytest.approx(sum(rewards))
        assert summary["rooms"] >= 1
        assert summary["cells"] >= 1
        assert {"sword", "instrument"} <= summary["milestones"].keys()
    env.close()


def test_puffer_env_is_the_benchmark_env_and_refuses_an_unknown_info_mode() -> None:
    env = bench_puffer.make_puffer_env()
    assert isinstance(env, bench_puffer.EpisodeEndInfo)
    assert env.unwrapped.config.max_episode_steps == bench_trainer.ENV["max_episode_steps"]
    env.close()
    raw = bench_puffer.make_puffer_env("every-step")
    assert isinstance(raw, ZeldaEnv)
    raw.close()
    with pytest.raises(ValueError, match="episode-end"):
        bench_puffer.make_puffer_env("sometimes")


@pytest.mark.parametrize(
    ("name", "ceiling"),
    [
        (bench_trainer.PUFFER_SERIAL, CEILING_ONE_CORE),
        (bench_trainer.PLAIN_1X8, CEILING_ONE_CORE),
        (bench_trainer.SB3_8, CEILING_ONE_CORE),
        (bench_trainer.PUFFER_SERIAL + bench_trainer.LARGE, CEILING_ONE_CORE),
        (bench_trainer.PUFFER_WORKERS, CEILING),
        (bench_trainer.PLAIN_2X4, CEILING),
        ("Stable-Baselines3 PPO, 8 envs (SubprocVecEnv)", CEILING),
        (bench_trainer.PLAIN_2X4 + bench_trainer.LARGE, CEILING),
    ],
)
def test_each_row_is_read_against_the_ceiling_of_its_cores(name: str, ceiling: str) -> None:
    runs = bench_trainer.measured_rows(16384, 2, connectors=False, nodes=False, scale=False)
    assert runs[name].ceiling == ceiling


def test_every_like_for_like_pair_is_a_row_and_samples_on_the_same_cores() -> None:
    runs = bench_trainer.measured_rows(16384, 2, connectors=False, nodes=False, scale=False)
    for _, trainer_row, puffer_row in bench_trainer.LIKE_FOR_LIKE:
        assert runs[puffer_row].is_pufferlib
        assert not runs[trainer_row].is_pufferlib
        assert runs[trainer_row].all_cores == runs[puffer_row].all_cores
        assert runs[trainer_row].batch == runs[puffer_row].batch


def test_the_table_divides_each_row_by_its_own_ceiling(capsys: pytest.CaptureFixture[str]) -> None:
    runs = {CEILING_ONE_CORE: Row(float), CEILING: Row(float, all_cores=True),
            "one process": Row(float), "two processes": Row(float, all_cores=True)}  # fmt: skip
    rates = {CEILING_ONE_CORE: [2000.0], CEILING: [4000.0], "one process": [1000.0],
             "two processes": [1000.0]}  # fmt: skip
    bench_trainer.print_table(16384, 1, 2, runs, rates)
    rows = {cells[0]: cells[1:] for cells in table_cells(capsys.readouterr().out)}
    # sampling cores, env steps/s, vs SB3, vs PufferLib, vs the all-cores ceiling, vs its own
    assert rows["one process"] == ["1", "1,000", "", "", "0.25", "0.50"]
    assert rows["two processes"] == ["2", "1,000", "", "", "0.25", "0.25"]
    assert rows[CEILING_ONE_CORE][-1] == rows[CEILING][-1] == "1.00"


def test_pufferlib_best_backend_is_taken_at_the_same_batch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    runs = {CEILING_ONE_CORE: Row(float), CEILING: Row(float, all_cores=True),
            "PufferLib at 1,024": Row(float, is_pufferlib=True),
            "PufferLib at 8,192": Row(float, is_pufferlib=True, batch=LARGE_BATCH),
            "trainer": Row(float, against_pufferlib=True)}  # fmt: skip
    rates = {CEILING_ONE_CORE: [4000.0], CEILING: [8000.0], "PufferLib at 1,024": [2000.0],
             "PufferLib at 8,192": [4000.0], "trainer": [3000.0]}  # fmt: skip
    bench_trainer.print_table(16384, 1, 2, runs, rates)
    rows = {cells[0]: cells[1:] for cells in table_cells(capsys.readouterr().out)}
    assert rows["trainer"][3] == "1.50 [1.50]"


def table_cells(output: str) -> list[list[str]]:
    lines = [line for line in output.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines[1:]]


def test_like_for_like_prints_the_trainer_over_pufferlib(
    capsys: pytest.CaptureFixture[str],
) -> None:
    trainer, puffer = bench_trainer.PLAIN_1X8, bench_trainer.PUFFER_SERIAL
    runs = {trainer: Row(float), puffer: Row(float, is_pufferlib=True)}
    bench_trainer.print_like_for_like(runs, {trainer: [3000.0, 3300.0], puffer: [3000.0, 3000.0]})
    assert capsys.readouterr().out == (
        f"like for like (one sampling process, batches of 1,024): 1.10 [1.00, 1.10] = "
        f"{trainer} / {puffer}\n"
    )


def test_the_large_batch_is_a_config_the_trainer_and_puffer_accept() -> None:
    from trainer.ppo.config import TrainConfig

    for runners in (1, 2):
        overrides = {"total_env_steps": 16384, **bench_trainer.shape(8, runners, LARGE_BATCH)}
        config = TrainConfig.load({**overrides, **PLAIN}, environ={})
        assert (config.train_batch_size, config.minibatch_size) == (8192, 2048)
        assert config.fragment_length() * 8 == LARGE_BATCH
        assert config.num_epochs == bench_trainer.SHAPE["num_epochs"]
    puffer = bench_puffer.train_config(16384, 8, "unused", LARGE_BATCH)
    assert (puffer["batch_size"], puffer["bptt_horizon"]) == (8192, 1024)
    assert puffer["minibatch_size"] % puffer["bptt_horizon"] == 0, "PuffeRL's rule"
    assert bench_puffer.train_config(16384, 8, "unused")["minibatch_size"] == 256


def test_out_records_the_output_and_a_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "records"
    argv = ["benchmarks/bench_trainer.py", "--steps", "2048", "--out", str(folder)]
    assert bench_trainer.parse_arguments(argv[1:]).out == folder
    with bench_trainer.recording(folder, argv, 2048, 1):
        print("round 1: a row: 1,234", flush=True)
    assert capsys.readouterr().out == "round 1: a row: 1,234\n", "still printed"
    assert (folder / "output.txt").read_text() == "round 1: a row: 1,234\n"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest.keys() >= MANIFEST_KEYS
    assert manifest["machine"].keys() >= {"cores", "cpu_model"}
    assert manifest["machine"]["cores"] >= 1
    assert len(manifest["commit"]) == 40
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    assert set(manifest["uncommitted_changes"]) <= set(tracked.stdout.split())
    assert (manifest["steps"], manifest["rounds"]) == (2048, 1)
    assert manifest["command"][-1].endswith("bench_trainer.py --steps 2048 --out " + str(folder))
